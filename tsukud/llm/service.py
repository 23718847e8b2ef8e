"""The daemon's LLM service: which providers, in what order, at what cost.

Callers (create, discovery, ``llm test``) open a *run*: the run admits itself against
the hourly limit when it is a generation, reserves its worst-case cost (asking the user
through the client when that is above the confirmation threshold), and then makes
single-turn calls. Each call goes through the providers in order, each behind its own
circuit breaker: an open breaker or a retryable failure moves on to the next provider
(a ``provider.failover`` event), a non-retryable one stops. Every completed call is an
``llm.turn`` event, durable before the caller can make its next call, priced from the
dated table (unknown price: no ``cost_usd``, never zero). Leaving the run settles the
reservation at what was actually spent.

Adapters are built lazily (their SDKs take long to import) and kept for the daemon's
life. ``llm.replay_dir`` serves every provider from recordings (tests, the demo);
``llm.record_dir`` records real calls.
"""

from __future__ import annotations

import datetime as dt
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
from tsukud.errors import ConfirmationRequired, ProviderUnavailable, UsageError
from tsukud.llm.provider import MalformedToolArguments, Provider, ProviderError
from tsukud.llm.types import Request, Response
from tsukud.policy.breaker import CircuitOpen
from tsukud.policy.confirm import Confirmations

if TYPE_CHECKING:
    from tsukud.config import Config
    from tsukud.events.store import EventStore
    from tsukud.llm.pricing import Price, PriceTable
    from tsukud.policy.breaker import CircuitBreakers
    from tsukud.policy.budget import Budget
    from tsukud.policy.ratelimit import GenerationLimit

PROVIDERS = ("claude", "gemini", "local")
DEFAULT_ORDER = PROVIDERS

# Worst-case input per turn when reserving: system prompt, repository context and tool
# results. Generous on purpose: the unspent part is released when the run settles.
DEFAULT_INPUT_ESTIMATE = 30_000

