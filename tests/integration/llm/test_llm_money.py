"""Money is a ceiling and failover behaves as a user expects: the LLM service in-process
(real SDKs against the loopback fakes, a real SQLite ledger, trio's clock), and the
key change through the real daemon."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.conftest import Tsuku
from tests.fakes import anthropic_server as anth
from tests.fakes import gemini_server as gem
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tsukud import config as configmod
from tsukud.clock import TrioClock
from tsukud.errors import BudgetExceeded, ProviderUnavailable, UserDeclined
from tsukud.events.projections import State, rebuild
from tsukud.events.store import EventStore
from tsukud.llm.service import LLM, Run
from tsukud.llm.types import Request, Response, UserMessage
from tsukud.policy.breaker import BreakerSettings, CircuitBreakers
from tsukud.policy.budget import Budget, BudgetLimits
from tsukud.policy.confirm import Confirmations
from tsukud.policy.ratelimit import GenerationLimit
from tsukud.testing.http import RecordedRequest, Reply

CLAUDE_KEY = "sk-ant-api03-MONEYTEST0123456789abcdef"
GEMINI_KEY = "AIzaMONEYTEST0123456789abcdefghij"
FILE = "x" * 49_000  # one fetched file, 49 KB
SONNET_IN, SONNET_OUT = Decimal(2), Decimal(10)  # $ per Mtok, Claude Sonnet 5.5


@dataclass
class Env:
    llm: LLM
    store: EventStore
    state: State

    async def rows(self, type_: str) -> list[dict[str, Any]]:
        await self.store.wait_durable(self.store.last_id)
        return self.store.read_sync(
            lambda c: [
                json.loads(r[0])
                for r in c.execute(
                    "SELECT payload FROM events WHERE type = ? ORDER BY id", (type_,)
                )
            ]
        )


@asynccontextmanager
async def service(
    tmp_path: Path,
    env: dict[str, str],
    *,
    daily: float = 5.0,
    threshold: float = 0.5,
    sleep: Any = trio.sleep,
    hourly: int = 100,
) -> AsyncIterator[Env]:
    clock = TrioClock()
    store = EventStore(tmp_path / "t.db", clock=clock)
    store.open()
    state = store.read_sync(lambda c: rebuild(c, clock.now()))
    store.subscribe(state.apply)
    cfg = configmod.resolve(env=env, path=tmp_path / "config.toml")
    llm = LLM(
        config=lambda: cfg,
        store=store,
        budget=Budget(store, state.spend, clock, lambda: BudgetLimits(daily, threshold)),
        generations=GenerationLimit(store, state.generations, clock, lambda: hourly),
        breakers=CircuitBreakers(store, state.breakers, clock, lambda: BreakerSettings(3, 60)),
        confirmations=Confirmations(store),
        clock=clock,
        sleep=sleep,
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        try:
            yield Env(llm, store, state)
        finally:
            await llm.aclose()
            store.close()
    store.close_connection()


async def one_call(llm: LLM) -> tuple[Response, Run]:
    """A one-turn run with one small request (what ``llm test`` does)."""
    async with llm.run(
        session="s", purpose="llm.test", max_turns=1, max_tokens=16, input_tokens=64
    ) as run:
        response = await run.complete(Request(messages=(UserMessage("hi"),), max_tokens=16))
    return response, run


def claude_env(fake: FakeAnthropic) -> dict[str, str]:
    return {"ANTHROPIC_API_KEY": CLAUDE_KEY, "ANTHROPIC_BASE_URL": fake.url}


@dataclass
class GreedyModel:
    """Answers every request, billing what it was sent (a token per 4 bytes, the
    usual ratio for English) and 2048 output tokens; counts what it billed."""

    billed: list[Decimal] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: RecordedRequest) -> Reply:
        tokens_in, tokens_out = len(request.body) // 4, 2048
        with self.lock:
            self.billed.append((tokens_in * SONNET_IN + tokens_out * SONNET_OUT) / 1_000_000)
        body = anth.message([anth.text("reading more")], usage_=anth.usage(tokens_in, tokens_out))
        return Reply(json=body)


async def greedy_run(llm: LLM, session: str, spent: dict[str, tuple[Decimal, float]]) -> str:
    """A run that reads three 49 KB files on every turn, for the most turns allowed."""
    try:
        async with llm.run(
            session=session,
            purpose="create",
            max_turns=11,
            max_tokens=2048,
            input_tokens=10_000,
            confirmed=True,
            generation_tool="greedy",
        ) as run:
            messages: list[Any] = [UserMessage("write a recipe")]
            try:
                for _turn in range(11):
                    response = await run.complete(
                        Request(messages=tuple(messages), max_tokens=2048)
                    )
                    messages += [response.message, UserMessage(FILE * 3)]
            finally:
                spent[session] = (run.spent, run.reserved_usd)
        return "done"
    except BudgetExceeded:
        return "stopped"


async def test_twenty_greedy_runs_stay_within_the_budget_and_the_ledger_matches(
    tmp_path: Path,
) -> None:
    """20 concurrent runs of a model that reads the most it may, against a budget for
    about three typical runs: the provider bills no more than the budget, each run no
    more than it reserved, and the ledger's total equals the bill to the cent."""
    model = GreedyModel()
    with FakeAnthropic(fallback=model) as fake:
        async with service(tmp_path, claude_env(fake), daily=1.50) as env:
            spent: dict[str, tuple[Decimal, float]] = {}
            outcomes: list[str] = []

            async def one(i: int) -> None:
                outcomes.append(await greedy_run(env.llm, f"s-{i}", spent))

            async with trio.open_nursery() as n:
                for i in range(20):
                    n.start_soon(one, i)
            billed = sum(model.billed, Decimal(0))
            assert 0 < billed <= Decimal("1.50")
            assert outcomes.count("stopped") >= 17  # refused at once, or stopped at the ceiling
            for session, (run_spent, reserved) in spent.items():
                assert run_spent <= Decimal(str(reserved)) + Decimal("0.000001"), session
            turns = await env.rows("llm.turn")
            assert len(turns) == len(model.billed)
            ledger = sum((Decimal(str(t["cost_usd"])) for t in turns), Decimal(0))
            assert round(ledger, 2) == round(billed, 2)
            settled = sum(p["actual_usd"] for p in await env.rows("budget.settled"))
            assert settled == pytest.approx(float(billed), abs=1e-5)
            assert env.state.spend.open == {}  # every reservation, extensions too, settled
            # One generation slot per admitted run only.
            assert len(await env.rows("generation.started")) == len(spent)
            started = await env.rows("llm.call_started")
            assert len(started) == len(model.billed)
            assert all(s["worst_case_usd"] > 0 for s in started)


