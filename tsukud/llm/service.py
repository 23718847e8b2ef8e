"""The daemon's LLM service: which providers, in what order, at what cost.

Callers (create, discovery, ``llm test``) open a *run*: the run reserves its expected
worst-case cost (asking the user through the client when that is above the
confirmation threshold) and, when it is a generation, then takes a slot of the hourly
limit, and then makes single-turn calls. The reservation is a ceiling: before each
call the run compares what it has spent plus that call's worst case (the request as it
is now, :mod:`tsukud.llm.ceiling`) with what it reserved, and either extends its
reservation (checked against the budget, asked again above the threshold) or stops
with ``budget_exceeded``.

Each call goes through the providers in order (a chosen provider comes first, the
others after it unless ``only_provider``), each behind its own circuit breaker: an open
breaker, a retryable failure or a rejected key moves on to the next provider (a
``provider.failover`` event); with none left, a retryable failure is retried
(``provider.retry``, honouring ``retry-after``). An ``llm.call_started`` event with the
call's worst case is durable before the request is sent; the call then ends as an
``llm.turn`` (priced from the dated table; unknown price: no ``cost_usd``, never
zero), an ``llm.failed``, or, when it was cut off before its usage was known, an
``llm.cut_off`` charged at its worst case and marked estimated. Leaving the run
settles its reservations at what was actually spent.

Adapters are built lazily (their SDKs take long to import) and kept for as long as what
they were built from (provider, model, key, base URL) is unchanged, so a new key is
used by the next call. ``llm.replay_dir`` serves every provider from recordings (tests,
the demo); ``llm.record_dir`` records real calls.
"""

from __future__ import annotations

import datetime as dt
import importlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud import log
from tsukud.clock import Clock, iso
from tsukud.config import KEYS
from tsukud.errors import (
    BudgetExceeded,
    ConfirmationRequired,
    LedgerUnavailable,
    ProviderUnavailable,
    UsageError,
)
from tsukud.llm.provider import (
    MalformedToolArguments,
    Provider,
    ProviderAuthError,
    ProviderError,
    ProvidersUnreachable,
)
from tsukud.llm.providers import BY_NAME as SPECS
from tsukud.llm.providers import NAMES, ProviderSpec, build, key_variables
from tsukud.llm.types import Request, Response
from tsukud.policy.breaker import CircuitOpen
from tsukud.policy.confirm import Confirmations
from tsukud.progress import Progress, no_progress

if TYPE_CHECKING:
    from tsukud.config import Config
    from tsukud.events.store import EventStore
    from tsukud.llm.pricing import Price, PriceTable
    from tsukud.policy.breaker import CircuitBreakers
    from tsukud.policy.budget import Budget, Grant
    from tsukud.policy.ratelimit import GenerationLimit

PROVIDERS = NAMES
DEFAULT_ORDER = PROVIDERS

# Worst-case input per turn when reserving: system prompt, repository context and tool
# results. Generous on purpose: the unspent part is released when the run settles.
DEFAULT_INPUT_ESTIMATE = 30_000


@dataclass(frozen=True)
class ProviderInfo:
    name: str
    model: str
    base_url: str
    credential: str  # "(set)", "(not set)", "not needed", "replay"
    usable: bool
    reason: str = ""


