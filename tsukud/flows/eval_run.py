"""``tsukuctl eval create`` and ``eval compare``: the builder measured over a corpus.

A run creates a recipe for each corpus item with the daemon's own creator (the model
always asked: the figures are the LLM builder's, not the deterministic matcher's), with
the run's ``--repairs`` and ``--skip-validation``, checks each recipe against the known
answer (``eval/corpus.py``) and records it as ``eval.item``. The money rules are
create's, over the whole command: the worst case is stated and agreed to before the
first call (``--yes``, or a person's yes), and ``--max-usd`` is a cap on the request's
tally (``policy/spent.py``, as ``batch run --max-usd``), so no reservation can take the
run past it; the item it stops is recorded as not measured, and the run ends with what
it measured so far. The figures are ``eval/figures.py``'s, over the ledger's
``eval.item`` events, so ``eval compare`` reads exactly what the runs printed.

Items run one at a time: the figures include wall time per recipe, which parallel
runs sharing a model, a network and the container lock would distort.

``--replay DIR`` re-scores a recorded run: the RPC handler sets ``llm.replay_dir`` for
this request alone, so every model turn is answered from the recording by the provider
that was recorded (no failover), and an item whose request the recording does not hold
(``llm_replay_miss``: a prompt changed) is recorded as ``recording_mismatch``, not
measured, and reported by name, never scored as the builder's failure.
"""

from __future__ import annotations

import functools
import importlib
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from tsukud.errors import BudgetExceeded, ConfirmationRequired, TsukuError
from tsukud.eval import corpus as corpora
from tsukud.eval.figures import (
    Comparison,
    Figures,
    Outcome,
    compare,
    discover_figures,
    figures,
)
from tsukud.events.catalogue import EvalRunStarted
from tsukud.policy import spent
from tsukud.progress import Progress, no_progress
from tsukud.source import parse_source

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.events.store import EventStore
    from tsukud.llm.service import LLM
    from tsukud.policy.confirm import Confirmations

Create = Callable[..., Awaitable["CreateResult"]]

#: The first message's size a worst case assumes: five releases' asset names, the
#: README (``assets.README_LIMIT``) and the root files, with room to spare.
FIRST_MESSAGE_BOUND = 16_000
WRONG_ASSET = "wrong_asset"  # the recipe was made but downloads other assets
STOPPED = "stopped"  # the cap or a limit stopped the item: not measured, the run ends
#: Failures that say nothing of the builder (the network, GitHub's quota): the item is
#: recorded, not measured, and the run goes on.
NOT_THE_BUILDER = frozenset({"transport"})
#: A replayed item whose requests the recording does not hold (a prompt changed): not
#: scored, reported as such.
NOT_RECORDED = "recording_mismatch"


class EvalNoRun(TsukuError):
    code = "eval_no_run"


class EvalOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``eval create``'s choices (also the ``eval.create`` request's params)."""

    corpus: str = corpora.BUILTIN
    provider: str | None = None
    only_provider: bool | None = None
    max_usd: float | None = None
    repairs: int = 2
    skip_validation: bool = False
    yes: bool = False
    can_ask: bool = False
    # A recording (``TSUKU_LLM_RECORD_DIR``'s files) the model's answers are served from:
    # the run is re-scored offline (docs/eval.md, "Replaying a recorded run").
    replay: str | None = None


class DiscoverOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``eval discover``'s choices (also the ``eval.discover`` request's params)."""

    corpus: str = corpora.BUILTIN
    provider: str | None = None
    only_provider: bool | None = None
    search_provider: str | None = None
    max_usd: float | None = None
    yes: bool = False
    can_ask: bool = False


def checked_options(opts: EvalOptions | DiscoverOptions) -> None:
    """Refuse what no command line sends (a cap that is not a finite amount, a
    recording that is not a directory of recordings) before anything is read or
    spent."""
    import math

    from tsukud.errors import UsageError

    if opts.max_usd is not None and not (math.isfinite(opts.max_usd) and opts.max_usd >= 0):
        raise UsageError(f"max_usd must be a finite amount of 0 or more, got {opts.max_usd!r}")
    replay = getattr(opts, "replay", None)
    if replay is not None:
        from tsukud.llm.replay import recorded_providers

        recorded_providers(replay)  # refuses a path that holds no recordings


def new_run() -> str:
    return "eval-" + secrets.token_hex(6)


class CreateEvalReport(EvalRunStarted, kw_only=True):
    """``eval.create``'s answer: the run as ``eval.started`` recorded it, why it ended,
    what it spent and its figures."""

    repairs: int
    skip_validation: bool
    replay: str | None  # the recording the model's answers came from
    reason: str  # finished | max_usd | budget
    spent_usd: float
    figures: Figures
    recording_mismatches: list[dict[str, str]]  # replayed items the recording lacks