async def test_a_run_that_outgrows_its_reservation_extends_it(tmp_path: Path) -> None:
    model = GreedyModel()
    with FakeAnthropic(fallback=model) as fake:
        async with service(tmp_path, claude_env(fake), daily=20.0) as env:
            spent: dict[str, tuple[Decimal, float]] = {}
            assert await greedy_run(env.llm, "s", spent) == "done"
            run_spent, reserved = spent["s"]
            first, *more = await env.rows("budget.reserved")
            assert more and all(m["extends"] == first["reservation"] for m in more)
            assert run_spent <= Decimal(str(reserved))
            assert reserved == pytest.approx(sum(r["amount_usd"] for r in [first, *more]))
            settled = await env.rows("budget.settled")
            assert len(settled) == 1 + len(more)
            assert sum(x["actual_usd"] for x in settled) == pytest.approx(float(run_spent))
            assert float(run_spent) == pytest.approx(float(sum(model.billed, Decimal(0))))


async def test_an_extension_past_the_threshold_is_asked_again(tmp_path: Path) -> None:
    """The first reservation ($0.45) needs no yes; the extension that takes the run past
    the $0.50 threshold asks again, and a no stops the run before the next call."""
    model = GreedyModel()
    with FakeAnthropic(fallback=model) as fake:
        async with service(tmp_path, claude_env(fake), daily=20.0, threshold=0.5) as env:
            asked: list[dict[str, Any]] = []

            async def progress(body: dict[str, Any]) -> None:
                question = body.get("confirm")
                if question is not None:
                    asked.append(question)
                    env.llm.confirmations.answer(question["token"], False)

            with pytest.raises(UserDeclined):
                async with env.llm.run(
                    session="s",
                    purpose="create",
                    max_turns=11,
                    max_tokens=2048,
                    input_tokens=10_000,
                    can_ask=True,
                    progress=progress,
                ) as run:
                    messages: list[Any] = [UserMessage("write a recipe")]
                    for _turn in range(11):
                        response = await run.complete(
                            Request(messages=tuple(messages), max_tokens=2048)
                        )
                        messages += [response.message, UserMessage(FILE * 3)]
            (question,) = asked
            assert "needs $" in question["message"] and question["estimate_usd"] > 0.5
            assert 0 < len(model.billed) < 11
            (settled,) = await env.rows("budget.settled")
            assert settled["actual_usd"] == pytest.approx(float(sum(model.billed, Decimal(0))))