class LLM:
    def __init__(
        self,
        *,
        config: Callable[[], Config],
        store: EventStore,
        budget: Budget,
        generations: GenerationLimit,
        breakers: CircuitBreakers,
        confirmations: Confirmations,
        clock: Clock,
        sleep: Callable[[float], Awaitable[None]] = trio.sleep,
    ) -> None:
        self._config = config  # read at each use: `config set` applies at once
        self._clock = clock
        self.store = store
        self.budget = budget
        self.generations = generations
        self.breakers = breakers
        self.confirmations = confirmations
        self.sleep = sleep  # waits before a retry (tests jump the clock)
        self._providers: dict[tuple[str, ...], Provider] = {}
        self._retired: list[Provider] = []
        self._prices: tuple[tuple[str, int], PriceTable] | None = None

    # ---- configuration -------------------------------------------------------------

    def info(self, name: str) -> ProviderInfo:
        spec = SPECS.get(name)
        if spec is None:
            raise UsageError(
                f"unknown LLM provider {name!r}", hint=f"Choose from: {', '.join(PROVIDERS)}."
            )
        c = self._config()
        key, model, url = c[spec.key_setting], c[spec.model_setting], c[spec.url_setting]
        if c["llm.replay_dir"]:
            return ProviderInfo(
                name, model, url if spec.key_required else (url or "-"), "replay", True
            )
        if not spec.key_required:  # a local server: its URL is what it needs
            if not url:
                setting = KEYS[spec.url_setting]
                return ProviderInfo(
                    name,
                    model,
                    "-",
                    "not needed",
                    False,
                    f"set {spec.url_setting} ({setting.env[0]}) to a local server",
                )
            return ProviderInfo(name, model, url, "(set)" if key else "not needed", True)
        if not key:
            secret = spec.key_setting.removeprefix("secrets.")
            return ProviderInfo(
                name,
                model,
                url,
                "(not set)",
                False,
                f"no API key: set {spec.key_env[0]} or `tsukuctl config set secrets.{secret}`",
            )
        return ProviderInfo(name, model, url, "(set)", True)

    def order(self, requested: str | None = None, *, only: bool | None = None) -> list[str]:
        """Provider order: the flag, else llm.provider (env TSUKU_LLM_PROVIDER, config),
        first; then the other providers, unless ``only`` (else llm.only_provider)."""
        c = self._config()
        raw = requested or c["llm.provider"] or ",".join(DEFAULT_ORDER)
        names = list(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
        for n in names:
            self.info(n)  # validates the name
        if not (c["llm.only_provider"] if only is None else only):
            names += [n for n in DEFAULT_ORDER if n not in names]
        return names

    def usable(self, requested: str | None = None, *, only: bool | None = None) -> list[str]:
        names = self.order(requested, only=only)
        usable = [n for n in names if self.info(n).usable]
        if not usable:
            # One short clause per provider (the whole of each reason is `llm status`'s):
            # the message is read in a terminal, often inside discovery's own.
            reasons = "; ".join(f"{n}: {self.info(n).reason.split(':')[0]}" for n in names)
            raise ProviderUnavailable(
                f"no LLM provider is configured ({reasons})",
                hint=f"Set {key_variables()}, or point TSUKU_OPENAI_BASE_URL at a local "
                "server; `tsukuctl llm status` shows each provider and how to set it.",
            )
        return usable

    def prices(self) -> PriceTable:
        from tsukud.llm.pricing import PriceTable, default_table

        extra = self._config()["llm.prices_file"]
        if not extra:
            return default_table()
        try:
            stamp = (extra, Path(extra).stat().st_mtime_ns)
            if self._prices is None or self._prices[0] != stamp:
                text = Path(extra).read_text(encoding="utf-8")
                self._prices = (stamp, PriceTable.from_toml(text, fallback=default_table()))
            return self._prices[1]
        except (OSError, ValueError) as e:
            from tsukud.errors import ConfigError

            raise ConfigError(f"llm.prices_file {extra}: {e}") from None

    def price(self, name: str) -> Price | None:
        return self.prices().price(self.info(name).model, self.today())

    def today(self) -> dt.date:
        """The UTC day on the daemon's clock: prices are valid by date."""
        return dt.datetime.fromtimestamp(self._clock.now(), dt.UTC).date()

    async def ready(self, name: str) -> None:
        """Import ``name``'s SDK in a worker thread the first time: the SDKs take a second
        or more to import, which in the event loop would stall every other request (and
        a discovery deadline could expire before the request was even sent)."""
        spec = SPECS.get(name)
        module = spec.adapter_module if spec is not None and spec.slow_import else None
        if module is not None and module not in sys.modules:
            await trio.to_thread.run_sync(importlib.import_module, module)

    def provider(self, name: str) -> Provider:
        """The adapter for ``name`` as configured now: one built from another key, model
        or URL is retired (closed with the service; a call may still be using it)."""
        info = self.info(name)
        cache_key = self._built_from(info)
        current = self._providers.get(cache_key)
        if current is None:
            for old in [k for k in self._providers if k[0] == name]:
                self._retired.append(self._providers.pop(old))
            current = self._providers[cache_key] = self._build(info)
        return current

    def replaying(self) -> bool:
        """Every provider answers from recordings (``llm.replay_dir``): a run spends
        nothing, so it reserves nothing and its turns are recorded as replayed."""
        return bool(self._config()["llm.replay_dir"])

    def _built_from(self, info: ProviderInfo) -> tuple[str, ...]:
        """What an adapter is built from; the key only as a fingerprint."""
        import hashlib

        c = self._config()
        key = c[SPECS[info.name].key_setting] or ""
        fingerprint = hashlib.sha256(key.encode()).hexdigest()[:16] if key else ""
        return (
            info.name,
            info.model,
            info.base_url,
            fingerprint,
            c["llm.replay_dir"],
            c["llm.record_dir"],
            self._proxy(info) or "",
        )

    def _proxy(self, info: ProviderInfo) -> str | None:
        """The proxy the settings in force (a caller's ``HTTPS_PROXY`` too) name for
        this provider's URL."""
        from tsukud.net.proxy import proxies, proxy_for

        return proxy_for(info.base_url, proxies(self._config()))

    def _build(self, info: ProviderInfo) -> Provider:
        c = self._config()
        if c["llm.replay_dir"]:
            from tsukud.llm.replay import ReplayProvider

            return ReplayProvider(c["llm.replay_dir"], name=info.name, model=info.model)
        spec = SPECS[info.name]
        inner = build(
            spec,
            key=c[spec.key_setting],
            model=info.model,
            base_url=info.base_url,
            proxy=self._proxy(info),
        )
        if c["llm.record_dir"]:
            from tsukud.llm.replay import RecordingProvider

            return RecordingProvider(inner, c["llm.record_dir"], secrets=c.secret_values())
        return inner

    async def aclose(self) -> None:
        for p in [*self._providers.values(), *self._retired]:
            await p.aclose()
        self._providers.clear()
        self._retired.clear()

    # ---- money -----------------------------------------------------------------------

    def estimate(
        self,
        names: list[str],
        *,
        max_turns: int,
        max_tokens: int,
        input_tokens: int,
        searches: int = 0,
        grounded_prompts: int = 0,
        external_search_usd: Decimal = Decimal(0),
        restart_on_failover: bool = False,
    ) -> Decimal | None:
        """The most a run may spend; ``None`` when a price it may need is unknown.

        Per provider: ``max_turns`` turns of ``input_tokens`` in and ``max_tokens`` out,
        plus up to ``searches`` server-side web searches and ``grounded_prompts``
        grounded requests (a spec's ``search``: ``server``, ``grounded``) at the price
        row's fees. Over the providers the run may fail over to: the dearest one, or
        the sum when ``restart_on_failover`` (each provider may start the work over, as
        discovery does). ``external_search_usd`` is the most the caller itself charges
        to the run outside any provider (paid search APIs for local models), added once.
        """
        if self.unknown_prices(names, searches=searches, grounded_prompts=grounded_prompts):
            return None
        costs = [Decimal(0)]
        for n in names:
            if not SPECS[n].priced:
                continue  # self-hosted: no per-token price
            p = self.price(n)
            assert p is not None
            r = p.rates(input_tokens)
            per_turn = (input_tokens * r.input + max_tokens * r.output) / Decimal(1_000_000)
            fees = _fees(SPECS[n], p, searches=searches, grounded_prompts=grounded_prompts)
            assert fees is not None  # unknown fees were refused above
            costs.append(per_turn * max_turns + fees)
        worst = sum(costs, Decimal(0)) if restart_on_failover else max(costs)
        return worst + external_search_usd

    def unknown_prices(
        self, names: list[str], *, searches: int = 0, grounded_prompts: int = 0
    ) -> list[str]:
        """What a run over ``names`` may be charged for without a known price: unpriced
        models, and fees a used model's row leaves out (never counted as zero)."""
        unknown = []
        for n in names:
            spec = SPECS[n]
            if not spec.priced:
                continue
            model = self.info(n).model
            p = self.price(n)
            if p is None:
                unknown.append(model)
                continue
            if spec.grounded:
                if _fees(spec, p, searches=0, grounded_prompts=grounded_prompts) is None:
                    unknown.append(f"{model} grounded prompts")
                continue
            if searches and p.per_search is None:
                unknown.append(f"{model} web searches")
            if grounded_prompts and p.per_grounded_prompt is None:
                unknown.append(f"{model} grounded prompts")
        return unknown

    @asynccontextmanager
    async def run(
        self,
        *,
        session: str,
        purpose: str,
        providers: str | None = None,
        only_provider: bool | None = None,
        max_turns: int,
        max_tokens: int,
        input_tokens: int = DEFAULT_INPUT_ESTIMATE,
        searches: int = 0,
        grounded_prompts: int = 0,
        external_search_usd: Decimal = Decimal(0),
        restart_on_failover: bool = False,
        confirmed: bool = False,
        can_ask: bool = False,
        progress: Progress | None = None,
        generation_tool: str | None = None,
    ) -> AsyncIterator[Run]:
        names = self.usable(providers, only=only_provider)
        # A replay spends nothing and calls no provider (its turns are answered from a
        # recording): it reserves nothing and takes no slot of the hourly limit.
        replayed = self.replaying()
        if generation_tool is not None and not replayed:
            # Refuse a full hour before asking anyone; the slot itself is taken only
            # once the run is admitted (budget and confirmation passed).
            await self.generations.check(session=session, tool=generation_tool)
        estimate = self.estimate(
            names,
            max_turns=max_turns,
            max_tokens=max_tokens,
            input_tokens=input_tokens,
            searches=searches,
            grounded_prompts=grounded_prompts,
            external_search_usd=external_search_usd,
            restart_on_failover=restart_on_failover,
        )
        # Without a known price, at least what is known is reserved.
        amount = (
            0.0 if replayed else float(estimate if estimate is not None else external_search_usd)
        )
        asker = _Asker(self.confirmations, session, confirmed, can_ask, progress)
        if estimate is None and not confirmed and not replayed:
            unpriced = self.unknown_prices(
                names, searches=searches, grounded_prompts=grounded_prompts
            )
            await asker.ask(
                ConfirmationRequired(
                    f"the price of {', '.join(unpriced)} is unknown, "
                    "so this run's cost cannot be bounded",
                    hint="Run it again with --yes to accept, or add the model to llm.prices_file.",
                    estimate_usd=None,
                )
            )
        grant = await asker.reserve(self.budget, amount, purpose=purpose)
        if generation_tool is not None:
            try:
                await self.generations.start(
                    session=session, tool=generation_tool, purpose=purpose, replayed=replayed
                )
            except BaseException:
                with trio.CancelScope(shield=True):
                    await self.budget.settle(grant.reservation, 0.0, session=session)
                raise
        r = Run(
            self,
            session=session,
            purpose=purpose,
            names=names,
            reservation=grant.reservation,
            reserved_usd=grant.amount_usd,
            asker=asker,
        )
        try:
            yield r
        finally:
            with trio.CancelScope(shield=True):
                await r.settle()


def _fees(
    spec: ProviderSpec, price: Price, *, searches: int, grounded_prompts: int
) -> Decimal | None:
    """The most a run's search fees may come to on provider ``spec``: ``searches`` at
    its per-search fee, or, for a grounded provider, ``grounded_prompts`` each at the
    bound of one grounded request (per prompt plus per query); ``None`` when unpriced."""
    from tsukud.llm.ceiling import search_fees

    if spec.grounded:
        one = search_fees(price, searches=1 if grounded_prompts else 0, grounded=True)
        return None if one is None else grounded_prompts * one
    fees = Decimal(0)
    for count, fee in ((searches, price.per_search), (grounded_prompts, price.per_grounded_prompt)):
        if count:
            if fee is None:
                return None
            fees += count * fee
    return fees


@dataclass
class _Asker:
    """How a run asks the user about money: once answered yes (or ``--yes``), a later
    extension of the same run is not asked again."""

    confirmations: Confirmations
    session: str
    confirmed: bool
    can_ask: bool
    progress: Progress | None

    async def ask(self, question: ConfirmationRequired) -> None:
        await self.confirmations.ask(
            no_progress if self.progress is None else self.progress,
            can_ask=self.can_ask and self.progress is not None,
            session=self.session,
            question=question,
        )
        self.confirmed = True

    async def reserve(
        self,
        budget: Budget,
        amount: float,
        *,
        purpose: str,
        extends: str | None = None,
        prior_usd: float = 0.0,
    ) -> Grant:
        try:
            return await budget.reserve(
                amount,
                session=self.session,
                purpose=purpose,
                confirmed=self.confirmed,
                extends=extends,
                prior_usd=prior_usd,
            )
        except ConfirmationRequired as question:
            await self.ask(question)
            return await budget.reserve(
                amount,
                session=self.session,
                purpose=purpose,
                confirmed=True,
                extends=extends,
                prior_usd=prior_usd,
            )


def is_replay(provider: Provider) -> bool:
    """Does ``provider`` answer from a recording (``llm/replay.py``), spending nothing?"""
    return getattr(provider, "replayed", False) is True


def out_of_reach(failures: list[ProviderError]) -> ProvidersUnreachable:
    """Every provider tried was out of reach: the error names each one's API and the
    setting (and variable) that points at it, as every unreachable service does."""
    from tsukud.net.reach import Place, as_data, described, hint_for

    places = []
    why = []
    for e in failures:
        spec = SPECS[str(e.data.get("provider"))]
        place = Place(
            f"{spec.name} API", str(e.data.get("url", spec.default_url)), spec.url_setting
        )
        places.append(place)
        why.append(f"{described(place)} cannot be reached: {e.message}")
    return ProvidersUnreachable(
        "every LLM provider failed: " + "; ".join(why),
        hint=hint_for(places),
        providers=[str(e.data.get("provider")) for e in failures],
        places=as_data(places),
    )


MAX_RETRIES = 2  # of a transient failure when no other provider is left
RETRY_BACKOFF_S = 1.0  # first wait when the provider did not say (doubles)
MAX_RETRY_WAIT_S = 60.0
LEDGER_RETRY_S = 0.5  # a billed call's turn waits for a shared ledger out of reach


@dataclass
class Run:
    llm: LLM
    session: str
    purpose: str
    names: list[str]
    reservation: str  # the first; extensions name it in ``extends``
    reserved_usd: float  # all of the run's reservations together
    asker: _Asker | None = None
    spent: Decimal = Decimal(0)
    replayed: Decimal = Decimal(0)  # replayed turns' recorded cost: never spent
    unpriced_turns: int = 0
    turns: int = 0
    calls: int = 0
    failovers: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    extensions: list[tuple[str, float]] = field(default_factory=list)

    async def settle(self) -> None:
        """Each reservation at its share of what the run spent, in the order taken."""
        from tsukud.llm.ceiling import allocate

        held = [(self.reservation, self.reserved_usd - sum(a for _r, a in self.extensions))]
        held += self.extensions
        shares = allocate(self.spent, [Decimal(str(a)) for _r, a in held])
        for (rid, _amount), share in zip(held, shares, strict=True):
            await self.llm.budget.settle(rid, float(share), session=self.session)

    def keep_hint(self, e: ProviderError) -> None:
        """Remember why a provider was passed over (a rejected key) for the result: the
        run succeeded elsewhere, but the user still has a key to fix."""
        self.warnings.append(f"{e.message} ({e.hint})" if e.hint else e.message)

    async def complete(self, request: Request, *, only: str | None = None) -> Response:
        """One model call, failing over along the run's providers.

        A transient failure moves on to the next provider; with none left it is retried
        (``retry-after`` honoured) up to :data:`MAX_RETRIES` times while the caller's
        deadline allows. An authentication or permission error moves on too (the hint
        about the key is kept in ``warnings``); with none left it is raised as is.
        """
        errors: list[str] = []
        unreached: list[ProviderError] = []  # failed as out of reach (tsukud.net.retry)
        retry_ats: list[float] = []
        candidates = [only] if only else self.names
        for i, name in enumerate(candidates):
            nxt = candidates[i + 1] if i + 1 < len(candidates) else None
            attempt = 0
            while True:
                try:
                    return await self._attempt(name, request)
                except CircuitOpen as e:
                    errors.append(f"{name}: {e.message}")
                    at = self.llm.breakers.retry_at(name)
                    if at is not None:
                        retry_ats.append(at)
                    await self._failover(name, nxt, "circuit_open")
                    break
                except MalformedToolArguments:
                    raise
                except ProviderAuthError as e:
                    if nxt is None:
                        raise
                    self.keep_hint(e)
                    errors.append(f"{name}: {e.message}")
                    await self._failover(name, nxt, e.code)
                    break
                except ProviderError as e:
                    if not e.retryable:
                        raise
                    alone = nxt is None and (only is None or len(self.names) == 1)
                    wait = self._retry_wait(e, attempt) if alone else None
                    if wait is not None:
                        attempt += 1
                        await self._retry(name, attempt, e.code, wait)
                        continue
                    errors.append(f"{name}: {e.message}")
                    if getattr(e, "unreachable", None):
                        unreached.append(e)
                    await self._failover(name, nxt, e.code)
                    break
        if unreached and len(unreached) == len(errors):
            raise out_of_reach(unreached)
        retry = min(retry_ats) if retry_ats else None
        raise ProviderUnavailable(
            "every LLM provider failed: " + "; ".join(errors),
            hint=(
                f"The first one is retried at {iso(retry)}."
                if retry
                else "Try again later, or configure another provider (docs/config.md)."
            ),
            retry_at=iso(retry) if retry else None,
        )

    def _retry_wait(self, e: ProviderError, attempt: int) -> float | None:
        """How long to wait before trying ``e``'s provider again; ``None``: don't."""
        if attempt >= MAX_RETRIES or getattr(e, "unreachable", None):
            return None  # an unreachable host stays so for seconds (tsukud.net.retry)
        said = e.data.get("retry_after")
        wait = float(said) if isinstance(said, int | float) else RETRY_BACKOFF_S * 2**attempt
        if wait > MAX_RETRY_WAIT_S:
            return None
        if trio.current_time() + wait >= trio.current_effective_deadline():
            return None  # the answer could not come before the caller's deadline
        return wait

    async def _retry(self, name: str, attempt: int, reason: str, wait: float) -> None:
        item = {"provider": name, "attempt": attempt, "reason": reason, "wait_s": wait}
        ev = self.llm.store.append_nowait("provider.retry", item, self.session)
        await self.llm.store.wait_durable(ev.id)
        log.get().info("llm.retry", **item)
        await self.llm.sleep(wait)

    async def _attempt(self, name: str, request: Request) -> Response:
        """One request to ``name``: within the ceiling, announced before it is sent,
        and accounted for however it ends. A replay (answered from a recording) asks no
        provider: the provider's breaker neither refuses it nor hears how it went."""
        entered = not self.llm.replaying()
        if entered:
            await self.llm.breakers.enter(name, session=self.session)
        try:
            if entered:
                await self.llm.ready(name)
            provider = self.llm.provider(name)
            replayed = is_replay(provider)
            if replayed and entered:
                entered = False  # the settings turned to a replay meanwhile
                await self.llm.breakers.call_released(name)
            worst = (
                Decimal(0)  # answered from a recording: nothing is sent, nothing billed
                if replayed
                else await self._within_ceiling(name, provider.model, request)
            )
            self.calls += 1
            call = self.calls
            ahead: dict[str, Any] = {
                "provider": name,
                "model": provider.model,
                "purpose": self.purpose,
                "reservation": self.reservation,
                "call": call,
            }
            if worst is not None:
                ahead["worst_case_usd"] = float(round(worst, 9))
            ev = self.llm.store.append_nowait("llm.call_started", ahead, self.session)
            await self.llm.store.wait_durable(ev.id)  # on disk before any money moves
        except BaseException:
            if entered:
                with trio.CancelScope(shield=True):
                    await self.llm.breakers.call_released(name)
            raise
        started = time.monotonic()
        try:
            response = await provider.complete(request)
        except MalformedToolArguments as e:
            # The provider is up and billed the call; the caller gives the model
            # feedback and asks again. Not a breaker failure.
            await self._record(
                name,
                e.model or provider.model,
                e.usage,
                None,
                started,
                call,
                error=e.code,
                replayed=replayed,
            )
            raise
        except ProviderError as e:
            if e.unanswered is not None:
                # Maybe sent, and no usage came back (timed out, body cut, connection
                # broken after writing, unreadable answer): what it may have cost.
                await self._cut_off(name, provider.model, call, worst, e.unanswered, started)
            details = {
                "model": provider.model,
                "status": e.status,
                "purpose": self.purpose,
                "reservation": self.reservation,
                "call": call,
            }
            if replayed:  # the recording missed: on the ledger, not on the breaker
                failed = {**details, "provider": name, "error_type": e.code, "breaker": False}
                ev = self.llm.store.append_nowait(
                    "llm.failed", {**failed, "replayed": True}, self.session
                )
            else:
                ev = await self.llm.breakers.call_failed(
                    name, e.code, counts=e.retryable, session=self.session, details=details
                )
            await self.llm.store.wait_durable(ev.id)
            raise
        except BaseException:
            with trio.CancelScope(shield=True):
                if entered:
                    await self.llm.breakers.call_released(name)
                await self._cut_off(name, provider.model, call, worst, "cancelled", started)
            raise
        await self._record(
            name, response.model, response.usage, response, started, call, replayed=replayed
        )
        return response

    async def _within_ceiling(self, name: str, model: str, request: Request) -> Decimal | None:
        """This call's worst case, after making sure the run's reservations cover it
        on top of what the run has spent (extending them, or refusing)."""
        from tsukud.llm.ceiling import call_worst_case

        spec = SPECS[name]
        if not spec.priced:
            return Decimal(0)
        price = self.llm.prices().price(model, self.llm.today())
        if price is None:
            return None  # unbounded; the user accepted that when the run began
        worst = call_worst_case(price, request, grounded=spec.grounded)
        if worst is None:
            return None
        reserved = Decimal(str(self.reserved_usd))
        if self.spent + worst <= reserved:
            return worst
        extra = float(worst)
        try:
            if self.asker is None:
                raise BudgetExceeded("this run cannot extend its reservation")
            grant = await self.asker.reserve(
                self.llm.budget,
                extra,
                purpose=self.purpose,
                extends=self.reservation,
                prior_usd=self.reserved_usd,
            )
        except BudgetExceeded as e:
            raise BudgetExceeded(
                f"this run has spent ${self.spent:.4f} of the ${reserved:.4f} it reserved; "
                f"its next call may cost up to ${worst:.4f} more, which today's budget "
                f"cannot hold ({e.message})",
                hint="Raise the budget (`tsukuctl config set llm.daily_budget <usd>`) and "
                "run it again, or try again tomorrow (UTC). Nothing more was charged.",
                spent_usd=float(self.spent),
                reserved_usd=self.reserved_usd,
                next_call_usd=float(worst),
            ) from None
        self.extensions.append((grant.reservation, grant.amount_usd))
        self.reserved_usd += grant.amount_usd
        return worst

    async def _failover(self, frm: str, to: str | None, reason: str) -> None:
        if to is None:
            return  # nowhere left to go: the caller gets the combined error
        item = {"from": frm, "to": to, "reason": reason}
        self.failovers.append(item)
        ev = self.llm.store.append_nowait("provider.failover", item, self.session)
        await self.llm.store.wait_durable(ev.id)
        log.get().info("llm.failover", **item)

    async def _cut_off(
        self,
        name: str,
        model: str,
        call: int,
        worst: Decimal | None,
        reason: str,
        started: float,
    ) -> None:
        """A call that was sent and never told us its usage: charged at its worst case,
        marked estimated (``llm.cut_off``), so the ledger never undercounts."""
        payload: dict[str, Any] = {
            "provider": name,
            "model": model,
            "purpose": self.purpose,
            "reservation": self.reservation,
            "call": call,
            "reason": reason,
            "estimated": True,
            "duration_ms": round((time.monotonic() - started) * 1000),
        }
        if worst is None:
            self.unpriced_turns += 1
        else:
            self.spent += worst
            payload["cost_usd"] = float(round(worst, 9))
        ev = self.llm.store.append_nowait("llm.cut_off", payload, self.session)
        await self.llm.store.wait_durable(ev.id)

    async def _record(
        self,
        name: str,
        model: str,
        usage: Any,
        response: Response | None,
        started: float,
        call: int,
        *,
        error: str | None = None,
        replayed: bool = False,
    ) -> None:
        """The turn on the ledger, priced. A replayed turn (``replayed``: answered from a
        recording) spent nothing: its ``cost_usd`` is 0, what the recorded call cost is
        kept apart as ``replayed_cost_usd`` (for eval's figures and the "replayed: $X
        not spent" lines), and neither the run's spend nor the day's budget counts it."""
        from tsukud.llm.types import Usage

        u = usage if isinstance(usage, Usage) else Usage()
        priced = SPECS[name].priced
        price = self.llm.prices().price(model, self.llm.today()) if priced else None
        cost = (price.cost(u) if price else None) if priced else Decimal(0)
        self.turns += 1
        payload: dict[str, Any] = {
            "model": model,
            "purpose": self.purpose,
            "turn": self.turns,
            "call": call,
            "reservation": self.reservation,
            "input_tokens": u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
            "output_tokens": u.output_tokens + u.thoughts_tokens,
            "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens,
            "thoughts_tokens": u.thoughts_tokens,
            "web_search_requests": u.web_search_requests,
            "grounded_prompts": u.grounded_prompts,
            "duration_ms": round((time.monotonic() - started) * 1000),
        }
        if response is not None:
            payload["stop_reason"] = str(response.stop_reason)
            payload["request_id"] = response.request_id
        if error:
            payload["error"] = error
        if replayed:
            payload["replayed"] = True
            payload["cost_usd"] = 0.0
            if cost is not None:
                self.replayed += cost
                payload["replayed_cost_usd"] = float(round(cost, 9))
        elif cost is None:
            self.unpriced_turns += 1
        else:
            self.spent += cost
            payload["cost_usd"] = float(round(cost, 9))
        while True:
            try:
                if replayed:  # no provider answered: its breaker hears nothing
                    payload["provider"] = name
                    ev = self.llm.store.append_nowait("llm.turn", payload, self.session)
                else:
                    ev = await self.llm.breakers.call_succeeded(name, payload, session=self.session)
                break
            except LedgerUnavailable:
                # A shared ledger out of reach: the call was billed, so its turn waits
                # for the ledger (no next call could be announced meanwhile anyway).
                # Cancelled while waiting, the next start charges it as cut off.
                await trio.sleep(LEDGER_RETRY_S)
        await self.llm.store.wait_durable(ev.id)  # durable before the caller's next call
