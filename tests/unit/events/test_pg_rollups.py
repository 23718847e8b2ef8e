"""Summary rollups on a shared ledger (PostgreSQL), one pair of tables for every origin:
daemons writing at once add up instead of colliding, a catch-up at start folds each
event once however the daemons' starts and batches interleave, and rollups edited by
hand are found by ``events verify`` and rebuilt. Real PostgreSQL (``tests/pg.py``), real
stores (each its own origin, as each daemon is)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
import trio

from tests.pg import PgDatabase
from tests.unit.events.test_summary_backends import DAY0, LEDGER, write
from tests.waiting import wait_until
from tsukud.clock import FixedClock
from tsukud.events import queries, rollups, summary
from tsukud.events.pg_store import PgEventStore, Qmark
from tsukud.events.queries import EventFilter
from tsukud.events.store import EventStore


def team_answers(store: EventStore, by: str) -> tuple[summary.SummaryAnswer, dict[Any, Any]]:
    """The summary ``events.summary`` answers (the team's), and the same groups read from
    every origin's events with no rollup."""

    def read(conn: Any) -> tuple[summary.SummaryAnswer, dict[Any, Any]]:
        answer = summary.summarise(conn, EventFilter(), by, shared=True)
        raw = queries.raw_sums(conn, EventFilter(), by, shared=True)
        return answer, {k: queries.group_row(k, v) for k, v in raw.items()}

    return store.read_sync(read)  # type: ignore[no-any-return]


def assert_rollups_count_every_event_once(store: EventStore, events: int) -> None:
    """The rollups count every origin to its head, hold a fold of the events (verify's
    question) and answer every grouping as the events do."""
    assert store.read_sync(rollups.pg_agree)
    for by in queries.GROUP_KEYS:
        answer, raw = team_answers(store, by)
        assert answer.source == "rollups", by
        assert {g.key: g for g in answer.groups} == raw, by
        assert answer.totals.events == events, by


def admin(db: PgDatabase) -> psycopg.Connection[Any]:
    return psycopg.connect(db.url, autocommit=True, options="-c search_path=tsuku")


def old_daemon_writes(conn: psycopg.Connection[Any], origin: str, n: int) -> None:
    """``n`` events of ``origin`` as a daemon from before rollups writes them (still
    running after the schema was migrated): its rows and head, no sums, no mark."""
    conn.execute(
        "INSERT INTO tsuku.origins (origin, first_seen) VALUES (%s, '2027-01-15')"
        " ON CONFLICT (origin) DO NOTHING",
        (origin,),
    )
    (head,) = conn.execute(
        "SELECT head_seq FROM tsuku.origins WHERE origin = %s", (origin,)
    ).fetchone() or (0,)
    with conn.transaction():
        for seq in range(head + 1, head + n + 1):
            ts = f"2027-01-15T0{seq % 3}:00:0{seq % 10}.000000Z"
            turn = f'{{"provider":"claude","input_tokens":{seq},"cost_usd":0.000000{seq % 10}}}'
            conn.execute(
                "INSERT INTO tsuku.events (origin, seq, ts, type, session, payload, hash)"
                " VALUES (%s, %s, %s, 'llm.turn', %s, %s, 'x')",
                (origin, seq, ts, "s1" if seq % 2 else None, turn),
            )
        conn.execute("UPDATE tsuku.origins SET head_seq = %s WHERE origin = %s", (head + n, origin))


async def test_two_origins_appending_at_once_add_up_to_a_fold_of_every_event(
    pg_database: PgDatabase, tmp_path: Path
) -> None:
    """Two daemons' batches land on the same rollup rows (same hours, types, providers,
    sessions) in overlapping transactions: each adds, none is lost or refused."""
    clock = FixedClock(DAY0)
    stores = [PgEventStore(pg_database.url, tmp_path / n, clock=clock) for n in "ab"]
    rounds = 40

    async def appends(store: EventStore) -> None:
        for i in range(rounds):
            for t, type_, payload, session in LEDGER:
                clock.t = DAY0 + t
                store.append_nowait(type_, payload, session)
            if i % 2:
                await store.wait_durable(store.last_id)  # many batches, not one
        await store.wait_durable(store.last_id)

    for s in stores:
        s.open()
    try:
        async with trio.open_nursery() as nursery:
            for s in stores:
                await nursery.start(s.run)
            async with trio.open_nursery() as writers:
                for s in stores:
                    writers.start_soon(appends, s)
            for s in stores:
                s.close()
        assert_rollups_count_every_event_once(stores[0], 2 * rounds * len(LEDGER))
    finally:
        for s in stores:
            s.close_connection()


def test_two_catch_ups_at_once_fold_each_event_once(
    pg_database: PgDatabase, tmp_path: Path
) -> None:
    """Two daemons starting together on events no rollup counts: the second catch-up
    waits for the first's marks and then finds nothing left to fold. The fold by SQL
    ends where the writer's Python fold (``add_up``) ended."""
    clock = FixedClock(DAY0)
    store = PgEventStore(pg_database.url, tmp_path / "a", clock=clock)
    write(store, clock, LEDGER)
    with admin(pg_database) as conn:
        old_daemon_writes(conn, "old-b", 30)
    # Events no rollup counts yet: the summary reads the events, and says so.
    answer, raw = team_answers(store, "type")
    assert answer.source == "raw" and answer.totals.events == len(LEDGER) + 30
    assert {g.key: g for g in answer.groups} == raw
    with admin(pg_database) as conn:
        written = [
            conn.execute(f"SELECT * FROM tsuku.{t.name} ORDER BY 1, 2, 3, 4").fetchall()
            for t in rollups.TABLES
        ]
        # Every origin's mark at 0, nothing counted: as the migration left the tables.
        conn.execute("DELETE FROM tsuku.rollups")
        conn.execute("DELETE FROM tsuku.session_rollups")
        conn.execute("UPDATE tsuku.rollup_marks SET through = 0")
        conn.execute("INSERT INTO tsuku.rollup_marks VALUES ('old-b', 0)")

    first, second, watch = admin(pg_database), admin(pg_database), admin(pg_database)
    folded: list[int] = []

    def catch_up(conn: psycopg.Connection[Any]) -> None:
        with conn.transaction():
            folded.append(rollups.pg_catch_up(Qmark(conn)))

    other = threading.Thread(target=catch_up, args=(second,))
    try:
        with first.transaction():
            assert rollups.pg_catch_up(Qmark(first)) == len(LEDGER) + 30
            other.start()
            pid = second.info.backend_pid
            wait_until(
                lambda: (
                    watch.execute(
                        "SELECT wait_event_type = 'Lock' FROM pg_stat_activity WHERE pid = %s",
                        (pid,),
                    ).fetchone()
                    == (True,)
                ),
                "the second catch-up waiting for the first",
            )
        other.join(timeout=30)
        assert folded == [0]
    finally:
        other.join(timeout=30)
        for conn in (first, second, watch):
            conn.close()
    assert_rollups_count_every_event_once(store, len(LEDGER) + 30)
    with admin(pg_database) as conn:
        with_b = conn.execute("SELECT * FROM tsuku.rollups ORDER BY 1, 2, 3, 4").fetchall()
        assert conn.execute("SELECT * FROM tsuku.rollup_marks ORDER BY 1").fetchall() == sorted(
            [(store.origin, len(LEDGER)), ("old-b", 30)]
        )
        conn.execute("DELETE FROM tsuku.rollups")
        conn.execute("DELETE FROM tsuku.session_rollups")
        conn.execute("UPDATE tsuku.rollup_marks SET through = 0 WHERE origin = %s", (store.origin,))
        conn.execute("UPDATE tsuku.rollup_marks SET through = 30 WHERE origin = 'old-b'")
        with conn.transaction():
            assert rollups.pg_catch_up(Qmark(conn)) == len(LEDGER)
        folded_again = [
            conn.execute(f"SELECT * FROM tsuku.{t.name} ORDER BY 1, 2, 3, 4").fetchall()
            for t in rollups.TABLES
        ]
    assert folded_again == written
    assert with_b != folded_again[0]  # old-b's turns were counted above


async def test_a_daemon_starting_while_others_write_counts_nothing_twice(
    pg_database: PgDatabase, tmp_path: Path
) -> None:
    """One daemon appends batch after batch, and a daemon from before rollups keeps
    writing, while two more daemons start (each catching up at start): every event is
    counted once."""
    clock = FixedClock(DAY0)
    writer = PgEventStore(pg_database.url, tmp_path / "w", clock=clock)
    starting = [PgEventStore(pg_database.url, tmp_path / n, clock=clock) for n in "xy"]
    conn = admin(pg_database)
    writer.open()
    stop = trio.Event()
    appended = 0

    async def appends() -> None:
        nonlocal appended
        while not stop.is_set():
            for t, type_, payload, session in LEDGER[:6]:
                clock.t = DAY0 + t
                writer.append_nowait(type_, payload, session)
            appended += 6
            await writer.wait_durable(writer.last_id)

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            nursery.start_soon(appends)
            for s in starting:
                await trio.to_thread.run_sync(old_daemon_writes, conn, "old-b", 25)
                await trio.to_thread.run_sync(s.open)
            stop.set()
            writer.close()
        assert_rollups_count_every_event_once(writer, appended + 2 * 25)
        assert appended > 6
    finally:
        conn.close()
        writer.close_connection()
        for s in starting:
            s.close_connection()


async def test_a_rollup_row_edited_by_hand_is_found_by_verify_and_rebuilt(
    pg_database: PgDatabase, tmp_path: Path
) -> None:
    clock = FixedClock(DAY0)
    other = PgEventStore(pg_database.url, tmp_path / "b", clock=clock)
    await trio.to_thread.run_sync(write, other, clock, LEDGER)  # its own trio.run
    store = PgEventStore(pg_database.url, tmp_path / "a", clock=clock)
    store.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await store.append("llm.turn", {"provider": "claude", "cost_usd": 0.5}, "s1")
            assert (await store.verify()).checked == 1
            assert not store.rollups_stale
            with admin(pg_database) as conn:
                conn.execute(
                    "UPDATE tsuku.rollups SET cost_nano = cost_nano + 7 WHERE provider = 'claude'"
                )
            assert (await store.verify()).checked == 1  # the chain is fine ...
            assert store.rollups_stale  # ... the rollups are not: rebuilt by the writer
            await store.append("daemon.stopped", {"pid": 1, "uptime_s": 1.0})
            assert not store.rollups_stale
            await store.verify()
            assert not store.rollups_stale
            store.close()
        assert_rollups_count_every_event_once(store, len(LEDGER) + 2)
        claude = team_answers(store, "provider")[0].groups
        spent = 0.012345678 + 0.5 + 0.25 + 1.5e-6 + 0.5  # LEDGER's and this one's
        assert [g.cost_usd for g in claude if g.key == "claude"] == [pytest.approx(spent)]
    finally:
        store.close_connection()


async def test_a_writer_whose_mark_was_moved_under_it_catches_up_between_batches(
    pg_database: PgDatabase, tmp_path: Path
) -> None:
    """The rollups emptied and every mark put back to 0 while a daemon runs (as a
    consistent state: nothing counted): its next batch is not added on top of nothing,
    the writer folds every origin's events before the batch after, and summaries read
    the events until then."""
    clock = FixedClock(DAY0)
    store = PgEventStore(pg_database.url, tmp_path / "a", clock=clock)
    store.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await store.append("llm.turn", {"provider": "claude", "cost_usd": 0.5}, "s1")
            with admin(pg_database) as conn:
                conn.execute("DELETE FROM tsuku.rollups")
                conn.execute("DELETE FROM tsuku.session_rollups")
                conn.execute("UPDATE tsuku.rollup_marks SET through = 0")
            await store.append("llm.turn", {"provider": "gemini", "cost_usd": 0.25}, None)
            await store.append("daemon.stopped", {"pid": 1, "uptime_s": 1.0})
            store.close()
        assert_rollups_count_every_event_once(store, 3)
    finally:
        store.close_connection()