async def test_ceiling_without_budget_stops_with_what_was_spent(
    tmp_path: Path, anthropic_fake: FakeAnthropic
) -> None:
    for _ in range(3):
        anthropic_fake.reply([anth.text("more")], usage_=anth.usage(100, 10))
    async with service(tmp_path, claude_env(anthropic_fake), daily=0.02) as env:
        with pytest.raises(BudgetExceeded) as e:
            async with env.llm.run(
                session="s", purpose="create", max_turns=1, max_tokens=100, input_tokens=100
            ) as run:
                messages: list[Any] = [UserMessage("hi")]
                for _ in range(3):
                    response = await run.complete(Request(messages=tuple(messages), max_tokens=100))
                    messages += [response.message, UserMessage(FILE)]
        assert "this run has spent $0.0003" in e.value.message
        assert "llm.daily_budget" in (e.value.hint or "")
        assert len(anthropic_fake.requests) == 1  # the second call was refused before it was sent
        (settled,) = await env.rows("budget.settled")
        assert settled["actual_usd"] == pytest.approx(0.0003)


async def test_a_cut_off_call_is_charged_at_its_worst_case(
    tmp_path: Path, anthropic_fake: FakeAnthropic
) -> None:
    anthropic_fake.reply([anth.text("late")], delay=5)
    async with service(tmp_path, claude_env(anthropic_fake)) as env:
        with trio.move_on_after(0.5):
            async with env.llm.run(
                session="s", purpose="discovery", max_turns=1, max_tokens=100, input_tokens=100
            ) as run:
                await run.complete(Request(messages=(UserMessage("hi"),), max_tokens=100))
        (cut,) = await env.rows("llm.cut_off")
        (ahead,) = await env.rows("llm.call_started")
        assert cut["estimated"] is True and cut["reason"] == "cancelled"
        assert cut["cost_usd"] == ahead["worst_case_usd"] > 0
        (settled,) = await env.rows("budget.settled")
        assert settled["actual_usd"] == pytest.approx(cut["cost_usd"])


async def _no_wait(_seconds: float) -> None:
    await trio.lowlevel.checkpoint()


@pytest.mark.parametrize("provider", ["claude", "gemini"])
async def test_an_answer_cut_mid_body_is_charged_at_its_worst_case_never_zero(
    tmp_path: Path, anthropic_fake: FakeAnthropic, gemini_fake: FakeGemini, provider: str
) -> None:
    """A 200 whose body breaks off after 20 bytes went through the real SDK: the provider
    may bill it, so each such call is charged at its worst case, marked estimated."""
    if provider == "claude":
        fake: Any = anthropic_fake
        body = anth.message([anth.text("cut")], usage_=anth.usage(10, 5))
        env_vars = claude_env(anthropic_fake)
    else:
        fake = gemini_fake
        body = gem.response([gem.text("cut")])
        env_vars = {"GOOGLE_API_KEY": GEMINI_KEY, "TSUKU_GEMINI_BASE_URL": gemini_fake.url}
    fake.push(*[Reply(json=body, cut_after=20) for _ in range(10)])
    async with service(tmp_path, env_vars, sleep=_no_wait) as env:
        with pytest.raises(ProviderUnavailable):
            await one_call(env.llm)
        sent = len(fake.requests)
        cuts = await env.rows("llm.cut_off")
        ahead = await env.rows("llm.call_started")
        assert sent >= 1 and len(cuts) == len(ahead) == sent  # every request is charged
        assert await env.rows("llm.turn") == []
        for cut, started in zip(cuts, ahead, strict=True):
            assert cut["estimated"] is True and cut["provider"] == provider
            assert cut["reason"] == "connection_broken"
            assert cut["cost_usd"] == started["worst_case_usd"] > 0
        settled = sum(r["actual_usd"] for r in await env.rows("budget.settled"))
        assert settled > 0  # across the run's extensions
        assert settled == pytest.approx(sum(c["cost_usd"] for c in cuts), abs=1e-5)  # micro-$


