"""``tsukuctl eval discover``: discovery measured over a corpus of tools whose right
source is known (docs/eval.md).

Each item is one discovery as ``install`` runs it (the recipe registry aside: a recipe
is no source), without ``--yes``, its questions answered by a stand-in for a person who
knows the right source: a y/N on one source is accepted (so the source discovery
proposed is what is scored; the stand-in would have said yes only to the right one,
which is the "confirmations accepted" figure), and a numbered choice is declined (the
chain did not resolve the tool: ``ambiguous``; whether the right source was among the
choices is recorded). Nothing is created or installed.

The money rules are ``eval create``'s (:func:`.eval_run.agree`): the worst case (each
item's web-search reservation times the items) is agreed to first, and ``--max-usd``
caps the request's tally; the item a limit stops is recorded as not measured and the
run ends with what it measured. Each item is an ``eval.item`` (``kind: discover``) in
the run's session, its discovery's own events under its ``session``.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.errors import ConfirmationRequired, TsukuError
from tsukud.eval import corpus as corpora
from tsukud.eval.figures import DiscoverFigures, Outcome, discover_figures
from tsukud.events.catalogue import EvalRunStarted
from tsukud.flows.eval_run import (
    STOPPED,
    DiscoverOptions,
    agree,
    checked_options,
    completed,
    item_done,
    new_run,
    record_item,
    session_events,
    spent_usd,
)
from tsukud.policy import spent
from tsukud.progress import Progress

if TYPE_CHECKING:
    from tsukud.discover.service import DiscoveryService
    from tsukud.events.store import EventStore
    from tsukud.llm.service import LLM
    from tsukud.policy.confirm import Confirmations

WRONG_SOURCE = "wrong_source"
NOT_FOUND = "not_found"
AMBIGUOUS = "ambiguous"  # a numbered choice: discovery did not settle on one source
OUTAGE = "outage"  # a search engine, a model or a registry did not answer
#: Discovery's failures by error code; any other is ``outage`` when retryable, else
#: its own code.
CATEGORIES = {
    "discovery_not_found": NOT_FOUND,
    "discovery_unverified": NOT_FOUND,
    "discovery_ambiguous": AMBIGUOUS,
    "discovery_denied": AMBIGUOUS,  # the stand-in declined a numbered choice
    "discovery_confirmation_required": AMBIGUOUS,
    "discovery_budget": STOPPED,
    "budget_exceeded": STOPPED,
    "discovery_search_failed": OUTAGE,
    "discovery_llm_unavailable": OUTAGE,
    "discovery_timeout": OUTAGE,
}


@dataclass
class StandIn:
    """The person discovery would ask, who knows ``right``: says yes to a y/N (what
    was proposed is scored), declines a numbered choice (noting whether ``right`` was
    offered)."""

    right: str
    asked: str | None = None  # confirm | choice
    offered_right: bool = False

    async def ask(self, question: ConfirmationRequired) -> None:
        self.asked = self.asked or "confirm"

    async def choose(self, question: ConfirmationRequired, options: list[dict[str, Any]]) -> None:
        self.asked = "choice"
        self.offered_right = any(
            corpora.same_source(f"{o.get('kind')}:{o.get('source')}", self.right) for o in options
        )
        return None


def category_of(exc: TsukuError) -> str:
    code = CATEGORIES.get(exc.code)
    if code is not None:
        return code
    return OUTAGE if exc.retryable else exc.code


class DiscoverEvalReport(EvalRunStarted, kw_only=True):
    """``eval.discover``'s answer: the run as ``eval.started`` recorded it, why it
    ended, what it spent and its figures."""

    kind: str = "discover"
    reason: str
    spent_usd: float
    figures: DiscoverFigures
    # items an outage kept from being measured: {tool, category, detail}
    not_scored: list[dict[str, str]] = msgspec.field(default_factory=list)


class DiscoverEval:
    def __init__(
        self,
        *,
        discovery: Callable[[], DiscoveryService],
        llm: Callable[[], LLM],
        store: EventStore,
        confirmations: Confirmations | None,
    ) -> None:
        self._discovery = discovery
        self._llm = llm
        self.store = store
        self.confirmations = confirmations

    async def run(self, opts: DiscoverOptions, *, progress: Progress) -> DiscoverEvalReport:
        from tsukud.discover.llm_discovery import prompt_version

        checked_options(opts)
        corpus = corpora.load(opts.corpus, builtin=corpora.DISCOVER_FILE)
        discovery = self._discovery()
        providers = discovery.providers(opts.provider, only=opts.only_provider)
        one = discovery.worst_case(opts.provider, only=opts.only_provider)
        worst = None if one is None else one * len(corpus.items)
        run = new_run()
        await agree(
            self.confirmations,
            f"{len(corpus.items)} discoveries",
            opts,
            run=run,
            worst=worst,
            progress=progress,
        )
        started: dict[str, Any] = {  # the eval.started payload (events/catalogue.py)
            "run": run,
            "kind": "discover",
            "corpus": corpus.name,
            "corpus_hash": corpora.corpus_hash(corpus),
            "items": len(corpus.items),
            "provider": providers[0][0],
            "model": providers[0][1],
            "prompt_version": prompt_version(),
            "max_usd": opts.max_usd,
            "worst_case_usd": None if worst is None else float(worst),
        }
        await self.store.wait_durable(self.store.append_nowait("eval.started", started, run).id)
        # The SDKs are imported before the first item, so their import time (seconds) is
        # not the first item's latency.
        for name, _model in providers:
            await self._llm().ready(name)
        outcomes: list[Outcome] = []
        unscored: list[dict[str, str]] = []  # items an outage kept from being measured
        async with completed(self.store, run, outcomes) as end:
            end.reason = await self._items(
                discovery, corpus, opts, run, (outcomes, unscored), progress
            )
        return DiscoverEvalReport(
            **started,
            reason=end.reason,
            spent_usd=spent_usd(),
            figures=discover_figures(outcomes),
            not_scored=unscored,
        )

    async def _items(
        self,
        discovery: DiscoveryService,
        corpus: corpora.Corpus,
        opts: DiscoverOptions,
        run: str,
        results: tuple[list[Outcome], list[dict[str, str]]],
        progress: Progress,
    ) -> str:
        outcomes, unscored = results
        import secrets

        async def quiet(_frame: dict[str, Any]) -> None:
            return None

        for number, item in enumerate(corpus.items, 1):
            session = "discover-" + secrets.token_hex(6)
            before = spent.current()
            paid_before = before.usd if before is not None else Decimal(0)
            person = StandIn(item.source)
            clock = time.monotonic()
            found: str | None = None
            stage: str | None = None
            category: str | None = None
            detail = ""
            capped = unpriced = False
            try:
                result = await discovery.discover(
                    item.tool,
                    progress=quiet,
                    can_ask=True,
                    check_recipes=False,
                    search_provider=opts.search_provider,
                    providers=opts.provider,
                    only_provider=opts.only_provider,
                    session=session,
                    person=(person.ask, person.choose),
                )
                found, stage = f"{result.builder}:{result.source}", result.stage
                unpriced = result.spent_usd is None  # a turn on a model without a price
                if not corpora.same_source(found, item.source):
                    category, detail = WRONG_SOURCE, f"found {found} (want {item.source})"
            except TsukuError as exc:
                category, detail = category_of(exc), exc.message
                capped = "cap_usd" in exc.data  # --max-usd, not the day's budget or hour
            took = round((time.monotonic() - clock) * 1000)
            after = spent.current()
            cost = float((after.usd if after is not None else Decimal(0)) - paid_before)
            llm_ms, searches = await self.store.read(functools.partial(_llm_stage, session=session))
            if person.asked == "choice":
                stage = "llm" if llm_ms is not None else "ecosystem"
            accepted = (
                None
                if person.asked is None
                else person.offered_right
                if person.asked == "choice"
                else category is None
            )
            outcome = Outcome(
                tool=item.tool,
                ok=category is None,
                category=category,
                duration_ms=took,
                cost_usd=None if unpriced else cost,
                asked=person.asked,
                asked_stage=stage if person.asked else None,
                accepted=accepted,
                llm_ms=llm_ms,
            )
            # An outage (a search engine, a model or a registry that did not answer)
            # says nothing of discovery: recorded and named, never scored; the run goes on.
            measured = category not in (STOPPED, OUTAGE)
            await record_item(
                self.store,
                run,
                {
                    "kind": "discover",
                    "tool": item.tool,
                    "source": item.source,
                    "session": session,
                    "measured": measured,
                    "ok": outcome.ok,
                    "category": category,
                    "detail": detail[:300],
                    "duration_ms": took,
                    "run_cost_usd": cost,
                    "turns": 0,
                    "repairs": 0,
                    "found": found,
                    "stage": stage,
                    "asked": outcome.asked,
                    "asked_stage": outcome.asked_stage,
                    "accepted": accepted,
                    "llm_ms": llm_ms,
                    "searches": searches,
                },
            )
            said = "right" if outcome.ok else f"{category}"
            if category == OUTAGE:
                said = f"outage, not scored: {detail[:200]}"
                unscored.append({"tool": item.tool, "category": OUTAGE, "detail": detail[:300]})
            if found and not outcome.ok:
                said += f" ({found})"
            if person.asked:
                said += f"; a person would be asked ({person.asked} at {outcome.asked_stage})"
            used = f"${cost:.4f}, {took / 1000:.2f} s"
            said = f"[{number}/{len(corpus.items)}] {item.tool}: {said}; {used}"
            stop = await item_done(progress, said, category, capped)
            if stop is not None:
                return stop
            if measured:
                outcomes.append(outcome)
        return "finished"


def _llm_stage(conn: Any, session: str) -> tuple[int | None, int]:
    """The web-search stage's machine time (None: it did not run) and the searches it
    made, from the discovery's own events."""
    ms: int | None = None
    searches = 0
    for type_, data in session_events(conn, session, ["discovery.stage", "discovery.search"]):
        if type_ == "discovery.stage" and data.get("stage") == "llm" and "ms" in data:
            if data.get("outcome") != "skipped":
                ms = int(data["ms"])
        elif type_ == "discovery.search":
            searches += 1
    return ms, searches
