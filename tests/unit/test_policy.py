"""Policy against a real ledger, in-process, on trio's clock. The budget's tests run on
both backends (``backend``): SQLite, and a real PostgreSQL database of the test's own
where the day's row decides (``policy/pg_policy.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, nullcontext
from decimal import Decimal
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.lowlevel
import trio.testing

from tests.pg import pg_database, pg_server
from tsukud.clock import Clock, TrioClock
from tsukud.errors import BudgetExceeded, ConfirmationRequired, RateLimited
from tsukud.events.projections import State, rebuild
from tsukud.events.store import EventStore
from tsukud.policy import spent
from tsukud.policy.backend import LocalPolicy, PolicyBackend
from tsukud.policy.breaker import BreakerSettings, CircuitBreakers, CircuitOpen
from tsukud.policy.budget import Budget, BudgetLimits
from tsukud.policy.locks import ContainerLock
from tsukud.policy.ratelimit import GenerationLimit

__all__ = ["pg_database", "pg_server"]

#: Makes the store of a home (the same home: the same ledger) and its policy's backend.
Backend = Callable[[Path, Clock], tuple[EventStore, PolicyBackend]]


def sqlite(home: Path, clock: Clock) -> tuple[EventStore, PolicyBackend]:
    return EventStore(home / "t.db", clock=clock), LocalPolicy()


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> Backend:
    if request.param == "sqlite":
        return sqlite
    return _postgresql_backend(request.getfixturevalue("pg_database"))


def _postgresql_backend(db: Any) -> Backend:
    from tsukud.events.pg_store import PgEventStore
    from tsukud.policy.pg_policy import SharedPolicy

    def postgresql(home: Path, clock: Clock) -> tuple[EventStore, PolicyBackend]:
        store = PgEventStore(db.url, home, clock=clock)
        return store, SharedPolicy(db.url, lambda: store.origin)

    return postgresql


class Ledger:
    def __init__(
        self, store: EventStore, state: State, clock: Clock, policy: PolicyBackend
    ) -> None:
        self.store, self.state, self.clock = store, state, clock
        self.days = policy.days(state)
        self.budget = Budget(store, state.spend, clock, lambda: BudgetLimits(1.0, 0.45), self.days)
        self.gen = GenerationLimit(store, state.generations, clock, lambda: 3, policy.hours(state))
        self.breakers = CircuitBreakers(
            store, state.breakers, clock, lambda: BreakerSettings(3, 60)
        )

    async def types(self) -> list[str]:
        await self.store.wait_durable(self.store.last_id)
        return self.store.read_sync(
            lambda c: [r[0] for r in c.execute("SELECT type FROM events ORDER BY id")]
        )


@asynccontextmanager
async def ledger(home: Path, clock: Clock, backend: Backend = sqlite) -> AsyncIterator[Ledger]:
    store, policy = backend(home, clock)
    store.open()
    state = store.read_sync(lambda c: rebuild(c, clock.now()))
    store.subscribe(state.apply)
    lg = Ledger(store, state, clock, policy)
    lg.budget.release_unrecorded()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            yield lg
            store.close()
    finally:
        store.close_connection()
        policy.close()


async def test_budget_race_twenty_reservations_three_fit(backend: Backend, tmp_path: Path) -> None:
    granted: list[str] = []
    denied = 0
    async with ledger(tmp_path, TrioClock(), backend) as lg:

        async def one() -> None:
            nonlocal denied
            await trio.lowlevel.checkpoint()
            try:
                g = await lg.budget.reserve(0.30, session=None, purpose="race", confirmed=True)
                granted.append(g.reservation)
            except BudgetExceeded:
                denied += 1

        async with trio.open_nursery() as n:
            for _ in range(20):
                n.start_soon(one)
    assert len(granted) == 3 and denied == 17
    # ... and the rebuilt state agrees, so a restart cannot overspend either.
    async with ledger(tmp_path, TrioClock(), backend) as lg2:
        assert len(lg2.state.spend.open) == 3
        with pytest.raises(BudgetExceeded) as e:
            await lg2.budget.reserve(0.30, session=None, purpose="x", confirmed=True)
        assert "$0.90 of $1.00" in e.value.message
        assert (await lg2.types()).count("budget.denied") == 18


async def test_settle_frees_the_unspent_part(backend: Backend, tmp_path: Path) -> None:
    async with ledger(tmp_path, TrioClock(), backend) as lg:
        g = await lg.budget.reserve(0.45, session="s", purpose="p")
        await lg.budget.settle(g.reservation, 0.05, session="s")
        snap = lg.budget.snapshot()
        assert snap.spent_usd == 0.05 and snap.reserved_usd == 0.0
        await lg.budget.reserve(0.45, session="s2", purpose="p")
        await lg.budget.reserve(0.45, session="s3", purpose="p")  # 0.05 + 0.9 ≤ 1.0


async def test_settlements_count_towards_the_request_they_happen_in(
    backend: Backend, tmp_path: Path
) -> None:
    """What a cancelled client is told it spent: every settlement inside the request's
    tally (in its own task or a child task), none outside it."""
    async with ledger(tmp_path, TrioClock(), backend) as lg:
        outside = await lg.budget.reserve(0.10, session="o", purpose="p")
        with spent.tally() as request:
            a = await lg.budget.reserve(0.20, session="a", purpose="p")
            b = await lg.budget.reserve(0.20, session="b", purpose="p")
            await lg.budget.settle(a.reservation, 0.015, session="a")
            async with trio.open_nursery() as n:
                n.start_soon(partial(lg.budget.settle, b.reservation, 0.0025, session="b"))
        await lg.budget.settle(outside.reservation, 0.05, session="o")
        assert request.usd == Decimal("0.0175") and request.settlements == 2


async def test_over_threshold_needs_confirmation(backend: Backend, tmp_path: Path) -> None:
    async with ledger(tmp_path, TrioClock(), backend) as lg:
        with pytest.raises(ConfirmationRequired) as e:
            await lg.budget.reserve(0.75, session="s", purpose="p")
        assert e.value.data["estimate_usd"] == 0.75
        assert "confirmation.requested" in (await lg.types())
        await lg.budget.reserve(0.75, session="s", purpose="p", confirmed=True)


async def test_an_extension_under_the_threshold_is_asked_when_its_run_crosses_it(
    tmp_path: Path,
) -> None:
    """Issue 26 item 6: the threshold applies to the run's new total (what it holds plus
    the extension), not to the extension alone; in a request and outside one."""
    async with ledger(tmp_path, TrioClock()) as lg:
        for request in (spent.tally(), nullcontext()):
            with request:
                first = await lg.budget.reserve(0.30, session="s", purpose="p")
                with pytest.raises(ConfirmationRequired) as e:
                    await lg.budget.reserve(
                        0.25, session="s", purpose="p", extends=first.reservation, prior_usd=0.30
                    )
                assert "this run has reserved $0.30 and needs $0.25 more" in e.value.message
                assert e.value.data["estimate_usd"] == 0.55
                await lg.budget.settle(first.reservation, 0.0, session="s")


async def test_the_threshold_is_one_commands_and_asked_once(
    backend: Backend, tmp_path: Path
) -> None:
    """Issue 33 item 10: runs of one request add up (what earlier runs spent, what open
    ones hold); a yes covers the command's later runs; another request starts afresh."""
    async with ledger(tmp_path, TrioClock(), backend) as lg:
        with spent.tally() as command:
            discovery = await lg.budget.reserve(0.32, session="d", purpose="discovery")
            await lg.budget.settle(discovery.reservation, 0.28, session="d")
            with pytest.raises(ConfirmationRequired) as e:
                await lg.budget.reserve(0.21, session="i", purpose="instructions")
            assert e.value.data["estimate_usd"] == 0.49  # 0.28 spent + 0.21 asked
            assert "its earlier steps spent or hold $0.2800" in e.value.message
            assert "this command may cost up to $0.49 in all" in e.value.message
            builder = await lg.budget.reserve(
                0.21, session="i", purpose="instructions", confirmed=True
            )
            assert command.accepted
            await lg.budget.reserve(0.10, session="r", purpose="repair")  # not asked again
            await lg.budget.settle(builder.reservation, 0.0, session="i")
        with spent.tally():
            await lg.budget.reserve(0.21, session="n", purpose="instructions")  # afresh
        assert (await lg.types()).count("confirmation.requested") == 1