async def test_a_refused_connection_is_not_charged(tmp_path: Path) -> None:
    """Nothing listens: the request certainly never left, so nothing is charged. And
    nothing will listen a second later on this machine's port: the one provider is not
    tried again (tsukud.net.retry.unreachable), where a reset or a 5xx would be."""
    with trio.socket.socket() as probe:
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env_vars = {"ANTHROPIC_API_KEY": CLAUDE_KEY, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}
    async with service(tmp_path, env_vars, sleep=_no_wait) as env:
        with pytest.raises(ProviderUnavailable) as info:
            await one_call(env.llm)
        assert "connection refused" in info.value.message
        assert len(await env.rows("llm.call_started")) == 1
        assert await env.rows("provider.retry") == []
        assert await env.rows("llm.cut_off") == []
        (settled,) = await env.rows("budget.settled")
        assert settled["actual_usd"] == 0


async def test_a_refused_run_takes_no_hourly_slot(
    tmp_path: Path, anthropic_fake: FakeAnthropic
) -> None:
    async with service(tmp_path, claude_env(anthropic_fake), daily=0.001) as env:
        with pytest.raises(BudgetExceeded):
            async with env.llm.run(
                session="s",
                purpose="create",
                max_turns=5,
                max_tokens=2048,
                generation_tool="tool",
            ):
                pass
        assert await env.rows("generation.started") == []
        assert len(await env.rows("budget.denied")) == 1
        assert anthropic_fake.requests == []


async def test_single_provider_retries_529_honouring_retry_after(
    tmp_path: Path, anthropic_fake: FakeAnthropic
) -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    for _ in range(2):
        anthropic_fake.error(529, "overloaded_error", "Overloaded", headers={"retry-after": "7"})
    anthropic_fake.reply([anth.text("OK")])
    async with service(tmp_path, claude_env(anthropic_fake), sleep=sleep) as env:
        response, _run = await one_call(env.llm)
        assert response.text == "OK" and waits == [7.0, 7.0]
        retries = await env.rows("provider.retry")
        assert [(r["attempt"], r["wait_s"], r["reason"]) for r in retries] == [
            (1, 7.0, "provider_unavailable"),
            (2, 7.0, "provider_unavailable"),
        ]
        assert len(anthropic_fake.requests) == 3


async def test_rejected_key_fails_over_to_the_next_provider(
    tmp_path: Path, anthropic_fake: FakeAnthropic, gemini_fake: FakeGemini
) -> None:
    anthropic_fake.error(401, "authentication_error", "invalid x-api-key")
    gemini_fake.reply([gem.text("OK")])
    env_vars = {
        **claude_env(anthropic_fake),
        "GOOGLE_API_KEY": GEMINI_KEY,
        "TSUKU_GEMINI_BASE_URL": gemini_fake.url,
    }
    async with service(tmp_path, env_vars) as env:
        response, run = await one_call(env.llm)
        assert response.provider == "gemini" and response.text == "OK"
        assert any("ANTHROPIC_API_KEY" in w for w in run.warnings)  # the key's hint is kept
        (failover,) = await env.rows("provider.failover")
        assert failover == {"from": "claude", "to": "gemini", "reason": "provider_auth"}


def both_env(claude: FakeAnthropic, gemini: FakeGemini) -> dict[str, str]:
    return {**claude_env(claude), "GOOGLE_API_KEY": GEMINI_KEY, "TSUKU_GEMINI_BASE_URL": gemini.url}


