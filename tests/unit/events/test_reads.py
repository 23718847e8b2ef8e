"""The ledger's read pool against real SQLite: queries run side by side on their own
read-only connections, never hold up the writer, and a cancelled query is interrupted
rather than left running."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, closing
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.unit.events.conftest import StoreFactory
from tsukud.clock import FixedClock
from tsukud.events.readers import PoolClosed, ReadPool, ReadTooSlow
from tsukud.events.store import EventStore, connect

NOW = 1_800_000_000.0
# Counts forever: only an interrupt ends it.
ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@asynccontextmanager
async def ledger(
    path: Path, readers: int = 2, backend: StoreFactory | None = None
) -> AsyncIterator[EventStore]:
    """A store with one event; ``backend``: either one (``path``'s directory is its home)."""
    if backend is None:
        store = EventStore(path, clock=FixedClock(NOW), readers=readers)
    else:
        store = backend(path.parent, FixedClock(NOW), readers=readers)
    store.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await store.append("client.seed", {})
            yield store
            store.close()
    finally:
        store.close_connection()


def endless(
    started: trio.Event, errors: list[BaseException]
) -> Callable[[sqlite3.Connection], int]:
    """A query that runs until interrupted; says when it has started, keeps its error."""

    def fn(conn: sqlite3.Connection) -> int:
        trio.from_thread.run_sync(started.set)
        try:
            return int(conn.execute(ENDLESS).fetchone()[0])
        except BaseException as e:
            errors.append(e)
            raise

    return fn


async def all_idle(pool: ReadPool) -> None:
    """Until every opened connection is back in the pool (threads finish on their own),
    for up to 5 s."""
    for _ in range(500):
        if pool.idle == pool.opened:
            return
        await trio.sleep(0.01)


def holding(inside: trio.Event, release: threading.Event) -> Callable[[sqlite3.Connection], int]:
    """A read that holds its connection until ``release``; says when it has it."""

    def hold(conn: sqlite3.Connection) -> int:
        trio.from_thread.run_sync(inside.set)
        release.wait(10)
        return 0

    return hold


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM events").fetchone()[0])


async def test_a_quick_read_is_not_delayed_by_a_slow_one(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async with ledger(tmp_path / "t.db", backend=backend) as store, trio.open_nursery() as nursery:
        started = trio.Event()
        errors: list[BaseException] = []
        nursery.start_soon(store.read, endless(started, errors))
        await started.wait()
        with trio.fail_after(5):  # the slow query never ends: waiting for it would time out
            assert await store.read(count) == 1
        assert not errors  # the slow one is still running alongside
        nursery.cancel_scope.cancel()


async def test_heavy_reads_leave_a_connection_for_quick_ones(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async with (
        ledger(tmp_path / "t.db", readers=3, backend=backend) as store,
        trio.open_nursery() as nursery,
    ):
        errors: list[BaseException] = []
        running = [trio.Event(), trio.Event(), trio.Event()]
        for ev in running:
            nursery.start_soon(partial(store.read, endless(ev, errors), heavy=True))
        for _ in range(500):  # trio starts the three in any order: wait for two
            if sum(ev.is_set() for ev in running) == 2:
                break
            await trio.sleep(0.01)
        await trio.sleep(0.2)
        # Two of three connections: the third heavy query waits.
        assert sum(ev.is_set() for ev in running) == 2
        with trio.fail_after(5):
            assert await store.read(count) == 1
        assert store.readers.opened == 3
        nursery.cancel_scope.cancel()


async def test_cancelling_a_read_interrupts_its_query(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async with ledger(tmp_path / "t.db", backend=backend) as store:
        started = trio.Event()
        errors: list[BaseException] = []
        with trio.move_on_after(10) as scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(store.read, endless(started, errors))
                await started.wait()
                nursery.cancel_scope.cancel()
        assert not scope.cancelled_caught
        # The thread was abandoned; the interrupt ends its query and gives the
        # connection back (an endless query would keep it forever).
        await all_idle(store.readers)
        assert store.readers.idle == store.readers.opened == 1
        assert len(errors) == 1
        if store.origin is None:
            assert isinstance(errors[0], sqlite3.OperationalError)
            assert "interrupted" in str(errors[0])
        else:  # PostgreSQL cancels the statement
            assert "canceling statement due to user request" in str(errors[0])
        # The interrupted connection is healthy for the next query.
        assert await store.read(count) == 1


async def test_a_cancel_that_comes_before_the_statement_starts_still_ends_it(
    backend: StoreFactory, tmp_path: Path
) -> None:
    """The caller is cancelled after the thread took its connection but before its
    statement reached the server: PostgreSQL ignores a cancel for a session that is not
    running one, so the interrupt is repeated until the thread lets go (a CI run's
    endless query kept its connection after one ignored cancel)."""

    def late(started: trio.Event, errors: list[BaseException]) -> Callable[[Any], int]:
        def fn(conn: Any) -> int:
            trio.from_thread.run_sync(started.set)
            time.sleep(0.4)  # the cancel arrives now, while the session is idle
            try:
                return int(conn.execute(ENDLESS).fetchone()[0])
            except BaseException as e:
                errors.append(e)
                raise

        return fn

    async with ledger(tmp_path / "t.db", backend=backend) as store:
        started = trio.Event()
        errors: list[BaseException] = []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.read, late(started, errors))
            await started.wait()
            nursery.cancel_scope.cancel()
        await all_idle(store.readers)
        assert store.readers.idle == store.readers.opened == 1
        assert len(errors) == 1
        assert await store.read(count) == 1


async def test_a_cancelled_read_returns_its_connection_only_when_done(tmp_path: Path) -> None:
    """Until the interrupted thread lets go, the connection is not handed to anyone else."""
    pool = ReadPool(lambda: connect(tmp_path / "t.db", readonly=True), 2)
    sqlite3.connect(tmp_path / "t.db").execute("CREATE TABLE t (x)").connection.close()
    release = threading.Event()
    inside = trio.Event()
    hold = holding(inside, release)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.run, hold)
        await inside.wait()
        nursery.cancel_scope.cancel()
    assert (pool.opened, pool.idle) == (1, 0)  # still with the abandoned thread
    release.set()
    await all_idle(pool)
    assert (pool.opened, pool.idle) == (1, 1)
    pool.close()
    assert pool.opened == 0
    with pytest.raises(PoolClosed):
        await pool.run(count)


async def test_a_long_read_does_not_block_the_writer(tmp_path: Path) -> None:
    async with ledger(tmp_path / "t.db") as store, trio.open_nursery() as nursery:
        release = threading.Event()
        reading = trio.Event()
        seen: list[int] = []

        def long_read(conn: sqlite3.Connection) -> None:
            cur = conn.execute("SELECT id FROM events ORDER BY id")
            seen.append(cur.fetchone()[0])  # the statement is open: a snapshot is held
            trio.from_thread.run_sync(reading.set)
            release.wait(10)
            seen.extend(r[0] for r in cur.fetchall())

        nursery.start_soon(store.read, long_read)
        await reading.wait()
        with trio.fail_after(5):
            for _ in range(50):
                await store.append("client.note", {})
        assert store.durable_id == 51
        release.set()
    assert seen == [1]  # the reader's snapshot predates the writes it did not block
    with closing(connect(tmp_path / "t.db", readonly=True)) as conn:
        assert count(conn) == 51


async def test_pooled_connections_are_read_only_and_reused(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async with ledger(tmp_path / "t.db", backend=backend) as store:
        for _ in range(20):
            assert await store.read(count) == 1
        assert store.readers.opened == 1  # one query at a time: one connection, reused

        def write(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM events")

        with pytest.raises(Exception, match=r"readonly|read-only") as refused:
            await store.read(write)
        assert refused.type.__name__ in ("OperationalError", "ReadOnlySqlTransaction")

        def write_table(conn: sqlite3.Connection) -> None:  # not only through the view
            conn.execute(
                "INSERT INTO tsuku.events (origin, seq, ts, type, payload, hash)"
                " VALUES ('o', 9, '', 'x', '', '')"
            )

        if store.origin is not None:
            with pytest.raises(Exception, match="read-only"):
                await store.read(write_table)
        assert await store.read(count) == 1


async def test_concurrent_reads_never_open_more_connections_than_the_pool(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async with ledger(tmp_path / "t.db", readers=3, backend=backend) as store:
        peak = 0
        active = 0
        lock = threading.Lock()

        def busy(conn: sqlite3.Connection) -> int:
            nonlocal peak, active
            with lock:
                active += 1
                peak = max(peak, active)
            time.sleep(0.02)
            with lock:
                active -= 1
            return count(conn)

        async with trio.open_nursery() as nursery:
            for _ in range(30):
                nursery.start_soon(store.read, busy)
        assert peak == 3
        assert store.readers.opened == 3


async def test_a_read_past_its_limit_is_interrupted_and_gives_its_connection_back(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async with ledger(tmp_path / "t.db", backend=backend) as store:
        started = trio.Event()
        errors: list[BaseException] = []
        with trio.fail_after(10), pytest.raises(ReadTooSlow) as raised:
            await store.read(endless(started, errors), heavy=True, limit=0.1)
        assert raised.value.limit_s == 0.1
        assert started.is_set() and len(errors) == 1  # it ran, and was stopped
        await all_idle(store.readers)
        assert store.readers.idle == store.readers.opened == 1
        assert await store.read(count, limit=0.1) == 1  # the connection is healthy


async def test_waiting_for_a_connection_does_not_count_against_the_limit(tmp_path: Path) -> None:
    """Heavy reads queue for their lane; a quick one queued longer than its limit behind
    a slow one still gets its answer: only holding a connection counts."""
    async with ledger(tmp_path / "t.db") as store, trio.open_nursery() as nursery:
        release = threading.Event()
        inside = trio.Event()
        nursery.start_soon(partial(store.read, holding(inside, release), heavy=True))
        await inside.wait()
        got: list[int] = []

        async def queued() -> None:
            got.append(await store.read(count, heavy=True, limit=0.1))

        with trio.fail_after(10):
            async with trio.open_nursery() as inner:
                inner.start_soon(queued)
                await trio.sleep(0.4)  # queued four times its limit behind the held lane
                assert not got
                release.set()
        assert got == [1]