class RunsCompared(msgspec.Struct, frozen=True, kw_only=True):
    """``eval.compare``: each run as its ``eval.started`` recorded it (runs of older
    daemons included, hence a mapping) with its figures, and the difference."""

    a: dict[str, Any]
    b: dict[str, Any]
    same_corpus: bool
    comparison: Comparison


def spent_usd() -> float:
    """What the request (the eval command) has spent so far."""
    command = spent.current()
    return float(command.usd) if command is not None else 0.0


async def agree(
    confirmations: Confirmations | None,
    runs: str,
    opts: EvalOptions | DiscoverOptions,
    *,
    run: str,
    worst: Decimal | None,
    progress: Progress,
) -> spent.Tally | None:
    """The worst case of ``runs`` ("20 create runs"), said before any money is spent
    and agreed to (``--yes`` or a person's yes); then the request's tally takes the
    agreement and ``--max-usd`` as its cap."""
    if worst is None:
        said = f"{runs}; their worst case is unknown (a model without a price)"
    else:
        said = f"{runs}: at most ${worst:.2f} in the worst case"
    if opts.max_usd is not None:
        said += f", stopped at --max-usd ${opts.max_usd:.2f}"
    await progress({"stage": "eval", "message": said})
    if not opts.yes:
        question = ConfirmationRequired(
            f"eval: {said}. Go ahead?",
            hint="Run it again with --yes to accept, or lower --max-usd.",
            kind="eval_cost",
            estimate_usd=None if worst is None else float(worst),
        )
        if confirmations is None:
            raise question
        await confirmations.ask(progress, can_ask=opts.can_ask, session=run, question=question)
    command = spent.current()
    if command is not None:
        command.accepted = True  # the person agreed to the whole run's cost above
        if opts.max_usd is not None:
            command.cap = Decimal(str(opts.max_usd))
    return command


class Ending:
    reason = "failed"


@asynccontextmanager
async def completed(store: EventStore, run: str, outcomes: list[Outcome]) -> AsyncIterator[Ending]:
    """Around a run's items: its ``eval.completed`` (why it ended, what it measured and
    spent) is written however it ends, cancelled too."""
    clock = time.monotonic()
    end = Ending()
    try:
        yield end
    except BaseException as exc:
        end.reason = "cancelled" if isinstance(exc, trio.Cancelled) else "failed"
        raise
    finally:
        with trio.CancelScope(shield=True):
            ev = store.append_nowait(
                "eval.completed",
                {
                    "run": run,
                    "reason": end.reason,
                    "measured": len(outcomes),
                    "passed": sum(1 for o in outcomes if o.ok),
                    "spent_usd": spent_usd(),
                    "duration_ms": round((time.monotonic() - clock) * 1000),
                },
                run,
            )
            await store.wait_durable(ev.id)


async def record_item(store: EventStore, run: str, payload: dict[str, Any]) -> None:
    """One corpus item's ``eval.item`` (create's or discover's fields), on disk before
    the next item starts: a run cut short keeps every item it reported."""
    await store.wait_durable(store.append_nowait("eval.item", {"run": run, **payload}, run).id)


async def item_done(
    progress: Progress, said: str, category: str | None, capped: bool
) -> str | None:
    """An item's line to the person; the reason the run ends when a limit stopped it
    (``max_usd``: the request's cap, ``budget``: the day's budget or hour), else None."""
    await progress({"stage": "eval", "message": said})
    if category == STOPPED:
        return "max_usd" if capped else "budget"
    return None


