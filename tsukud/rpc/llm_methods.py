"""RPC methods for the LLM providers: status, a tiny test call, and confirmation answers."""

from __future__ import annotations

import secrets
from typing import Any

import msgspec

from tsukud.policy.breaker import BreakerShown
from tsukud.policy.budget import BudgetShown
from tsukud.rpc.registry import NoParams, method
from tsukud.rpc.server import Call
from tsukud.services import Services


class PriceShown(msgspec.Struct, frozen=True, kw_only=True):
    """A model's price as ``llm status`` shows it: USD per 1M tokens and per fee; the
    ``*_above`` rates are the long-context tier's (null when the model has one tier)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None
    cache_write_per_mtok: float | None
    per_search: float | None
    per_grounded_prompt: float | None
    above_tokens: int | None
    input_above_per_mtok: float | None
    output_above_per_mtok: float | None
    valid_until: str | None


class NeverTripped(msgspec.Struct, frozen=True, kw_only=True):
    """The breaker of a provider that has never failed: closed, no failures counted."""

    state: str = "closed"
    consecutive_failures: int = 0


class ProviderShown(msgspec.Struct, frozen=True, kw_only=True):
    """One provider in ``llm status``: its model, whether its credentials are set and it
    can be used (why not), its circuit, its price, and a deprecation warning."""

    name: str
    in_order: bool
    model: str
    base_url: str
    credential: str
    usable: bool
    reason: str
    breaker: BreakerShown | NeverTripped
    price: PriceShown | None
    self_hosted: bool
    deprecated: str | None


class LlmStatus(msgspec.Struct, frozen=True, kw_only=True):
    """``llm.status``: the providers in the order they are tried, then the others."""

    order: list[str]
    providers: list[ProviderShown]
    replay_dir: str | None
    record_dir: str | None
    budget: BudgetShown


@method("llm.status", NoParams)
async def llm_status(s: Services, p: NoParams, call: Call) -> LlmStatus:
    """Providers in order: model, credentials set or not, breaker, price, deprecation."""
    await s.budget.refresh()
    from tsukud.llm.providers import lists_deprecations
    from tsukud.llm.service import PROVIDERS

    llm = s.llm
    order = llm.order()
    breakers = {b.provider: b for b in s.breakers.snapshot()}
    providers = []
    for name in [*order, *(n for n in PROVIDERS if n not in order)]:
        info = llm.info(name)
        price = llm.price(name)
        deprecated = None
        if lists_deprecations(name):
            from tsukud.llm.pricing import deprecation

            deprecated = deprecation(info.model)
        providers.append(
            ProviderShown(
                name=name,
                in_order=name in order,
                model=info.model,
                base_url=info.base_url,
                credential=info.credential,
                usable=info.usable,
                reason=info.reason,
                breaker=breakers.get(name) or NeverTripped(),
                price=None
                if price is None
                else PriceShown(
                    input_per_mtok=float(price.input),
                    output_per_mtok=float(price.output),
                    cache_read_per_mtok=_f(price.cache_read),
                    cache_write_per_mtok=_f(price.cache_write),
                    per_search=_f(price.per_search),
                    per_grounded_prompt=_f(price.per_grounded_prompt),
                    above_tokens=price.above_tokens,
                    input_above_per_mtok=_f(price.input_above),
                    output_above_per_mtok=_f(price.output_above),
                    valid_until=price.until.isoformat() if price.until else None,
                ),
                self_hosted=name == "local",
                deprecated=deprecated,
            )
        )
    c = s.config()
    return LlmStatus(
        order=order,
        providers=providers,
        replay_dir=c["llm.replay_dir"] or None,
        record_dir=c["llm.record_dir"] or None,
        budget=s.budget.snapshot(),
    )


def _f(x: Any) -> float | None:
    return None if x is None else float(x)


class KeyChecked(msgspec.Struct, frozen=True, kw_only=True):
    """``llm.test``: which provider answered, what it said and what the call cost."""

    provider: str
    model: str
    text: str  # the answer, its first 200 characters
    input_tokens: int
    output_tokens: int
    cost_usd: float | None  # None: the provider's price is not known
    duration_ms: int
    session: str
    warnings: list[str]  # e.g. a rejected key that was failed over
    # answered from a recording: what the recorded call cost, not spent (cost_usd is 0)
    replayed_cost_usd: float | None = None


class TestParams(msgspec.Struct, forbid_unknown_fields=True):
    provider: str | None = None
    yes: bool = False
    can_ask: bool = False


@method("llm.test", TestParams)
async def llm_test(s: Services, p: TestParams, call: Call) -> KeyChecked:
    """One tiny real call to check a key; its cost is recorded like any other."""
    from tsukud.llm.types import Request, UserMessage

    llm = s.llm
    # With --provider only that provider is tried (a key check); without, the
    # configured order with failover, exactly as a recipe generation would use it.
    names = [p.provider] if p.provider else llm.usable()
    session = "t-" + secrets.token_hex(6)
    await call.progress({"stage": f"asking {names[0]}"})
    async with llm.run(
        session=session,
        purpose="llm.test",
        providers=",".join(names),
        only_provider=True,
        max_turns=1,
        max_tokens=16,
        input_tokens=64,
        confirmed=p.yes,
        can_ask=p.can_ask,
        progress=call.progress,
    ) as run:
        resp = await run.complete(
            Request(messages=(UserMessage("Reply with the single word OK."),), max_tokens=16),
        )
    name = resp.provider
    u = resp.usage
    return KeyChecked(
        provider=name,
        model=resp.model,
        text=resp.text[:200],
        input_tokens=u.input_tokens + u.cache_read_tokens + u.cache_write_tokens,
        output_tokens=u.output_tokens + u.thoughts_tokens,
        cost_usd=None if run.unpriced_turns else float(run.spent),
        duration_ms=resp.duration_ms,
        session=session,
        warnings=list(run.warnings),
        replayed_cost_usd=float(run.replayed) if run.replayed else None,
    )