async def test_budget_resets_on_the_next_utc_day(
    backend: Backend, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path, TrioClock(anchor=1_795_305_600.0), backend) as lg:  # 00:00 UTC
        g = await lg.budget.reserve(0.40, session="s", purpose="p")
        await lg.budget.settle(g.reservation, 0.40, session="s")
        g = await lg.budget.reserve(0.40, session="s", purpose="p")
        await lg.budget.settle(g.reservation, 0.40, session="s")
        with pytest.raises(BudgetExceeded):
            await lg.budget.reserve(0.40, session="s", purpose="p")
        await trio.sleep(86400)
        await lg.budget.reserve(0.40, session="s", purpose="p")


async def test_hourly_generation_limit_is_a_rolling_window(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path, TrioClock()) as lg:
        for i in range(3):
            await lg.gen.start(session=f"s{i}", tool="stern")
            await trio.sleep(600)
        with pytest.raises(RateLimited) as e:
            await lg.gen.start(session="s9", tool="stern")
        assert e.value.data["retry_at"] is not None
        await trio.sleep(1800 + 1)  # the first start leaves the window
        await lg.gen.start(session="s10", tool="stern")
        assert (await lg.types()).count("ratelimit.denied") == 1


async def test_replayed_generations_take_no_slot_live_or_rebuilt(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # A replay calls no provider: the hour (limit 3) bounds real generations only, and
    # the daemon rebuilt from the ledger counts what the live one counted.
    clock = TrioClock()
    async with ledger(tmp_path, clock) as lg:
        for i in range(5):
            await lg.gen.start(session=f"r{i}", tool="stern", replayed=True)
        for i in range(3):
            await lg.gen.start(session=f"s{i}", tool="stern")
        assert lg.gen.snapshot().count == 3
        with pytest.raises(RateLimited):
            await lg.gen.start(session="s9", tool="stern")
        await lg.gen.start(session="r9", tool="stern", replayed=True)  # full hour: still runs
        await lg.store.wait_durable(lg.store.last_id)
        assert (await lg.types()).count("generation.started") == 9  # each on the ledger
    async with ledger(tmp_path, clock) as lg2:
        assert lg2.gen.snapshot().count == 3


async def test_replayed_turns_neither_end_nor_extend_a_providers_streak(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    # A recording's answer (or miss) says nothing about the provider: two real
    # failures, a replayed success and a replayed failure, then one real failure is a
    # streak of three, live and after a rebuild.
    clock = TrioClock()
    replayed_turn = {"provider": "claude", "replayed": True, "cost_usd": 0.0}
    replayed_miss = {"provider": "claude", "error_type": "replay_miss", "breaker": False}
    async with ledger(tmp_path, clock) as lg:
        for _ in range(2):
            lg.breakers.failed("claude", "overloaded")
        lg.store.append_nowait("llm.turn", replayed_turn, "r1")
        lg.store.append_nowait("llm.failed", {**replayed_miss, "replayed": True}, "r1")
        assert lg.state.breakers.get("claude").failures == 2
        await lg.store.wait_durable(lg.store.last_id)
    async with ledger(tmp_path, clock) as lg2:
        assert lg2.state.breakers.get("claude").failures == 2
        lg2.breakers.failed("claude", "overloaded")
        with pytest.raises(CircuitOpen):
            lg2.breakers.acquire("claude")


async def test_breaker_opens_half_opens_and_closes(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path, TrioClock()) as lg:
        b = lg.breakers
        for _ in range(3):
            b.acquire("claude")
            b.failed("claude", "overloaded")
        with pytest.raises(CircuitOpen) as e:
            b.acquire("claude")
        assert e.value.data["provider"] == "claude"
        await trio.sleep(59)
        with pytest.raises(CircuitOpen):
            b.acquire("claude")
        await trio.sleep(1.5)
        assert b.acquire("claude") is True  # the one probe
        with pytest.raises(CircuitOpen):  # a second caller waits for the probe's verdict
            b.acquire("claude")
        b.succeeded("claude", {"model": "m", "input_tokens": 1, "output_tokens": 1})
        assert b.acquire("claude") is False
        assert [t for t in (await lg.types()) if t.startswith("breaker.")] == [
            "breaker.opened",
            "breaker.half_opened",
            "breaker.closed",
        ]


async def test_failed_probe_reopens_and_non_retryable_errors_do_not_count(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path, TrioClock()) as lg:
        b = lg.breakers
        for _ in range(5):
            b.failed("gemini", "authentication", counts=False)
        b.acquire("gemini")  # still closed: a bad key is not an outage
        for _ in range(3):
            b.failed("gemini", "overloaded")
        await trio.sleep(61)
        assert b.acquire("gemini") is True
        b.failed("gemini", "timeout")
        with pytest.raises(CircuitOpen):
            b.acquire("gemini")


async def test_breaker_state_survives_restart(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    clock = TrioClock()
    async with ledger(tmp_path, clock) as lg:
        for _ in range(3):
            lg.breakers.failed("claude", "server_error")
        await lg.store.wait_durable(lg.store.last_id)
    async with ledger(tmp_path, clock) as lg2:
        with pytest.raises(CircuitOpen):
            lg2.breakers.acquire("claude")
        await trio.sleep(61)
        assert lg2.breakers.acquire("claude") is True


async def test_container_lock_bounds_concurrency(tmp_path: Path) -> None:
    async with ledger(tmp_path, TrioClock()) as lg:
        lock = ContainerLock(lg.store, lg.clock, slots=2)
        running = peak = 0

        async def job(i: int) -> None:
            nonlocal running, peak
            async with lock.hold(session=f"s{i}"):
                running += 1
                peak = max(peak, running)
                await trio.sleep(0.01)
                running -= 1

        async with trio.open_nursery() as n:
            for i in range(6):
                n.start_soon(job, i)
        assert peak == 2
        await lg.store.wait_durable(lg.store.last_id)
        assert (await lg.types()).count("sandbox.lock_acquired") == 6


async def test_two_daemons_share_the_hours_generations_on_a_shared_ledger(
    pg_database: object, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    """On PostgreSQL the hour is one row both daemons take from by a conditional UPDATE:
    ten starts racing from two daemons against a limit of three get three slots; the
    next clock hour is free again."""
    backend = _postgresql_backend(pg_database)
    clock = TrioClock(anchor=1_795_305_600.0 + 1800)  # 00:30 UTC
    async with (
        ledger(tmp_path / "a", clock, backend) as a,
        ledger(tmp_path / "b", clock, backend) as b,
    ):
        started, refused = 0, []

        async def one(lg: Ledger, i: int) -> None:
            nonlocal started
            try:
                await lg.gen.start(session=f"s{i}", tool="stern")
                started += 1
            except RateLimited as e:
                refused.append(e.data)

        async with trio.open_nursery() as n:
            for i in range(10):
                n.start_soon(one, (a, b)[i % 2], i)
        assert started == 3 and len(refused) == 7
        assert {r["retry_at"] for r in refused} == {"2026-11-22T01:00:00.000000Z"}
        with pytest.raises(RateLimited):
            await b.gen.check(session="c", tool="stern")
        await a.gen.refresh()
        assert a.gen.snapshot().count == 3
        await trio.sleep(1800)  # 01:00: a new hour's row
        await b.gen.start(session="next", tool="stern")


async def test_a_hold_left_without_its_event_is_released_at_the_next_start(
    pg_database: object, tmp_path: Path
) -> None:
    """A daemon that died between the day's UPDATE and its ``budget.reserved`` left money
    held that no call used: its next start releases it, and leaves alone a reservation
    its chain records (that one is the abandoned-run sweep's to settle)."""
    backend = _postgresql_backend(pg_database)
    clock = TrioClock(anchor=1_795_305_600.0)
    async with ledger(tmp_path, clock, backend) as lg:
        recorded = await lg.budget.reserve(0.30, session="s", purpose="p", confirmed=True)
        lost = await lg.days.hold("r-lost", recorded.day, 600_000, 1_000_000)  # then "died"
        assert lost.granted
        with pytest.raises(BudgetExceeded):  # held: the day is full
            await lg.budget.reserve(0.30, session="t", purpose="p", confirmed=True)
    async with ledger(tmp_path, clock, backend) as again:
        await again.budget.refresh()
        assert again.budget.snapshot().reserved_usd == 0.30  # the recorded one only
        assert list(again.state.spend.open) == [recorded.reservation]
        await again.budget.reserve(0.70, session="u", purpose="p", confirmed=True)