def replay_miss(exc: BaseException) -> str | None:
    """What a replay's miss said (``llm_replay_miss``: a request the recording does not
    hold), wherever in ``exc``'s causes and groups it is; None when it is no miss."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, TsukuError) and e.code == "llm_replay_miss":
            return e.message
        if isinstance(e, BaseExceptionGroup):
            todo.extend(e.exceptions)
        todo.extend(x for x in (e.__cause__, e.__context__) if x is not None)
    return None


class EvalRunner:
    def __init__(
        self,
        *,
        create: Create,
        store: EventStore,
        llm: Callable[[], LLM],
        confirmations: Confirmations | None,
    ) -> None:
        self.create = create  # Creator.create: no install page, no one watches an item
        self.store = store
        self._llm = llm
        self.confirmations = confirmations

    # ---- eval create -----------------------------------------------------------------

    def worst_case(self, names: list[str], items: int, repairs: int) -> Decimal | None:
        """The most ``items`` create runs may spend: each run's reservation rule
        (``LLM.estimate`` over its turns and tokens) times the items; None unpriced."""
        from tsukud.create.pipeline import reserved_input_tokens
        from tsukud.create.session import MAX_TOKENS, MAX_TURNS, REPAIR_TURNS

        one = self._llm().estimate(
            names,
            max_turns=MAX_TURNS + repairs * REPAIR_TURNS,
            max_tokens=MAX_TOKENS,
            input_tokens=reserved_input_tokens(FIRST_MESSAGE_BOUND),
        )
        return None if one is None else one * items

    async def run(self, opts: EvalOptions, *, progress: Progress) -> CreateEvalReport:
        from tsukud.create.service import checked_repairs
        from tsukud.create.session import prompt_version

        checked_options(opts)
        corpus = corpora.for_create(corpora.load(opts.corpus), opts.corpus)
        repairs = checked_repairs(opts.repairs)
        llm = self._llm()
        provider_choice, only = opts.provider, opts.only_provider
        if opts.replay is not None and provider_choice is None:
            from tsukud.llm.replay import recorded_providers

            # The provider that was recorded, alone: no failover to another's replay.
            provider_choice, only = ",".join(recorded_providers(opts.replay)), True
        names = llm.usable(provider_choice, only=only)
        provider, model = names[0], llm.info(names[0]).model
        run = new_run()
        worst = self.worst_case(names, len(corpus.items), repairs)
        await agree(
            self.confirmations,
            f"{len(corpus.items)} create runs",
            opts,
            run=run,
            worst=worst,
            progress=progress,
        )
        started: dict[str, Any] = {  # the eval.started payload (events/catalogue.py)
            "run": run,
            "corpus": corpus.name,
            "corpus_hash": corpora.corpus_hash(corpus),
            "items": len(corpus.items),
            "provider": provider,
            "model": model,
            "prompt_version": prompt_version(),
            "repairs": repairs,
            "skip_validation": opts.skip_validation,
            "max_usd": opts.max_usd,
            "worst_case_usd": None if worst is None else float(worst),
            "replay": opts.replay,
        }
        await self.store.wait_durable(self.store.append_nowait("eval.started", started, run).id)
        # The SDKs and the pipeline are imported before the first item, so their import
        # time (seconds) is not the first item's wall time.
        for name in names:
            await llm.ready(name)
        await trio.to_thread.run_sync(importlib.import_module, "tsukud.create.pipeline")
        outcomes: list[Outcome] = []
        unmatched: list[dict[str, str]] = []  # replayed items the recording does not hold
        async with completed(self.store, run, outcomes) as end:
            end.reason = await self._items(
                corpus, opts, run, outcomes, progress, (provider_choice, only), unmatched
            )
        return CreateEvalReport(
            **started,
            reason=end.reason,
            spent_usd=spent_usd(),
            figures=figures(outcomes),
            recording_mismatches=unmatched,
        )

    async def _items(
        self,
        corpus: corpora.Corpus,
        opts: EvalOptions,
        run: str,
        outcomes: list[Outcome],
        progress: Progress,
        providers: tuple[str | None, bool | None],
        unmatched: list[dict[str, str]],
    ) -> str:
        from tsukud.batch.outcome import classify
        from tsukud.create.service import new_session

        for number, item in enumerate(corpus.items, 1):
            session = new_session()
            before = spent.current()
            paid_before = before.usd if before is not None else Decimal(0)
            clock = time.monotonic()
            category: str | None = None
            detail = ""
            capped = False
            try:
                result = await self.create(
                    item.tool,
                    parse_source(item.source),
                    progress=no_progress,
                    write=False,
                    check_target=False,
                    force_llm=True,
                    skip_validation=opts.skip_validation,
                    providers=providers[0],
                    only_provider=providers[1],
                    confirmed=True,
                    version=item.version,
                    session=session,
                    max_repairs=opts.repairs,
                )
                wrong = corpora.mismatches(
                    item, result.preview.downloads if result.preview is not None else []
                )
                if wrong:
                    category, detail = WRONG_ASSET, "; ".join(wrong)
            except Exception as exc:  # one item's failure, whatever it is, is a figure
                failure = classify(exc, source=item.source)
                category, detail = failure.category, failure.message
                miss = replay_miss(exc) if opts.replay is not None else None
                if miss is not None:
                    category, detail = NOT_RECORDED, miss
                    unmatched.append({"tool": item.tool, "detail": miss})
                elif failure.category == "budget":  # ours: the cap, the day's budget, the hour
                    category = STOPPED
                    capped = isinstance(exc, BudgetExceeded) and "cap_usd" in exc.data
            took = round((time.monotonic() - clock) * 1000)
            after = spent.current()
            turns, repairs, replayed = await self.store.read(
                functools.partial(_run_counts, session=session)
            )
            # A replayed item's figure is the recorded run's cost (what it costs against
            # the real model), though this run spent none of it (docs/eval.md).
            cost = float((after.usd if after is not None else Decimal(0)) - paid_before + replayed)
            outcome = Outcome(
                tool=item.tool,
                ok=category is None,
                category=category,
                duration_ms=took,
                cost_usd=cost,
                turns=turns,
                repairs=repairs,
            )
            measured = category not in (STOPPED, NOT_RECORDED, *NOT_THE_BUILDER)
            await record_item(
                self.store,
                run,
                {
                    "tool": item.tool,
                    "source": item.source,
                    "session": session,
                    "measured": measured,
                    "ok": outcome.ok,
                    "category": category,
                    "detail": detail[:300],
                    "duration_ms": took,
                    "run_cost_usd": cost,
                    "turns": turns,
                    "repairs": repairs,
                },
            )
            said = "passed" if outcome.ok else f"failed ({category})"
            if category == NOT_RECORDED:
                said = "recording does not match (not scored)"
            used = f"{turns} turns, {repairs} repairs, ${cost:.4f}, {took / 1000:.1f} s"
            said = f"[{number}/{len(corpus.items)}] {item.tool}: {said}; {used}"
            stop = await item_done(progress, said, category, capped)
            if stop is not None:
                return stop
            if measured:
                outcomes.append(outcome)
        return "finished"

    # ---- eval compare ----------------------------------------------------------------

    async def outcomes(self, run: str) -> tuple[dict[str, Any], list[Outcome]]:
        """A run's ``eval.started`` payload and its measured items, from the ledger."""
        started, items = await self.store.read(functools.partial(_run_events, run=run))
        if started is None:
            raise EvalNoRun(f"the ledger has no eval run {run!r}")
        return started, [msgspec.convert(i, Outcome, strict=False) for i in items]

    async def compare(self, run_a: str, run_b: str) -> RunsCompared:
        a_started, a = await self.outcomes(run_a)
        b_started, b = await self.outcomes(run_b)
        if a_started.get("kind", "create") != b_started.get("kind", "create"):
            from tsukud.errors import UsageError

            raise UsageError(
                f"{run_a} measured {a_started.get('kind', 'create')}, {run_b} "
                f"{b_started.get('kind', 'create')}: only runs of one kind compare",
                hint="Compare two eval create runs, or two eval discover runs.",
            )
        shown = discover_figures if a_started.get("kind") == "discover" else figures
        return RunsCompared(
            a={**a_started, "figures": shown(a)},
            b={**b_started, "figures": shown(b)},
            same_corpus=a_started.get("corpus_hash") == b_started.get("corpus_hash"),
            comparison=compare(a, b),
        )