@pytest.mark.parametrize("first", ["claude", "gemini"])
async def test_permission_denied_fails_over_to_the_next_provider_and_keeps_the_key_hint(
    tmp_path: Path, anthropic_fake: FakeAnthropic, gemini_fake: FakeGemini, first: str
) -> None:
    """A 403 (Anthropic ``permission_error``, Google ``PERMISSION_DENIED``) from the
    provider tried first: the next one answers, the first is asked once (a 403 does
    not get better by retrying), and the result says which key to check."""
    if first == "claude":
        anthropic_fake.error(
            403, "permission_error", "Your API key does not have permission to use this model."
        )
        gemini_fake.reply([gem.text("OK")])
        hint, denied, other = "ANTHROPIC_API_KEY", anthropic_fake, "gemini"
    else:
        gemini_fake.error(403, "PERMISSION_DENIED", "The caller does not have permission")
        anthropic_fake.reply([anth.text("OK")])
        hint, denied, other = "GOOGLE_API_KEY", gemini_fake, "claude"
    async with service(tmp_path, both_env(anthropic_fake, gemini_fake)) as env:
        async with env.llm.run(
            session="s", purpose="llm.test", providers=first, max_turns=1, max_tokens=16
        ) as run:
            response = await run.complete(Request(messages=(UserMessage("hi"),), max_tokens=16))
        assert response.provider == other and response.text == "OK"
        assert len(denied.requests) == 1
        (warning,) = run.warnings
        assert "HTTP 403" in warning and "permission denied" in warning and hint in warning
        (failover,) = await env.rows("provider.failover")
        assert failover == {"from": first, "to": other, "reason": "provider_auth"}
        assert await env.rows("provider.retry") == []
        assert await env.rows("llm.cut_off") == []  # a refusal is an answer: not charged
        (turn,) = await env.rows("llm.turn")
        assert turn["model"].startswith(other)


def _timed(arrivals: list[float], reply: Reply) -> Any:
    """A fake's answer that notes when the request arrived (monotonic seconds)."""

    def answer(_request: RecordedRequest) -> Reply:
        arrivals.append(time.monotonic())
        return reply

    return answer


@pytest.mark.parametrize("provider", ["claude", "gemini"])
async def test_a_lone_provider_rate_limited_waits_as_told_then_succeeds(
    tmp_path: Path, anthropic_fake: FakeAnthropic, gemini_fake: FakeGemini, provider: str
) -> None:
    """429 twice, then an answer, with the only provider: the daemon really sleeps
    what the provider said (Anthropic's ``retry-after`` header; Google's
    ``RetryInfo.retryDelay``), not its own backoff (1 s, then 2 s), and each retry is a
    durable ``provider.retry`` event before the wait."""
    told = 0.7
    arrivals: list[float] = []
    if provider == "claude":
        limited = Reply(
            429,
            json=anth.error_body("rate_limit_error", "Number of request tokens has exceeded"),
            headers={"retry-after": str(told)},
        )
        ok = Reply(json=anth.message([anth.text("OK")]), headers={"request-id": "req_ok"})
        fake: Any = anthropic_fake
        env_vars = claude_env(anthropic_fake)
    else:
        limited = Reply(
            429,
            json=gem.error_body(
                429, "RESOURCE_EXHAUSTED", "Quota exceeded", retry_delay=f"{told}s"
            ),
        )
        ok = Reply(json=gem.response([gem.text("OK")]))
        fake = gemini_fake
        env_vars = {"GOOGLE_API_KEY": GEMINI_KEY, "TSUKU_GEMINI_BASE_URL": gemini_fake.url}
    fake.push(_timed(arrivals, limited), _timed(arrivals, limited), _timed(arrivals, ok))
    async with service(tmp_path, env_vars) as env:  # trio.sleep: the real wait
        response, _run = await one_call(env.llm)
        assert response.text == "OK" and response.provider == provider
        assert len(arrivals) == 3
        gaps = [b - a for a, b in itertools.pairwise(arrivals)]
        assert all(gap >= told for gap in gaps), gaps
        retries = await env.rows("provider.retry")
        assert [(r["provider"], r["attempt"], r["wait_s"], r["reason"]) for r in retries] == [
            (provider, 1, told, "provider_unavailable"),
            (provider, 2, told, "provider_unavailable"),
        ]
        assert await env.rows("provider.failover") == []
        assert len(await env.rows("llm.call_started")) == 3  # every attempt announced
        assert len(await env.rows("llm.turn")) == 1 and await env.rows("llm.cut_off") == []


async def test_a_declined_cost_question_takes_no_hourly_slot(
    tmp_path: Path, anthropic_fake: FakeAnthropic
) -> None:
    """One generation an hour; a run whose cost question is answered no is never
    admitted: no ``generation.started``, no reservation, nothing sent, and the slot is
    still there for the next run."""
    asked: list[dict[str, Any]] = []
    async with service(tmp_path, claude_env(anthropic_fake), threshold=0.0001, hourly=1) as env:

        async def no(body: dict[str, Any]) -> None:
            question = body.get("confirm")
            if question is not None:
                asked.append(question)
                env.llm.confirmations.answer(question["token"], False)

        kwargs: dict[str, Any] = {
            "session": "s",
            "purpose": "create",
            "max_turns": 5,
            "max_tokens": 2048,
            "generation_tool": "tool",
        }
        with pytest.raises(UserDeclined):
            async with env.llm.run(**kwargs, can_ask=True, progress=no):
                pytest.fail("a declined run must not start")
        assert len(asked) == 1
        assert await env.rows("generation.started") == []
        assert await env.rows("budget.reserved") == []
        assert len(await env.rows("confirmation.declined")) == 1
        assert anthropic_fake.requests == []

        async with env.llm.run(**{**kwargs, "session": "s2"}, confirmed=True):
            pass  # admitted: the hour's only slot was still free
        (started,) = await env.rows("generation.started")
        assert started["tool"] == "tool"
        assert len(await env.rows("budget.reserved")) == 1