Progress = Callable[[dict[str, Any]], Awaitable[None]]


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
    ) -> None:
        self._config = config  # read at each use: `config set` applies at once
        self._clock = clock
        self.store = store
        self.budget = budget
        self.generations = generations
        self.breakers = breakers
        self.confirmations = confirmations
        self._providers: dict[tuple[str, str], Provider] = {}
        self._prices: tuple[tuple[str, int], PriceTable] | None = None

    # ---- configuration -------------------------------------------------------------

    def info(self, name: str) -> ProviderInfo:
        c = self._config()
        replay = bool(c["llm.replay_dir"])
        if name == "claude":
            key, model, url = (
                c["secrets.anthropic_api_key"],
                c["llm.claude_model"],
                c["llm.anthropic_base_url"],
            )
            env_hint = "ANTHROPIC_API_KEY"
        elif name == "gemini":
            key, model, url = (
                c["secrets.google_api_key"],
                c["llm.gemini_model"],
                c["llm.gemini_base_url"],
            )
            env_hint = "GOOGLE_API_KEY"
        elif name == "local":
            url, model = c["llm.openai_base_url"], c["llm.local_model"]
            if replay:
                return ProviderInfo(name, model, url or "-", "replay", True)
            if not url:
                return ProviderInfo(
                    name,
                    model,
                    "-",
                    "not needed",
                    False,
                    "set llm.openai_base_url (TSUKU_OPENAI_BASE_URL) to a local server",
                )
            cred = "(set)" if c["secrets.openai_api_key"] else "not needed"
            return ProviderInfo(name, model, url, cred, True)
        else:
            raise UsageError(
                f"unknown LLM provider {name!r}", hint=f"Choose from: {', '.join(PROVIDERS)}."
            )
        if replay:
            return ProviderInfo(name, model, url, "replay", True)
        if not key:
            return ProviderInfo(
                name,
                model,
                url,
                "(not set)",
                False,
                f"no API key: set {env_hint} or `tsukuctl config set secrets.{_secret_key(name)}`",
            )
        return ProviderInfo(name, model, url, "(set)", True)

    def order(self, requested: str | None = None) -> list[str]:
        """Provider order: the flag, else llm.provider (env TSUKU_LLM_PROVIDER, config)."""
        raw = requested or self._config()["llm.provider"] or ",".join(DEFAULT_ORDER)
        names = [n.strip() for n in raw.split(",") if n.strip()]
        for n in names:
            self.info(n)  # validates the name
        return names

    def usable(self, requested: str | None = None) -> list[str]:
        names = self.order(requested)
        usable = [n for n in names if self.info(n).usable]
        if not usable:
            reasons = "; ".join(f"{n}: {self.info(n).reason}" for n in names)
            raise ProviderUnavailable(
                f"no LLM provider is configured ({reasons})",
                hint="Set ANTHROPIC_API_KEY or GOOGLE_API_KEY, or point "
                "TSUKU_OPENAI_BASE_URL at a local server (docs/config.md).",
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

    def provider(self, name: str) -> Provider:
        info = self.info(name)
        cache_key = (name, info.model)
        if cache_key not in self._providers:
            self._providers[cache_key] = self._build(info)
        return self._providers[cache_key]

    def _build(self, info: ProviderInfo) -> Provider:
        c = self._config()
        if c["llm.replay_dir"]:
            from tsukud.llm.replay import ReplayProvider

            return ReplayProvider(c["llm.replay_dir"], name=info.name, model=info.model)
        inner: Provider
        if info.name == "claude":
            from tsukud.llm.claude import ClaudeProvider

            inner = ClaudeProvider(
                c["secrets.anthropic_api_key"], model=info.model, base_url=info.base_url
            )
        elif info.name == "gemini":
            from tsukud.llm.gemini import GeminiProvider

            inner = GeminiProvider(
                c["secrets.google_api_key"], model=info.model, base_url=info.base_url
            )
        else:
            from tsukud.llm.openai_compat import OpenAICompatProvider

            inner = OpenAICompatProvider(
                info.base_url, model=info.model, api_key=c["secrets.openai_api_key"] or None
            )
        if c["llm.record_dir"]:
            from tsukud.llm.replay import RecordingProvider

            return RecordingProvider(inner, c["llm.record_dir"], secrets=c.secret_values())
        return inner

    async def aclose(self) -> None:
        for p in self._providers.values():
            await p.aclose()
        self._providers.clear()

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
        plus up to ``searches`` server-side web searches (Claude) and
        ``grounded_prompts`` requests grounded with Google Search (Gemini) at the price
        row's fees. Over the providers the run may fail over to: the dearest one, or
        the sum when ``restart_on_failover`` (each provider may start the work over, as
        discovery does). ``external_search_usd`` is the most the caller itself charges
        to the run outside any provider (paid search APIs for local models), added once.
        """
        if self.unknown_prices(names, searches=searches, grounded_prompts=grounded_prompts):
            return None
        costs = [Decimal(0)]
        for n in names:
            if n == "local":
                continue  # self-hosted: no per-token price
            p = self.price(n)
            assert p is not None
            per_turn = (input_tokens * p.input + max_tokens * p.output) / Decimal(1_000_000)
            search_fee = p.per_search or Decimal(0)  # unknown fees were refused above
            grounding_fee = p.per_grounded_prompt or Decimal(0)
            fees = searches * search_fee + grounded_prompts * grounding_fee
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
            if n == "local":
                continue
            model = self.info(n).model
            p = self.price(n)
            if p is None:
                unknown.append(model)
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
        names = self.usable(providers)
        if generation_tool is not None:
            await self.generations.start(session=session, tool=generation_tool, purpose=purpose)
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
        amount = float(estimate if estimate is not None else external_search_usd)
        try:
            if estimate is None and not confirmed:
                unpriced = self.unknown_prices(
                    names, searches=searches, grounded_prompts=grounded_prompts
                )
                raise ConfirmationRequired(
                    f"the price of {', '.join(unpriced)} is unknown, "
                    "so this run's cost cannot be bounded",
                    hint="Run it again with --yes to accept, or add the model to llm.prices_file.",
                    estimate_usd=None,
                )
            grant = await self.budget.reserve(
                amount, session=session, purpose=purpose, confirmed=confirmed
            )
        except ConfirmationRequired as question:
            noop = _noop_progress if progress is None else progress
            await self.confirmations.ask(
                noop,
                can_ask=can_ask and progress is not None,
                session=session,
                question=question,
            )
            grant = await self.budget.reserve(
                amount, session=session, purpose=purpose, confirmed=True
            )
        r = Run(
            self,
            session=session,
            purpose=purpose,
            names=names,
            reservation=grant.reservation,
            reserved_usd=grant.amount_usd,
        )
        try:
            yield r
        finally:
            with trio.CancelScope(shield=True):
                await self.budget.settle(grant.reservation, float(r.spent), session=session)


async def _noop_progress(_body: dict[str, Any]) -> None:
    return None


def _secret_key(name: str) -> str:
    return {"claude": "anthropic_api_key", "gemini": "google_api_key"}.get(name, "openai_api_key")


@dataclass
class Run:
    llm: LLM
    session: str
    purpose: str
    names: list[str]
    reservation: str
    reserved_usd: float
    spent: Decimal = Decimal(0)
    unpriced_turns: int = 0
    turns: int = 0
    failovers: list[dict[str, Any]] = field(default_factory=list)

    async def complete(self, request: Request, *, only: str | None = None) -> Response:
        """One model call, failing over along the run's providers."""
        errors: list[str] = []
        retry_ats: list[float] = []
        candidates = [only] if only else self.names
        for i, name in enumerate(candidates):
            nxt = candidates[i + 1] if i + 1 < len(candidates) else None
            try:
                self.llm.breakers.acquire(name, session=self.session)
            except CircuitOpen as e:
                errors.append(f"{name}: {e.message}")
                at = self.llm.breakers.retry_at(name)
                if at is not None:
                    retry_ats.append(at)
                await self._failover(name, nxt, "circuit_open")
                continue
            provider = self.llm.provider(name)
            started = time.monotonic()
            try:
                response = await provider.complete(request)
            except MalformedToolArguments as e:
                # The provider is up and billed the call; the caller gives the model
                # feedback and asks again. Not a breaker failure.
                await self._record(
                    name, e.model or provider.model, e.usage, None, started, error=e.code
                )
                raise
            except ProviderError as e:
                ev = self.llm.breakers.failed(
                    name,
                    e.code,
                    counts=e.retryable,
                    session=self.session,
                    details={"model": provider.model, "status": e.status, "purpose": self.purpose},
                )
                await self.llm.store.wait_durable(ev.id)
                if not e.retryable:
                    raise
                errors.append(f"{name}: {e.message}")
                await self._failover(name, nxt, e.code)
                continue
            except BaseException:
                self.llm.breakers.release(name)
                raise
            await self._record(name, response.model, response.usage, response, started)
            return response
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

    async def _failover(self, frm: str, to: str | None, reason: str) -> None:
        if to is None:
            return  # nowhere left to go: the caller gets the combined error
        item = {"from": frm, "to": to, "reason": reason}
        self.failovers.append(item)
        ev = self.llm.store.append_nowait("provider.failover", item, self.session)
        await self.llm.store.wait_durable(ev.id)
        log.get().info("llm.failover", **item)

    async def _record(
        self,
        name: str,
        model: str,
        usage: Any,
        response: Response | None,
        started: float,
        *,
        error: str | None = None,
    ) -> None:
        from tsukud.llm.types import Usage

        u = usage if isinstance(usage, Usage) else Usage()
        price = None if name == "local" else self.llm.prices().price(model, self.llm.today())
        cost = Decimal(0) if name == "local" else (price.cost(u) if price else None)
        self.turns += 1
        payload: dict[str, Any] = {
            "model": model,
            "purpose": self.purpose,
            "turn": self.turns,
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
        if cost is None:
            self.unpriced_turns += 1
        else:
            self.spent += cost
            payload["cost_usd"] = float(round(cost, 9))
        ev = self.llm.breakers.succeeded(name, payload, session=self.session)
        await self.llm.store.wait_durable(ev.id)  # durable before the caller's next call
