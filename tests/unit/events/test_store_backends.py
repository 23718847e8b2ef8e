"""The storage interface's promises, held on both backends (SQLite, PostgreSQL): the same
tests, one implementation each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.unit.events.conftest import StoreFactory
from tsukud.clock import FixedClock
from tsukud.errors import InternalError, LedgerCorrupt
from tsukud.events import rollups
from tsukud.events.projections import rebuild
from tsukud.events.queries import EventFilter, iter_list
from tsukud.events.store import EventStore

NOW = 1_800_000_000.0


def own_rows(conn: Any) -> list[tuple[int, str]]:
    """This store's chain as its read connections present it (``events``, ``id``)."""
    return [(int(r[0]), str(r[1])) for r in conn.execute("SELECT id, type FROM events ORDER BY id")]


async def run_store(store: EventStore, body: Any) -> None:
    store.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await body(store)
            store.close()
    finally:
        store.close_connection()


async def test_appends_are_durable_in_order_and_readable(
    backend: StoreFactory, tmp_path: Path
) -> None:
    store = backend(tmp_path, FixedClock(NOW))

    async def body(s: EventStore) -> None:
        for i in range(5):
            s.append_nowait("client.x", {"i": i})
        ev = await s.append("breaker.closed", {"provider": "claude"})
        assert ev.id == 6 and s.durable_id == 6
        assert await s.read(own_rows) == [(i, "client.x") for i in range(1, 6)] + [
            (6, "breaker.closed")
        ]
        report = await s.verify()
        assert report.checked == 6 and report.head == s.last_hash

    await run_store(store, body)


async def test_the_chain_goes_on_after_a_reopen_and_state_is_rebuilt_from_it(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async def first(s: EventStore) -> None:
        await s.append("breaker.opened", {"provider": "claude", "failures": 3})

    await run_store(backend(tmp_path, FixedClock(NOW)), first)
    again = backend(tmp_path, FixedClock(NOW + 1))

    async def second(s: EventStore) -> None:
        assert s.last_id == 1
        state = s.read_sync(lambda conn: rebuild(conn, NOW + 1))
        assert state.breakers.get("claude").state == "open"
        assert (await s.append("client.next", {})).id == 2
        assert (await s.verify()).checked == 2

    await run_store(again, second)


async def test_payloads_are_checked_against_the_catalogue(
    backend: StoreFactory, tmp_path: Path
) -> None:
    async def body(s: EventStore) -> None:
        with pytest.raises(InternalError, match="not in the event catalogue"):
            s.append_nowait("made.up", {})
        assert s.last_id == 0

    await run_store(backend(tmp_path, FixedClock(NOW)), body)


async def test_appends_after_the_writer_was_cancelled_raise_instead_of_hanging(
    backend: StoreFactory, tmp_path: Path
) -> None:
    store = backend(tmp_path, FixedClock(NOW))
    store.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await store.append("client.x", {})
            nursery.cancel_scope.cancel()
        with trio.fail_after(5):
            await store.wait_durable(1)
            with pytest.raises(LedgerCorrupt, match="writer has stopped"):
                store.append_nowait("client.y", {})
    finally:
        store.close_connection()


async def test_listing_reads_what_was_appended(backend: StoreFactory, tmp_path: Path) -> None:
    async def body(s: EventStore) -> None:
        for t in ("client.a", "client.b", "client.a"):
            s.append_nowait(t, {})
        await s.caught_up()
        shared = s.origin is not None

        def newest_two(conn: Any) -> list[Any]:
            return [
                r
                for rows in iter_list(conn, EventFilter(types=["client.a"]), 2, shared=shared)
                for r in rows
            ]

        rows = await s.read(newest_two)
        assert [r[2] for r in rows] == ["client.a", "client.a"]
        if shared:  # each names its origin and its place in the origin's chain
            assert [(r[6], r[7]) for r in rows] == [(s.origin, 1), (s.origin, 3)]
        else:
            assert [r[0] for r in rows] == [1, 3]

    await run_store(backend(tmp_path, FixedClock(NOW)), body)


# ---- PostgreSQL only: what sharing one database adds ---------------------------------


async def test_a_second_writer_on_the_same_origin_is_refused_not_interleaved(
    pg_database: Any, tmp_path: Path
) -> None:
    """Two processes claiming one origin (a copied home) must not weave one chain: the
    one whose head moved under it is refused as ``ledger_corrupt``."""
    from tsukud.events.pg_store import PgEventStore

    first = PgEventStore(pg_database.url, tmp_path, clock=FixedClock(NOW))
    copy = PgEventStore(pg_database.url, tmp_path, clock=FixedClock(NOW))
    first.open()
    copy.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(first.run)
            await nursery.start(copy.run)
            await first.append("client.mine", {})
            with trio.fail_after(10), pytest.raises(LedgerCorrupt, match="something other"):
                await copy.append("client.theirs", {})
            first.close()
            copy.close()
    finally:
        first.close_connection()
        copy.close_connection()

    reopened = PgEventStore(pg_database.url, tmp_path, clock=FixedClock(NOW))

    async def body(s: EventStore) -> None:
        assert await s.read(own_rows) == [(1, "client.mine")]
        assert (await s.verify()).checked == 1

    await run_store(reopened, body)


async def test_a_batch_whose_commit_answer_was_lost_is_not_written_twice(
    pg_database: Any, tmp_path: Path
) -> None:
    """The connection dies after COMMIT reached the server: the retry finds the origin's
    head at the batch's last row and writes only what is not there yet."""
    from tsukud.events.chain import GENESIS, link
    from tsukud.events.pg_store import PgEventStore

    async def two(s: EventStore) -> None:
        s.append_nowait("client.a", {})
        await s.append("client.b", {})

    await run_store(PgEventStore(pg_database.url, tmp_path, clock=FixedClock(NOW)), two)

    store = PgEventStore(pg_database.url, tmp_path, clock=FixedClock(NOW))
    store.open()  # no writer task: this test is the writer
    try:
        rows = [
            tuple(r)
            for r in store.read_sync(
                lambda conn: list(
                    conn.execute(
                        "SELECT id, ts, type, session, payload, hash FROM events ORDER BY id"
                    )
                )
            )
        ]
        # As if the answer to the commit of rows 1-2 never came: the writer still holds
        # them as unwritten and tries them again, with one more row behind them.
        store.durable_id, store.durable_hash = 0, GENESIS
        ts = rows[-1][1]
        extra = (3, ts, "client.c", None, "{}", link(rows[-1][5], 3, ts, "client.c", None, "{}"))
        batch = [*rows, extra]
        counts = [rollups.contribution(r[1], r[2], json.loads(r[4])) for r in batch]
        store._write(batch, counts)
        assert store.read_sync(own_rows) == [(1, "client.a"), (2, "client.b"), (3, "client.c")]
    finally:
        store.close_connection()

    async def check(s: EventStore) -> None:
        assert s.last_id == 3 and (await s.verify()).checked == 3
        # The summary rollups counted rows 1-2 with their commit, and row 3 once more.
        assert not s.rollups_stale

    await run_store(PgEventStore(pg_database.url, tmp_path, clock=FixedClock(NOW)), check)