async def test_a_chosen_provider_comes_first_and_only_provider_keeps_it_alone(
    tmp_path: Path, anthropic_fake: FakeAnthropic, gemini_fake: FakeGemini
) -> None:
    env_vars = {
        **claude_env(anthropic_fake),
        "GOOGLE_API_KEY": GEMINI_KEY,
        "TSUKU_GEMINI_BASE_URL": gemini_fake.url,
    }
    async with service(tmp_path, env_vars) as env:
        assert env.llm.usable("gemini") == ["gemini", "claude"]
        assert env.llm.usable("gemini", only=True) == ["gemini"]
        assert env.llm.usable() == ["claude", "gemini"]


def test_design_config_example_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        "[llm]\nrequire_confirmation = 0.25\ndaily_budget = 5.0\n\n"
        '[llm.claude]\napi_key_env = "MY_CLAUDE_KEY"\n\n'
        '[llm.gemini]\napi_key_env = "MY_GEMINI_KEY"\n'
    )
    os.chmod(path, 0o600)
    env = {
        "MY_CLAUDE_KEY": CLAUDE_KEY,
        "ANTHROPIC_API_KEY": "not-this-one",
        "MY_GEMINI_KEY": GEMINI_KEY,
    }
    cfg = configmod.resolve(env=env, path=path)
    assert cfg["llm.confirm_threshold"] == 0.25
    assert cfg.setting("llm.confirm_threshold").source == "file (as llm.require_confirmation)"
    assert cfg["secrets.anthropic_api_key"] == CLAUDE_KEY
    assert cfg.setting("secrets.anthropic_api_key").source == "env:MY_CLAUDE_KEY"
    assert cfg["secrets.google_api_key"] == GEMINI_KEY
    # Written back under the settings' own names, nested tables kept.
    configmod.write_value(path, "llm.daily_budget", 3)
    again = configmod.resolve(env=env, path=path)
    assert again["llm.confirm_threshold"] == 0.25 and again["llm.daily_budget"] == 3.0
    assert "[llm.claude]" in path.read_text()


@pytest.mark.slow  # a daemon, two llm test turns through the SDK; the other money tests stay
def test_config_set_key_is_used_by_the_next_request(
    tsuku: Tsuku, anthropic_fake: FakeAnthropic
) -> None:
    tsuku.env["ANTHROPIC_BASE_URL"] = anthropic_fake.url
    tsuku.start()
    old, new = CLAUDE_KEY, CLAUDE_KEY.replace("MONEY", "FRESH")
    for key in (old, new):
        tsuku.ctl("config", "set", "secrets.anthropic_api_key", input=key, check=True)
        anthropic_fake.reply([anth.text("OK")])
        tsuku.ctl("llm", "test", check=True)
        sent = anthropic_fake.requests[-1].headers
        # SDK 2.x sends the key as a bearer token (older SDKs: x-api-key).
        assert key in (sent.get("x-api-key"), sent.get("authorization", "")[7:])


async def test_the_settings_proxy_carries_the_providers_calls(tmp_path: Path) -> None:
    """The LLM service builds its adapters with the proxy the settings name for the
    provider's URL (here the daemon's HTTP_PROXY; a caller's is the same setting)."""
    from tests.fakes.proxy import ForwardingProxy

    with FakeAnthropic() as fake, ForwardingProxy() as proxy:
        fake.reply([anth.text("ok")], "end_turn")
        async with service(tmp_path, {**claude_env(fake), "HTTP_PROXY": proxy.url}) as env:
            response, _run = await one_call(env.llm)
        assert response.text == "ok"
        assert proxy.urls() == [f"{fake.url}/v1/messages"]