def session_events(conn: Any, session: str, types: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """``session``'s events of ``types`` (type, payload), oldest first, with the ledger's
    own listing query (``events/queries.py``): this daemon's events, on SQLite or (its
    origin's view) a shared ledger."""
    import json

    from tsukud.events.queries import EventFilter, iter_list

    found = []
    for rows in iter_list(conn, EventFilter(session=session, types=types), 0):
        for row in rows:
            payload = row[4]
            found.append(
                (str(row[2]), payload if isinstance(payload, dict) else json.loads(payload))
            )
    return found


def _run_counts(conn: Any, session: str) -> tuple[int, int, Decimal]:
    """The model's turns, LLM repairs and replayed turns' recorded cost (not spent) of
    one create run, from its events."""
    found = session_events(conn, session, ["llm.turn", "repair.attempted"])
    turns = sum(1 for t, _ in found if t == "llm.turn")
    repairs = sum(1 for t, p in found if t == "repair.attempted" and p.get("kind") == "llm")
    replayed = sum(
        (
            Decimal(str(p.get("replayed_cost_usd") or 0))
            for t, p in found
            if t == "llm.turn" and p.get("replayed")
        ),
        Decimal(0),
    )
    return turns, repairs, replayed


def _run_events(conn: Any, run: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    started: dict[str, Any] | None = None
    items: list[dict[str, Any]] = []
    for type_, data in session_events(conn, run, ["eval.started", "eval.item"]):
        if type_ == "eval.started":
            started = data
        elif data.get("measured", True):
            items.append({**data, "cost_usd": data.get("run_cost_usd")})
    return started, items
