"""The discovery chain: stages in order, one deadline, deterministic decision, a question.

Everything outside is injected (:class:`Deps`), so the chain runs in-process against
fakes as well as in the daemon (:mod:`.service` builds the real parts).

1. Normalise the name (refuse non-ASCII / homoglyphs); warn on a likely typosquat.
2. Stage 1: a recipe (unless the caller just looked), then a discovery entry.
3. Stage 2: ecosystem probes; one good match, or a clear winner, is the answer; a tie
   of fitting packages is a numbered choice (never answered by ``--yes``). A same-name
   package that does not fit (:func:`.ecosystem.misfit`) is only a candidate: the chain
   goes on.
4. Stage 3: an LLM with web search extracts candidates (inside one budget reservation):
   repositories, verified against GitHub, and packages, verified by their registry's
   probe (:func:`.verify.assess_package`); :func:`.verify.decide` takes the decision.
5. Confirmation (outside the deadline: a person may take their time): the metadata,
   then ``Install <tool> from this source? [y/N]``. ``--yes`` answers it only for a
   verified, popular non-fork; forks and unverified sources always need a person.
   When no candidate clears the bar, or several do, or the name is a near miss of a
   known tool (typosquat), the candidates (GitHub and ecosystem alike) are a numbered
   choice (:mod:`.choices`); ``--yes`` never picks one that did not clear the bar.

Time is machine time (:mod:`.deadline`): stages 1-4 share ``timeout_s`` (90 s by
default) and the registry and LLM stages have their own budgets (``stage_timeouts``: 5 s
and 60 s, what a real five-turn web-search conversation takes); a person's answer, the
LLM cost question inside the deadline included, stops every clock. A late stage says
what it was doing. Events: ``discovery.started``,
``discovery.warning``, ``discovery.stage`` (one per stage: hit, miss, ambiguous,
skipped, error), ``discovery.search``, ``discovery.candidate``, ``discovery.verified``,
``discovery.completed`` or ``discovery.failed`` (with the error code and whether it is
retryable), all with the discovery's session id; the LLM's ``llm.turn`` events carry
the same session and the price of every token and search.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import trio

from tsukud.clock import Clock, SystemClock
from tsukud.discover import choices as choicesmod
from tsukud.discover import present
from tsukud.discover.deadline import Deadline
from tsukud.discover.ecosystem import (
    ProbeReport,
    describe,
    evidence_line,
    install_command,
    misfit,
    select,
    unvouched,
)
from tsukud.discover.errors import (
    FROM_HINT,
    DiscoveryAmbiguous,
    DiscoveryBudgetExceeded,
    DiscoveryConfirmationRequired,
    DiscoveryDenied,
    DiscoveryLLMUnavailable,
    DiscoveryNotFound,
    DiscoverySearchFailed,
    DiscoveryTimeout,
    DiscoveryUnverified,
)
from tsukud.discover.llm_discovery import (
    MAX_TOKENS,
    MAX_TURNS,
    LLMDiscovery,
    Outcome,
    repos_of,
    worst_case,
)
from tsukud.discover.model import (
    Candidate,
    Choice,
    Discovery,
    Probe,
    ReleaseCheck,
    RepoMeta,
    Verified,
)
from tsukud.discover.normalize import Typosquat, normalize_name, typosquat
from tsukud.discover.registry_lookup import DiscoveryRegistry
from tsukud.discover.search import Searcher
from tsukud.discover.verify import Decision, assess, assess_package, decide, merge
from tsukud.errors import BudgetExceeded, ConfirmationRequired, TsukuError, UserDeclined
from tsukud.events.catalogue import ToolCalled
from tsukud.llm.providers import key_variables, searches_itself
from tsukud.net.http import HttpUnreachable, all_out_of_reach
from tsukud.policy.confirm import pausing
from tsukud.progress import Emit, Progress, no_emit, no_progress
from tsukud.registries.ecosystems import labels

if TYPE_CHECKING:
    from tsukud.llm.service import Run
    from tsukud.llm.types import Citation

_T = TypeVar("_T")

DEFAULT_TIMEOUT_S = 90.0
# Per stage, in machine time; the ecosystems' deadline is probe_all's own.
STAGE_TIMEOUTS = {"registry": 5.0, "llm": 60.0}
TIMEOUT_KEYS = {
    "discovery": "discover.timeout_s",
    "registry": "discover.registry_timeout_s",
    "llm": "discover.llm_timeout_s",
}
INPUT_ESTIMATE = 20_000  # tokens per turn: prompt, tools, server search results

Ask = Callable[[ConfirmationRequired], Awaitable[None]]
# A numbered choice among ``options``: the number picked (1-based), or None for none.
Choose = Callable[[ConfirmationRequired, list[dict[str, Any]]], Awaitable[int | None]]


async def _refuse(question: ConfirmationRequired) -> None:
    raise question


async def _refuse_choice(question: ConfirmationRequired, _options: list[Any]) -> int | None:
    raise question


class RecipeRegistryUnreachable(Exception):
    """``recipe_lookup`` could not ask the recipe registry (and had nothing cached): not
    a hit, so discovery goes on, but it must not claim the registry lacks the tool.
    ``cause``: the registry's error (``network_unreachable`` when out of reach)."""

    def __init__(self, message: str, cause: TsukuError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


@dataclass
class Deps:
    probe: Callable[[str], Awaitable[ProbeReport]]
    github_meta: Callable[[str], Awaitable[RepoMeta]]
    # One registry's answer for one package (builder, name): a model's ecosystem
    # candidate (None: it cannot be verified, so it is never auto-approved).
    probe_package: Callable[[str, str], Awaitable[ProbeReport]] | None = None
    # Discovery's builder -> the ``--from`` prefix of its recipe builder (the hints).
    from_prefixes: Mapping[str, str] = field(default_factory=dict)
    # The latest release's assets for this platform (None: not checked, e.g. in tests).
    release_check: Callable[[str], Awaitable[ReleaseCheck]] | None = None
    registry: DiscoveryRegistry | None = None
    recipe_lookup: Callable[[str], Awaitable[str | None]] | None = None
    known_names: Callable[[], Iterable[str]] = tuple
    open_llm: Callable[..., AbstractAsyncContextManager[Run]] | None = None
    llm_providers: Callable[[str | None], Sequence[tuple[str, str]]] | None = None
    searcher: Callable[[str | None], Searcher] | None = None
    search_fee: Callable[[str], Decimal | None] = lambda _name: None
    ask: Ask = _refuse
    choose: Choose = _refuse_choice
    emit: Emit = no_emit
    progress: Progress = no_progress
    clock: Clock = field(default_factory=SystemClock)
    timeout_s: float = DEFAULT_TIMEOUT_S
    stage_timeouts: dict[str, float] = field(default_factory=lambda: dict(STAGE_TIMEOUTS))
    max_searches: int = 3


class Request(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    session: str
    yes: bool = False
    can_ask: bool = False
    confirm: bool = True  # ask "Install <tool> from this source?" (install); discover only reports
    check_recipes: bool = True
    search_provider: str | None = None
    providers: str | None = None  # LLM order: provider names, "a,b"
    llm: bool = True  # False: registry and ecosystems only
    collect_tool_stats: bool = False  # the result lists every tool call (tool_stats)


@dataclass
class _State:
    tool: str
    started: float
    stage: str = "normalize"
    doing: str = "starting"  # the last progress message: what a late stage was doing
    timings: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    probes: list[Probe] = field(default_factory=list)
    spent: Decimal = Decimal(0)
    unpriced: bool = False
    llm_note: str | None = None
    squat: Typosquat | None = None
    eco_choices: list[Choice] = field(default_factory=list)  # same-name misfits
    package: Probe | None = None  # the same-name package the ecosystem stage found
    unreachable: list[str] = field(default_factory=list)  # ecosystems that erred or were late
    registry_down: str | None = None  # why the recipe registry could not be asked
    # The registry and every ecosystem out of reach (``network_unreachable``, each placed
    # at its setting): nothing was asked, so no answer is "not found" (``_offline``).
    registry_out_of_reach: TsukuError | None = None
    offline: list[TsukuError] = field(default_factory=list)
    tool_calls: list[ToolCalled] = field(default_factory=list)


@dataclass
class _Offer:
    """Candidates a person must choose from (asked outside the deadline)."""

    choices: list[Choice]
    reason: str  # why nothing was picked automatically
    outcome: Outcome | None = None  # the LLM stage's, when it ran
    tie: bool = False  # fitting packages in several ecosystems, none clearly more used


class _Chain:
    def __init__(self, req: Request, deps: Deps) -> None:
        self.req = req
        self.deps = deps
        self.tool = req.tool
        self.st = _State(req.tool, started=deps.clock.now())
        self.deadline = Deadline()
        self._sources: list[tuple[str, str]] = []

    # ---- plumbing ----------------------------------------------------------------------

    async def progress(self, step: str, message: str, **extra: Any) -> None:
        self.st.doing = message.split("\n", 1)[0]
        await self.deps.progress({"stage": "discovery", "step": step, "message": message, **extra})

    async def emit(self, type_: str, payload: dict[str, Any]) -> None:
        await self.deps.emit(type_, {"tool": self.tool, **payload})

    async def record_tool_call(self, call: ToolCalled) -> None:
        """A model's tool call: a ``tool.called`` event (create's payload, no tool key)."""
        self.st.tool_calls.append(call)
        await self.deps.emit("tool.called", msgspec.to_builtins(call))

    async def stage_event(self, stage: str, outcome: str, started: float, **extra: Any) -> None:
        ms = round((self.deps.clock.now() - started) * 1000)
        self.st.timings[stage] = ms
        await self.emit("discovery.stage", {"stage": stage, "outcome": outcome, "ms": ms, **extra})

    def finish(self, found: Discovery) -> Discovery:
        found.duration_ms = self.machine_ms()
        found.waited_ms = round(self.deadline.waited_s * 1000)
        found.timings_ms = dict(self.st.timings)
        found.warnings = tuple(dict.fromkeys((*self.st.warnings, *found.warnings)))
        if self.req.collect_tool_stats:
            found.tool_stats = tuple(msgspec.to_builtins(c) for c in self.st.tool_calls)
        return found

    def machine_ms(self) -> int:
        """Milliseconds since the start, without the time spent waiting for a person."""
        return round((self.deps.clock.now() - self.st.started - self.deadline.waited_s) * 1000)

    def late(self, what: str, seconds: float) -> DiscoveryTimeout:
        """The time-out of the whole discovery (``what`` = "discovery") or one stage."""
        key = TIMEOUT_KEYS[what]
        within = (
            f"discovery of {self.tool} did not finish within {seconds:g} s"
            if what == "discovery"
            else f"the {what} stage of discovering {self.tool} did not finish within {seconds:g} s"
        )
        return DiscoveryTimeout(
            f"{within} (during the {self.st.stage} stage, last step: {self.st.doing})",
            stage=self.st.stage,
            timeout_s=seconds,
            setting=key,
            doing=self.st.doing,
            hint=f"Try again, raise the limit with `tsukuctl config set {key} <seconds>`, or "
            + FROM_HINT.format(tool=self.tool),
        )

    # ---- the run -----------------------------------------------------------------------

    async def run(self) -> Discovery:
        with pausing(self.deadline.paused):
            return await self._run()

    async def _run(self) -> Discovery:
        req = self.req
        self.tool = normalize_name(req.tool)
        self.st.tool = self.tool
        await self.emit(
            "discovery.started",
            {"requested": req.tool[:200], "yes": req.yes, "can_ask": req.can_ask},
        )
        squat = self.st.squat = typosquat(self.tool, self.deps.known_names())
        if squat is not None:
            self.st.warnings.append(squat.message())
            await self.emit(
                "discovery.warning",
                {"kind": "typosquat", "similar": squat.similar, "distance": squat.distance},
            )
            await self.progress("warning", f"warning: {squat.message()}", similar=squat.similar)
        pending: tuple[Discovery, Decision | None] | _Offer | None = None
        with self.deadline.limit(self.deps.timeout_s) as scope:
            pending = await self._resolve()
        if scope.cancelled_caught or pending is None:
            raise self.late("discovery", self.deps.timeout_s)
        self.st.stage = "confirm"
        if isinstance(pending, _Offer):
            return self.finish(await self._choose(pending))
        found, decision = pending
        if decision is not None:
            await self._approve(found, decision)
        elif found.stage == "ecosystem" and self.st.package is not None and self.req.confirm:
            await self._approve_package(found, self.st.package)
        return self.finish(found)

    async def _resolve(self) -> tuple[Discovery, Decision | None] | _Offer:
        hit = await self._registry_within_budget()
        if hit is not None:
            return hit, None
        eco = await self._ecosystems()
        if isinstance(eco, _Offer):
            return eco
        if eco is not None:
            return eco, None
        try:
            outcome = await self._staged("llm", self._llm)
        except (DiscoveryNotFound, DiscoveryLLMUnavailable, DiscoverySearchFailed) as exc:
            if not self.st.eco_choices:
                raise
            # Web search found nothing usable: the same-name packages are all there is.
            return _Offer(list(self.st.eco_choices), f"web search found nothing ({exc.message})")
        pages = [c for c in outcome.candidates if c.builder == "instructions"]
        outcome.candidates = [c for c in outcome.candidates if c.builder != "instructions"]
        if pages and not outcome.candidates:
            return self._install_page(pages[0], outcome), None
        return await self._verify(outcome)

    async def _staged(self, stage: str, run: Callable[[], Awaitable[_T]]) -> _T:
        """``run()`` within the stage's own budget (machine time), if it has one."""
        seconds = self.deps.stage_timeouts.get(stage)
        if seconds is None:
            return await run()
        with self.deadline.limit(seconds):
            return await run()
        raise self.late(stage, seconds)

    # ---- stage 1 -----------------------------------------------------------------------

    async def _registry_within_budget(self) -> Discovery | None:
        """The registries are a shortcut: one that does not answer within the stage's
        budget (refused connections retried, a hung server) is passed by, said as such,
        and the ecosystem and web stages go on; only the whole deadline ends discovery."""
        seconds = self.deps.stage_timeouts.get("registry")
        if seconds is None:
            return await self._registry()
        started = self.deps.clock.now()
        with self.deadline.limit(seconds):
            return await self._registry()
        self.st.registry_down = f"no answer within {seconds:g} s ({self.st.doing})"
        await self.stage_event("registry", "timeout", started, reason=self.st.registry_down)
        return None

    async def _registry(self) -> Discovery | None:
        self.st.stage = "registry"
        started = self.deps.clock.now()
        await self.progress("registry", f"checking the registry for {self.tool}")
        if self.req.check_recipes and self.deps.recipe_lookup is not None:
            try:
                where = await self.deps.recipe_lookup(self.tool)
            except RecipeRegistryUnreachable as e:
                where, self.st.registry_down = None, str(e)
                if e.cause is not None and e.cause.code == HttpUnreachable.code:
                    self.st.registry_out_of_reach = e.cause
            if where is not None:
                await self.stage_event("registry", "hit", started, kind="recipe")
                return Discovery(
                    tool=self.tool,
                    session=self.req.session,
                    stage="recipe",
                    builder="recipe",
                    source=where,
                    reason=f"a recipe for {self.tool} exists ({where})",
                    approval="trusted",
                )
        if self.deps.registry is None:
            await self.stage_event("registry", "skipped", started)
            return None
        lookup = await self.deps.registry.lookup(self.tool)
        entry = lookup.entry
        if entry is None:
            await self.stage_event(
                "registry", "miss", started, origin=lookup.origin, error=lookup.error
            )
            return None
        await self.stage_event(
            "registry", "hit", started, kind="entry", builder=entry.builder, source=entry.source
        )
        meta = {
            k: v
            for k, v in msgspec.to_builtins(entry).items()
            if k not in ("builder", "source") and v is not None
        }
        found = Discovery(
            tool=self.tool,
            session=self.req.session,
            stage="registry",
            builder=entry.builder,
            source=entry.source,
            reason=f"found in discovery registry ({entry.builder}: {entry.source})",
            approval="trusted",
            install_command=None
            if entry.builder == "github"
            else install_command(entry.builder, entry.source),
            metadata=meta,
        )
        await self.progress("registry", present.describe_registry(found))
        return found

    # ---- stage 2 -----------------------------------------------------------------------

    async def _ecosystems(self) -> Discovery | _Offer | None:
        self.st.stage = "ecosystem"
        started = self.deps.clock.now()
        await self.progress("ecosystem", f"probing {labels()}")
        report = await self.deps.probe(self.tool)
        self.st.probes = list(report.matches)
        self.st.unreachable = sorted({*report.errors, *report.late})
        if self.st.registry_out_of_reach is not None and report.none_reached():
            self.st.offline = [self.st.registry_out_of_reach, *report.out_of_reach.values()]
        why_not = {p.builder: misfit(p, self.tool) for p in report.matches}
        fitting = [p for p in report.accepted if not why_not[p.builder]]
        self.st.eco_choices = [
            choicesmod.from_probe(p, why="; ".join(why_not[p.builder]))
            for p in report.matches
            if why_not[p.builder]
        ]
        detail: dict[str, Any] = {
            "matches": [f"{p.builder}:{p.source}" for p in report.matches],
            "rejected": report.rejected,
            "misfits": {b: w for b, w in why_not.items() if w},
            "errors": report.errors,
            "late": report.late,
        }
        sel = select(fitting)
        if sel.kind == "none":
            await self.stage_event("ecosystem", "miss", started, **detail)
            return None
        near = self._near_miss()
        if near is not None:  # a near miss of a known tool: a person picks, or nobody
            await self.stage_event("ecosystem", "typosquat", started, **detail)
            offered = [choicesmod.from_probe(p, why=near) for p in sel.ranked]
            return _Offer([*offered, *self.st.eco_choices], f"none is recommended: {near}")
        if sel.chosen is None:  # a tie: a person picks, outside the deadline; --yes never
            await self.stage_event("ecosystem", "ambiguous", started, **detail)
            ties = [self._tie(p) for p in sel.ranked]
            reason = (
                f"{len(ties)} packages in different ecosystems fit, none used ten times more "
                "than the others"
            )
            return _Offer([*ties, *self.st.eco_choices], reason, tie=True)
        chosen = sel.chosen
        why = unvouched(chosen)
        await self.stage_event(
            "ecosystem", "hit", started, selection=sel.kind, unvouched=why, **detail
        )
        found = self._ecosystem_result(chosen, list(sel.ranked), sel.kind, sel.ratio)
        self.st.package = chosen
        if why and self.req.confirm:
            # Nothing but the name speaks for it: only a person's explicit pick takes it.
            return _Offer(
                [
                    choicesmod.from_probe(chosen, why="found by its name alone: " + "; ".join(why)),
                    *self.st.eco_choices,
                ],
                f"{chosen.builder}:{chosen.source} has the name {self.tool}, and nothing "
                "else speaks for it",
            )
        if why:
            way = self._naming(chosen.builder, chosen.source)
            found.warnings = (
                *found.warnings,
                f"found by its name alone ({'; '.join(why)}): installing it needs an "
                f"explicit choice: {way}",
            )
        if not self.req.confirm:  # a report; else the confirmation shows it
            await self.progress("ecosystem", present.describe_ecosystem(found, chosen))
        return found

    def _tie(self, p: Probe) -> Choice:
        """One of several fitting same-name packages: recommended only when more than
        its name speaks for it."""
        bare = unvouched(p)
        if bare:
            return choicesmod.from_probe(p, why="found by its name alone: " + "; ".join(bare))
        why = f"it fits {self.tool} and passes {p.builder}'s bar"
        return choicesmod.from_probe(p, why=why, recommended=True)

    def _ecosystem_result(
        self, chosen: Probe, ranked: list[Probe], reason: str, ratio: float | None
    ) -> Discovery:
        return Discovery(
            tool=self.tool,
            session=self.req.session,
            stage="ecosystem",
            builder=chosen.builder,
            source=chosen.source,
            reason=f"a package named {self.tool} in the {chosen.builder} ecosystem ({reason})",
            install_command=install_command(chosen.builder, chosen.source),
            metadata={
                k: v
                for k, v in {
                    "description": chosen.description,
                    "downloads": chosen.downloads,
                    "version_count": chosen.version_count,
                    "repository": chosen.repository,
                    "latest": chosen.latest,
                    "popularity": describe(chosen),
                    "selection": reason,
                    "downloads_ratio": ratio,
                    "first_published": chosen.first_published,
                    "maintainers": list(chosen.maintainers) or None,
                    "has_repository": chosen.has_repository,
                    "vouched": not unvouched(chosen),
                }.items()
                if v is not None
            },
            alternatives=tuple(_probe_summary(p) for p in ranked if p is not chosen),
        )

    # ---- stage 3 -----------------------------------------------------------------------

    async def _llm(self) -> Outcome:
        self.st.stage = "llm"
        started = self.deps.clock.now()
        deps, req = self.deps, self.req
        providers: Sequence[tuple[str, str]] = ()
        if not req.llm:
            self.st.llm_note = "web search discovery is off (--no-llm)"
        elif deps.open_llm is None or deps.llm_providers is None:
            self.st.llm_note = "no LLM is available for web search discovery"
        else:
            from tsukud.errors import ProviderUnavailable

            try:
                providers = deps.llm_providers(req.providers)
            except ProviderUnavailable as exc:
                self.st.llm_note = exc.message
        if not providers:
            await self.stage_event("llm", "skipped", started, reason=self.st.llm_note)
            raise self._not_found()
        searcher = None
        if deps.searcher is not None and any(not searches_itself(n) for n, _m in providers):
            searcher = deps.searcher(req.search_provider)
        assert deps.open_llm is not None
        search_fee = deps.search_fee(searcher.name) if searcher else None
        outcome: Outcome
        try:
            async with deps.open_llm(
                session=req.session,
                purpose="discovery",
                providers=",".join(n for n, _m in providers),
                **llm_allowance(
                    providers,
                    searcher=searcher,
                    search_fee=deps.search_fee,
                    max_searches=deps.max_searches,
                ),
                confirmed=req.yes,
                can_ask=req.can_ask,
                progress=deps.progress,
            ) as run:
                session = LLMDiscovery(
                    run,
                    self.tool,
                    searcher=searcher,
                    search_fee=search_fee,
                    max_searches=deps.max_searches,
                    progress=lambda message, extra: self.progress("llm", message, **extra),
                    emit=self.emit,
                    record=self.record_tool_call,
                )
                try:
                    outcome = await session.discover(providers)
                finally:
                    self.st.spent = run.spent
                    self.st.unpriced = run.unpriced_turns > 0
                    self.st.warnings.extend(run.warnings)  # e.g. a rejected key failed over
        except BudgetExceeded as exc:
            await self.stage_event("llm", "error", started, error_code=exc.code)
            raise DiscoveryBudgetExceeded(
                f"web search discovery would exceed today's LLM budget: {exc.message}",
                hint=_hint(DiscoveryBudgetExceeded.default_hint, self.tool),
                **exc.data,
            ) from None
        llm_ms = round((self.deps.clock.now() - started) * 1000)
        await self.stage_event(
            "llm",
            "candidates" if outcome.candidates else "miss",
            started,
            provider=outcome.provider,
            model=outcome.model,
            turns=outcome.turns,
            searches=outcome.searches,
            candidates=len(outcome.candidates),
            provider_errors=outcome.provider_errors[:5],
        )
        self.st.timings["llm"] = llm_ms
        if not outcome.candidates:
            raise self._llm_miss(outcome)
        return outcome

    def _install_page(self, page: Candidate, outcome: Outcome) -> Discovery:
        """No repository, an install page: the instructions builder reads it, and the
        recipe it writes is validated and shown to a person before anything is
        installed, so no question is asked here. A name a letter or two from a known
        tool is said in the reason and ``metadata.near_miss``, so the person reviewing
        the recipe knows to check it is the tool they meant."""
        reason = "an install page found by web search (no GitHub release, no package)"
        near = self._near_miss()
        return Discovery(
            tool=self.tool,
            session=self.req.session,
            stage="llm",
            builder="instructions",
            source=page.source,
            reason=reason + (f"; {near}: check it is the tool you meant" if near else ""),
            metadata={"near_miss": near} if near else {},
            confidence=page.confidence,
            evidence=page.evidence,
            provider=outcome.provider,
            model=outcome.model,
            spent_usd=None if self.st.unpriced else float(self.st.spent),
            llm_turns=outcome.turns,
            searches=outcome.searches,
        )

    def _offline(self, more: Sequence[TsukuError] = ()) -> TsukuError | None:
        """When the recipe registry, every ecosystem (and ``more``: the LLM providers)
        were out of reach, nothing was asked: the network is why nothing was found, and
        discovery ends as every command does offline, naming each service's setting."""
        if not self.st.offline:
            return None
        return all_out_of_reach(
            [*self.st.offline, *more], f"nothing could be asked about {self.tool}"
        )

    def _llm_miss(self, outcome: Outcome) -> TsukuError:
        if outcome.provider is None and outcome.provider_errors:
            offline = len(outcome.out_of_reach) == len(outcome.provider_errors)
            if offline and (error := self._offline(outcome.out_of_reach)) is not None:
                return error
            data: dict[str, Any] = {}
            hint = (
                " ".join(h for h in dict.fromkeys(outcome.key_hints) if h)
                + (" Or " if outcome.key_hints else "Try again later, or ")
                + FROM_HINT.format(tool=self.tool)
            )
            return DiscoveryLLMUnavailable(
                "every LLM provider failed during web search discovery: "
                + "; ".join(outcome.provider_errors),
                hint=self._meant_first(hint, data),
                **data,
            )
        if outcome.search_errors and not outcome.sources:
            server_side = searches_itself(outcome.provider)
            return DiscoverySearchFailed(
                f"web search failed ({outcome.provider}): {outcome.search_errors[-1]}",
                hint=(
                    f"{outcome.provider}'s own web search failed; try again later, or "
                    + FROM_HINT.format(tool=self.tool)
                    if server_side
                    else _hint(DiscoverySearchFailed.default_hint, self.tool)
                ),
            )
        said = f" (the model said: {outcome.answer})" if outcome.answer else ""
        return self._not_found(f"web search found no source for {self.tool}{said}")

    def _not_found(self, detail: str | None = None, **data: Any) -> TsukuError:
        if detail is None and (offline := self._offline()) is not None:
            return offline
        where = "any ecosystem" if self.st.registry_down else "the registry or any ecosystem"
        message = detail or f"could not find {self.tool} in {where}"
        if self.st.registry_down:
            message += f" (the recipe registry could not be asked: {self.st.registry_down})"
            data.setdefault("registry_unreachable", self.st.registry_down)
        if self.st.unreachable:
            message += (
                f" ({', '.join(self.st.unreachable)} could not be reached, so "
                f"{self.tool} may be there)"
                if not detail
                else f" ({', '.join(self.st.unreachable)} could not be reached)"
            )
            data.setdefault("unreachable", list(self.st.unreachable))
        if self.st.llm_note and not detail:
            message += f"; {self.st.llm_note}"
        hint = "If you know where it comes from, " + FROM_HINT.format(tool=self.tool)
        if self.st.llm_note and "configured" in self.st.llm_note:
            hint = (
                f"Set {key_variables()} (or a local model) to search the web, "
                "or " + FROM_HINT.format(tool=self.tool)
            )
        return DiscoveryNotFound(message, hint=self._meant_first(hint, data), **data)

    def _meant_first(self, hint: str, data: dict[str, Any]) -> str:
        """A name one or two edits from a known tool most likely meant that tool: the
        way to install it comes before keys or ``--from``."""
        squat = self.st.squat
        if squat is None:
            return hint
        data.setdefault("did_you_mean", squat.similar)
        return f"Did you mean {squat.similar}? `tsukuctl install {squat.similar}`. {hint}"

    # ---- verification and decision -----------------------------------------------------

    async def _verify(self, outcome: Outcome) -> tuple[Discovery, Decision] | _Offer:
        self.st.stage = "verify"
        started = self.deps.clock.now()
        candidates = merge(outcome.candidates)
        await self.progress(
            "verify",
            "checking "
            + ", ".join(
                f"{c.builder}:{c.source}" + (" on GitHub" if c.builder == "github" else "")
                for c in candidates
            ),
        )
        metas: dict[str, tuple[RepoMeta | None, BaseException | None]] = {}
        packages: dict[tuple[str, str], ProbeReport] = {}

        async def fetch(c: Candidate) -> None:
            try:
                metas[c.source] = (await self.deps.github_meta(c.source), None)
            except TsukuError as exc:
                metas[c.source] = (None, exc)

        async def probe(c: Candidate) -> None:
            packages[(c.builder, c.source)] = await self._probe_package(c.builder, c.source)

        async with trio.open_nursery() as nursery:
            for c in candidates:
                nursery.start_soon(fetch if c.builder == "github" else probe, c)
        now = dt.datetime.fromtimestamp(self.deps.clock.now(), dt.UTC)
        verified = [
            assess(
                c,
                *metas[c.source],
                now=now,
                probes=self.st.probes,
                had_search_results=bool(outcome.sources),
            )
            if c.builder == "github"
            else assess_package(c, packages[(c.builder, c.source)], tool=self.tool)
            for c in candidates
        ]
        verified = await self._check_releases(verified)
        for item in verified:
            await self.emit(
                "discovery.verified",
                {"source": item.source, **present.metadata(item), "warnings": list(item.warnings)},
            )
        decision = decide(verified)
        await self.stage_event(
            "verify",
            "selected" if decision.selected else "rejected",
            started,
            selected=decision.selected.source if decision.selected else None,
            auto_approvable=decision.auto_approvable,
        )
        rejected = tuple(
            {"source": r.source, "reason": r.reason or r.status}
            | ({} if r.builder == "github" else {"builder": r.builder})
            for r in decision.rejected
        )
        offer = self._offer_after_search(decision, outcome)
        if offer is not None:
            return offer
        v = decision.selected
        if v is None:
            reasons = "; ".join(
                f"{r.get('builder', 'github')}:{r['source']}: {r['reason']}" for r in rejected
            )
            raise self._not_found(
                f"web search suggested sources for {self.tool}, but none passed verification "
                f"({reasons})",
                rejected=list(rejected),
            )
        if v.status == "unverified" and self.req.confirm and not self.req.can_ask:
            token = " Set GITHUB_TOKEN for a higher GitHub rate limit and try again," * (
                v.builder == "github"
            )
            raise DiscoveryUnverified(
                f"{v.spec} could not be verified: {v.reason}",
                hint=(
                    f"Unverified sources are never approved automatically.{token} Run it on a "
                    "terminal to decide yourself, or " + FROM_HINT.format(tool=self.tool)
                ),
                source=v.source,
            )
        sources = [(c.url, c.title) for c in outcome.sources if _names(c, v)]
        found = Discovery(
            tool=self.tool,
            session=self.req.session,
            stage="llm",
            builder=v.builder,
            source=v.source,
            install_command=install_command(v.builder, v.source),
            confidence=v.candidate.confidence,
            reason=f"LLM discovery: {v.candidate.reasoning}"
            + (
                f" (evidence: {', '.join(v.candidate.evidence[:2])})"
                if v.candidate.evidence
                else ""
            ),
            metadata=present.metadata(v),
            evidence=v.candidate.evidence,
            sources=tuple(url for url, _t in sources),
            warnings=tuple(v.warnings),
            alternatives=tuple(present.metadata(a) for a in decision.alternatives),
            rejected=rejected,
            provider=outcome.provider,
            model=outcome.model,
            spent_usd=None if self.st.unpriced else float(self.st.spent),
            llm_turns=outcome.turns,
            searches=outcome.searches,
        )
        self._sources = sources
        return found, decision

    async def _probe_package(self, builder: str, package: str) -> ProbeReport:
        """The registry's answer for a package a model named: the ecosystem stage's when
        it asked for the same name, else one probe of that registry."""
        known = [p for p in self.st.probes if p.builder == builder and p.source == package]
        if known or (package.lower() == self.tool and builder not in self.st.unreachable):
            return ProbeReport(matches=known)
        if self.deps.probe_package is None:
            return ProbeReport(errors={builder: "this daemon cannot ask the registry"})
        return await self.deps.probe_package(builder, package)

    async def _check_releases(self, verified: list[Verified]) -> list[Verified]:
        """Whether each verified candidate's latest release has an asset for this
        platform; one that has none gets a warning and is never auto-approved."""
        check = self.deps.release_check
        if check is None:
            return verified
        checked: dict[str, ReleaseCheck] = {}

        async def one(v: Verified) -> None:
            with contextlib.suppress(TsukuError):  # GitHub could not say: claim nothing
                checked[v.source] = await check(v.source)

        async with trio.open_nursery() as nursery:
            for v in verified:
                if v.status == "verified" and v.builder == "github":
                    nursery.start_soon(one, v)
        out = []
        for v in verified:
            rc = checked.get(v.source)
            if rc is not None:
                extra = (rc.note,) if rc.note else ()
                v = msgspec.structs.replace(v, release=rc, warnings=(*v.warnings, *extra))
            out.append(v)
        return out

    def _cleared(self, v: Verified) -> str:
        """Why a candidate clears the bar for a recommendation."""
        if v.builder == "github":
            return f"verified on GitHub, not a fork, {v.popularity}"
        return f"found on {v.builder} and fits {self.tool}, {v.popularity}"

    def _naming(self, builder: str, source: str) -> str:
        return choicesmod.naming(self.tool, builder, source, self.deps.from_prefixes)

    def _near_miss(self) -> str | None:
        squat = self.st.squat
        if squat is None:
            return None
        edits = "1 edit" if squat.distance == 1 else f"{squat.distance} edits"
        return f"{self.tool!r} is {edits} from the known tool {squat.similar!r}"

    def _offer_after_search(self, decision: Decision, outcome: Outcome) -> _Offer | None:
        """A numbered choice instead of one answer: when several candidates clear the bar
        (and no ``--yes`` picks the first), when none does but some could be picked, or
        when the name is a near miss of a known tool. None: the usual single answer."""
        near = self._near_miss()
        recommended = (
            [] if near else [v for v in decision.ranked if v.auto_approvable and v.popular]
        )
        others = [
            v
            for v in (*decision.ranked, *decision.rejected)
            if v not in recommended and choicesmod.offerable(v)
        ]
        eco = self.st.eco_choices
        if len(recommended) == 1:
            return None
        if recommended:
            if self.req.yes or not self.req.confirm:
                return None  # --yes (or a report) takes the first, as ranked
            reason = f"{len(recommended)} clear the bar for a recommendation"
        else:
            if decision.selected is not None and len(others) + len(eco) == 1:
                return None  # one source a person approves: the y/N question
            if not others and not eco:
                return None
            reason = f"none is recommended: {near}" if near else "none clears the bar"

        def why_not(v: Verified) -> str:
            if near:
                return near
            if v.status == "rejected":
                return v.reason or "it did not pass verification"
            return _why_not_auto(v, decision) or "it did not pass the checks"

        choices = [
            choicesmod.from_verified(v, recommended=True, why=self._cleared(v)) for v in recommended
        ]
        choices += [choicesmod.from_verified(v, recommended=False, why=why_not(v)) for v in others]
        named = {c.spec for c in choices}  # a same-name package the model named too: once
        return _Offer([*choices, *(c for c in eco if c.spec not in named)], reason, outcome)

    async def _choose(self, offer: _Offer) -> Discovery:
        tool, choices = self.tool, offer.choices
        text = choicesmod.render(tool, offer.reason, choices)
        options = choicesmod.as_data(choices)
        if not self.req.can_ask:
            refusal = DiscoveryAmbiguous if offer.tie else DiscoveryConfirmationRequired
            raise refusal(
                text,
                hint=choicesmod.how_to_name(tool, choices, self.deps.from_prefixes),
                choices=options,
            )
        question = ConfirmationRequired(
            text,
            question=f"Which source should tsuku use for {tool}?",
            kind="discovery.choice",
            offered=[c.spec for c in choices],
        )
        picked = await self.deps.choose(question, options)
        if picked is None:
            raise DiscoveryDenied(
                f"none of the {len(choices)} sources for {tool} was chosen: nothing was installed",
                hint=_hint(DiscoveryDenied.default_hint, tool),
            )
        chosen = choices[picked - 1]
        outcome = offer.outcome
        await self.progress("chosen", f"using {chosen.spec} for {tool} (your choice)")
        return Discovery(
            tool=tool,
            session=self.req.session,
            stage="llm" if chosen.found_by == "llm" else "ecosystem",
            builder=chosen.kind,
            source=chosen.source,
            reason=f"chosen by the user from {len(choices)} candidates ({offer.reason})",
            confidence=chosen.confidence,
            approval="user",
            install_command=chosen.install_command,
            metadata=msgspec.to_builtins(chosen),
            alternatives=tuple(o for i, o in enumerate(options, 1) if i != picked),
            provider=outcome.provider if outcome else None,
            model=outcome.model if outcome else None,
            spent_usd=None if self.st.unpriced else float(self.st.spent),
            llm_turns=outcome.turns if outcome else 0,
            searches=outcome.searches if outcome else 0,
        )

    # ---- confirmation -----------------------------------------------------------------

    async def _approve_package(self, found: Discovery, probe: Probe) -> None:
        """A same-name package with a repository and real use: a candidate, shown with
        its evidence; a person's yes (or ``--yes``) accepts it. (One with neither never
        gets here: it is a numbered choice, :meth:`_ecosystems`.)"""
        spec = f"{probe.builder}:{probe.source}"
        text = present.describe_ecosystem(found, probe)
        if self.req.yes:
            found.approval = "yes_flag"
            await self.progress(
                "found",
                text + f"\nApproved by --yes: it names its repository and {spec} is used "
                "(its registry's counts above).",
                discovery=found.metadata,
            )
            return
        way = self._naming(probe.builder, probe.source)
        if not self.req.can_ask:
            raise DiscoveryConfirmationRequired(
                f"found {spec} for {self.tool} by its name; a package found by its name "
                "needs a person's approval, and there is no terminal to ask",
                hint=f"Run it again with --yes to accept {spec} (its evidence: "
                f"{evidence_line(probe)}), or name the source yourself: {way}",
                source=probe.source,
            )
        await self._ask_person(found, text, spec, probe.source)

    async def _approve(self, found: Discovery, decision: Decision) -> None:
        v = decision.selected
        assert v is not None
        req = self.req
        text = present.describe_llm(found, v, self._sources)
        found.metadata["auto_approvable"] = decision.auto_approvable and not self._near_miss()
        if not req.confirm:
            await self.progress("found", text, discovery=found.metadata)
            return
        near = self._near_miss()
        why_not = near or _why_not_auto(v, decision)
        if req.yes and decision.auto_approvable and near is None:
            found.approval = "yes_flag"
            await self.progress(
                "found",
                text + f"\nApproved by --yes: {self._cleared(v)}.",
                discovery=found.metadata,
            )
            return
        if not req.can_ask:
            await self.progress("found", text, discovery=found.metadata)
            if why_not:
                parent = v.meta.parent if v.meta and v.meta.fork and v.meta.parent else None
                way = self._naming(v.builder, parent or v.source)
                raise DiscoveryConfirmationRequired(
                    f"{v.spec} needs a person's approval: {why_not}",
                    hint=f"Run it on a terminal to decide, or name the source: {way}",
                    source=v.source,
                )
            raise DiscoveryConfirmationRequired(
                f"found {v.spec} for {self.tool}, but there is no terminal to ask",
                hint=(
                    f"Run it again with --yes to accept {v.spec}, or name the source "
                    f"yourself: {self._naming(v.builder, v.source)}"
                ),
                source=v.source,
            )
        text += f"\nNot approved automatically: {why_not}." if why_not and req.yes else ""
        await self._ask_person(found, text, v.spec, v.source)

    async def _ask_person(self, found: Discovery, text: str, spec: str, source: str) -> None:
        """Ask whether ``spec`` is the source the person means (``text`` says why it
        was found); a no is :class:`DiscoveryDenied`, and nothing is installed."""
        question = ConfirmationRequired(
            text,
            question=f"Install {self.tool} from this source?",
            kind="discovery",
            discovery={"tool": self.tool, **found.metadata},
        )
        try:
            await self.deps.ask(question)
        except UserDeclined:
            raise DiscoveryDenied(
                f"{spec} was not approved: nothing was installed",
                hint="If you know the right source, " + FROM_HINT.format(tool=self.tool),
                source=source,
            ) from None
        found.approval = "user"


def llm_allowance(
    providers: Sequence[tuple[str, str]],
    *,
    searcher: Searcher | None,
    search_fee: Callable[[str], Decimal | None],
    max_searches: int,
) -> dict[str, Any]:
    """What the web-search stage reserves with these ``(name, model)`` providers: the
    arguments of ``LLM.run`` and ``LLM.estimate`` that bound its cost (one rule for
    the stage and for ``eval discover``'s worst case). ``searcher`` counts only when a
    provider does not search by itself."""
    if searcher is not None and all(searches_itself(n) for n, _m in providers):
        searcher = None
    fee = search_fee(searcher.name) if searcher is not None else None
    allowance = worst_case(providers, max_searches=max_searches, search_fee=fee)
    return {
        "max_turns": MAX_TURNS,
        "max_tokens": MAX_TOKENS,
        "input_tokens": INPUT_ESTIMATE,
        "searches": allowance.searches,
        "grounded_prompts": allowance.grounded_prompts,
        "external_search_usd": allowance.external_search_usd,
        # A provider that fails hands over to the next, which starts afresh.
        "restart_on_failover": True,
    }


def _names(result: Citation, v: Verified) -> bool:
    """Whether a search result names the candidate: links to the repository, or mentions
    the package."""
    if v.builder == "github":
        return v.source.lower() in repos_of(result)
    return v.source.lower() in f"{result.url} {result.title} {result.text}".lower()


def _why_not_auto(v: Verified, decision: Decision) -> str:
    if v.status == "unverified":
        return "GitHub could not verify it" if v.builder == "github" else (v.reason or "")
    moved = v.owner_change
    if moved is not None:
        return f"its owner changed from {moved[0]} to {moved[1]} (transferred or redirected)"
    if v.meta is not None and v.meta.fork:
        return "it is a fork"
    if v.release is not None and not v.release.installable:
        return (
            f"it has no release asset for {v.release.platform} (it needs the instructions builder)"
        )
    if not v.popular:
        return "it is not popular enough to approve automatically"
    if not decision.auto_approvable:
        return "it did not pass the checks for automatic approval"
    return ""


def _probe_summary(p: Probe) -> dict[str, Any]:
    return {
        "builder": p.builder,
        "source": p.source,
        "downloads": p.downloads,
        "version_count": p.version_count,
        "has_repository": p.has_repository,
        "summary": describe(p),
        "install_command": install_command(p.builder, p.source),
    }


def _hint(template: str, tool: str) -> str:
    return template.replace("<tool>", tool)


async def discover(req: Request, deps: Deps) -> Discovery:
    """The whole chain; ``discovery.completed`` or ``discovery.failed`` is its last event."""
    chain = _Chain(req, deps)
    try:
        found = await chain.run()
    except BaseException as exc:
        if isinstance(exc, TsukuError):
            code, message, retryable = exc.code, exc.message, exc.retryable
        elif isinstance(exc, Exception):
            code, message, retryable = "internal", f"{type(exc).__name__}: {exc}", False
        else:
            code, message, retryable = "cancelled", "discovery was cancelled", False
        with trio.CancelScope(shield=True):
            await chain.emit(
                "discovery.failed",
                {
                    "stage": chain.st.stage,
                    "error_code": code,
                    "retryable": retryable,
                    "message": message[:1000],
                    "spent_usd": None if chain.st.unpriced else float(chain.st.spent),
                    "ms": chain.machine_ms(),
                },
            )
        raise
    await chain.emit(
        "discovery.completed",
        {
            "stage": found.stage,
            "builder": found.builder,
            "source": found.source,
            "confidence": found.confidence,
            "approval": found.approval,
            "provider": found.provider,
            "spent_usd": found.spent_usd,
            "searches": found.searches,
            "llm_turns": found.llm_turns,
            "ms": found.duration_ms,
        },
    )
    return found
