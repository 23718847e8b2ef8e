"""The breaker machine for a remote service's scope (``registry:npm``), against a real
SQLite ledger on trio's clock: only transport failures open it, the cool-down admits
exactly one probe among many callers, the probe's verdict closes or re-opens it, and a
restarted daemon folds the same state from the events (old ``provider``-only rows too)."""

from __future__ import annotations

from pathlib import Path

import trio
import trio.lowlevel
import trio.testing

from tests.unit.test_policy import ledger
from tsukud.batch.outcome import Failure
from tsukud.clock import TrioClock
from tsukud.policy.breaker import registry_scope

NPM = registry_scope("npm")
OUTAGE = Failure("transport", "https://registry.npmjs.org/x: HTTP 503", True, "npm", True)
BAD_RECIPE = Failure("validation", "the recipe did not verify", False, "npm", False)
UNKNOWN = Failure("not_found", "npm package x does not exist", False, "npm", False)


async def test_transport_failures_open_it_and_bad_jobs_never_do(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path / "t.db", TrioClock()) as lg:
        b = lg.breakers
        for _ in range(20):
            assert b.admit(NPM)
            b.record(NPM, BAD_RECIPE)
            assert b.admit(NPM)
            b.record(NPM, UNKNOWN)
        assert b.state(NPM) == "closed"
        assert b.admit(registry_scope("pypi"))
        for _ in range(3):
            assert b.admit(NPM)
            b.record(NPM, OUTAGE)
        assert b.state(NPM) == "open" and not b.admit(NPM)
        assert b.admit(registry_scope("pypi"))  # one ecosystem's outage is its own
        await trio.sleep(59)
        assert not b.admit(NPM)
        types = await lg.types()
        assert types.count("breaker.failure") == 3 and types.count("breaker.opened") == 1
        (row,) = [s for s in b.snapshot() if s.scope == NPM]
        assert row.state == "open" and row.last_error == "transport"
        await lg.store.wait_durable(lg.store.last_id)
        payloads = lg.store.read_sync(
            lambda c: [
                r[0] for r in c.execute("SELECT payload FROM events WHERE type = 'breaker.opened'")
            ]
        )
        # a registry is no LLM provider: summaries by provider must not list it
        assert all('"provider"' not in p and NPM in p for p in payloads)


async def test_a_success_ends_the_streak(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path / "t.db", TrioClock()) as lg:
        b = lg.breakers
        for _ in range(5):
            for _ in range(2):
                b.admit(NPM)
                b.record(NPM, OUTAGE)
            b.admit(NPM)
            b.record(NPM, None)
        assert b.state(NPM) == "closed"
        assert (await lg.types()).count("breaker.streak_ended") == 5


async def test_exactly_one_probe_among_many_callers_and_its_success_closes(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path / "t.db", TrioClock()) as lg:
        b = lg.breakers
        for _ in range(3):
            b.admit(NPM)
            b.record(NPM, OUTAGE)
        await trio.sleep(61)
        admitted: list[int] = []

        async def job(i: int) -> None:
            await trio.lowlevel.checkpoint()
            if b.admit(NPM):
                admitted.append(i)
                await trio.sleep(5)  # the probe's requests take a while
                b.record(NPM, None)

        async with trio.open_nursery() as n:
            for i in range(25):
                n.start_soon(job, i)
            await trio.sleep(1)
            assert len(admitted) == 1 and b.state(NPM) == "half_open"
        assert b.state(NPM) == "closed"
        assert all(b.admit(NPM) for _ in range(10))
        breaker = [t for t in await lg.types() if t.startswith("breaker.")]
        assert breaker[-3:] == ["breaker.opened", "breaker.half_opened", "breaker.closed"]


async def test_a_failed_probe_reopens_and_a_bad_job_as_probe_closes(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    async with ledger(tmp_path / "t.db", TrioClock()) as lg:
        b = lg.breakers
        for _ in range(3):
            b.admit(NPM)
            b.record(NPM, OUTAGE)
        await trio.sleep(61)
        assert b.admit(NPM)
        b.record(NPM, OUTAGE)  # the probe met the outage again
        assert b.state(NPM) == "open" and not b.admit(NPM)
        await trio.sleep(61)
        assert b.admit(NPM)
        b.release(NPM)  # cancelled: no verdict, the next caller probes
        assert b.admit(NPM)
        b.record(NPM, UNKNOWN)  # a 404 is an answer: the registry is up
        assert b.state(NPM) == "closed"


async def test_a_restarted_daemon_keeps_the_state(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    db = tmp_path / "t.db"
    clock = TrioClock()
    async with ledger(db, clock) as lg:
        for _ in range(2):
            lg.breakers.admit(NPM)
            lg.breakers.record(NPM, OUTAGE)
        await lg.store.wait_durable(lg.store.last_id)
    async with ledger(db, clock) as lg:
        assert lg.breakers.state(NPM) == "closed"
        lg.breakers.admit(NPM)
        lg.breakers.record(NPM, OUTAGE)  # the third of the streak, across the restart
        assert lg.breakers.state(NPM) == "open"
        await lg.store.wait_durable(lg.store.last_id)
    async with ledger(db, clock) as lg:
        assert not lg.breakers.admit(NPM)
        await trio.sleep(61)
        assert lg.breakers.admit(NPM)  # the probe
        assert not lg.breakers.admit(NPM)
        await lg.store.wait_durable(lg.store.last_id)
    async with ledger(db, clock) as lg:
        # half-open after a restart: the old probe died with its process
        assert lg.breakers.state(NPM) == "half_open"
        assert lg.breakers.admit(NPM)
        lg.breakers.record(NPM, None)
        assert lg.breakers.state(NPM) == "closed"


async def test_old_provider_only_rows_still_fold(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    db = tmp_path / "t.db"
    clock = TrioClock()
    async with ledger(db, clock) as lg:
        lg.store.append_nowait("breaker.opened", {"provider": "claude", "failures": 3}, None)
        await lg.store.wait_durable(lg.store.last_id)
    async with ledger(db, clock) as lg:
        assert lg.breakers.state("claude") == "open"
        await trio.sleep(61)
        lg.breakers.acquire("claude")
        lg.breakers.succeeded("claude", {"model": "m"})
        assert lg.breakers.state("claude") == "closed"
        await lg.store.wait_durable(lg.store.last_id)
        rows = lg.store.read_sync(
            lambda c: [
                r[0]
                for r in c.execute(
                    "SELECT payload FROM events WHERE type LIKE 'breaker.%' ORDER BY id"
                )
            ]
        )
    # new events say which scope (an LLM provider's also as provider, as before)
    assert '"scope":"claude"' in rows[-1].replace(" ", "")
    assert '"provider":"claude"' in rows[-1].replace(" ", "")
