"""The event store against real SQLite: payloads checked on append, a batch that cannot
be committed rolled back whole, and a writer that is gone never leaves anyone waiting."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from tsukud.clock import FixedClock
from tsukud.errors import DiskFull, InternalError, InvalidParams, LedgerCorrupt
from tsukud.events.store import EventStore, connect, verify_chain
from tsukud.secrets import Redactor

NOW = 1_800_000_000.0


def rows(path: Path) -> list[tuple[int, str]]:
    conn = connect(path, readonly=True)
    try:
        return [
            (int(r[0]), str(r[1])) for r in conn.execute("SELECT id, type FROM events ORDER BY id")
        ]
    finally:
        conn.close()


@asynccontextmanager
async def writing(
    path: Path, *, accept: bool = False, redactor: Redactor | None = None
) -> AsyncIterator[EventStore]:
    store = EventStore(path, clock=FixedClock(NOW), redactor=redactor or Redactor())
    store.open(accept=accept)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            yield store
            store.close()
    finally:
        store.close_connection()


def poison(path: Path) -> None:
    """A real SQLite failure in the middle of a batch: inserting one type aborts."""
    conn = sqlite3.connect(path)
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.type = 'client.poison'"
        " BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    conn.commit()
    conn.close()


async def test_append_checks_the_payload_against_the_catalogue(tmp_path: Path) -> None:
    async with writing(tmp_path / "t.db") as store:
        with pytest.raises(InternalError, match="not in the event catalogue"):
            store.append_nowait("made.up", {})
        with pytest.raises(InternalError, match="amount_usd"):
            store.append_nowait("budget.reserved", {"reservation": "r-1", "day": "d"})
        with pytest.raises(InvalidParams, match="invalid event type"):
            store.append_nowait("Client.x", {})
        assert store.last_id == 0  # nothing refused took an id or a hash
        ev = await store.append(
            "budget.reserved", {"reservation": "r", "day": "d", "amount_usd": 1}
        )
        assert ev.id == 1
    assert rows(tmp_path / "t.db") == [(1, "budget.reserved")]


async def test_a_failed_batch_is_rolled_back_whole_and_its_waiters_get_an_error(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    errors: list[LedgerCorrupt] = []
    async with writing(db) as store:
        await store.append("client.before", {})
        poison(db)

        async def wait(id_: int) -> None:
            try:
                await store.wait_durable(id_)
            except LedgerCorrupt as e:
                errors.append(e)

        # One batch: two good events around the poisoned one, appended without a pause.
        ids = [store.append_nowait(t, {}).id for t in ("client.a", "client.poison", "client.b")]
        async with trio.open_nursery() as waiters:
            for id_ in ids:
                waiters.start_soon(wait, id_)
        assert len(errors) == 3
        assert "disk on fire" in errors[0].message and errors[0].code == "ledger_corrupt"
        assert errors[0].data["durable_id"] == 1
        assert store.failure is not None and "events 2-4" in store.failure

        # The writer is gone: a later append fails at once instead of hanging.
        with pytest.raises(LedgerCorrupt, match=r"cannot record client\.after"):
            store.append_nowait("client.after", {})
        with trio.fail_after(5):
            with pytest.raises(LedgerCorrupt):
                await store.append("client.after", {})
    # Nothing of the failed batch reached the disk, and what is there still verifies.
    assert rows(db) == [(1, "client.before")]
    conn = connect(db, readonly=True)
    try:
        assert verify_chain(conn).ok
    finally:
        conn.close()


def fill_disk(store: EventStore) -> None:
    """A real SQLITE_FULL: the database may not grow past the pages it has now."""
    conn = store._conn
    assert conn is not None
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")


def free_disk(store: EventStore) -> None:
    assert store._conn is not None
    store._conn.execute("PRAGMA max_page_count = 1073741823")


async def test_a_full_disk_refuses_appends_keeps_the_writer_and_resumes_by_itself(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    async with writing(db) as store:
        store.retry_s = 0.05
        await store.append("client.small", {"i": 1})
        fill_disk(store)
        ev = store.append_nowait("client.big", {"blob": "x" * 200_000})
        with pytest.raises(DiskFull) as refused:
            await store.wait_durable(ev.id)
        assert refused.value.code == "disk_full" and refused.value.exit_code == 29
        assert refused.value.retryable and str(db) in refused.value.message
        assert "free now" in refused.value.hint and refused.value.data["free_bytes"] > 0
        # New work is refused at once, without taking an id; the writer is still there.
        with pytest.raises(DiskFull, match=r"cannot record client\.more"):
            store.append_nowait("client.more", {})
        assert store.last_id == 2 and store.durable_id == 1 and store.failure is None
        await trio.sleep(0.2)  # a few retries, all still failing
        assert rows(db) == [(1, "client.small")]

        free_disk(store)  # space comes back: the kept event is written, appends work
        for _ in range(500):  # the next retry (every 50 ms here) gets through
            if store.durable_id >= ev.id:
                break
            await trio.sleep(0.01)
        assert store.durable_id == ev.id
        assert (await store.append("client.next", {})).id == 3
    assert rows(db) == [(1, "client.small"), (2, "client.big"), (3, "client.next")]
    conn = connect(db, readonly=True)
    try:
        assert verify_chain(conn).ok
    finally:
        conn.close()


async def test_a_stop_on_a_full_disk_is_prompt_and_the_ledger_reopens_consistent(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    with trio.fail_after(5):
        async with writing(db) as store:
            store.retry_s = 60.0  # a stop must not wait for the next retry
            await store.append("client.small", {"i": 1})
            fill_disk(store)
            ev = store.append_nowait("client.big", {"blob": "x" * 200_000})
            with pytest.raises(DiskFull):
                await store.wait_durable(ev.id)
        # close(): the writer tried once more, then returned.
    assert store.failure is not None and "no space left at stop" in store.failure
    with pytest.raises(DiskFull):
        await store.wait_durable(ev.id)
    assert rows(db) == [(1, "client.small")]
    # A restart picks the chain up from what is on disk, and the checkpoint agrees.
    async with writing(db) as again:
        assert again.last_id == 1 and not again.adopted
        assert (await again.append("client.next", {})).id == 2
    assert rows(db) == [(1, "client.small"), (2, "client.next")]


async def test_appends_after_the_writer_was_cancelled_raise_instead_of_hanging(
    tmp_path: Path,
) -> None:
    store = EventStore(tmp_path / "t.db", clock=FixedClock(NOW))
    store.open()
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            await store.append("client.x", {})
            nursery.cancel_scope.cancel()  # the writer dies without close()
        with trio.fail_after(5):
            await store.wait_durable(1)  # what it wrote stays durable
            with pytest.raises(LedgerCorrupt, match="writer has stopped"):
                store.append_nowait("client.y", {})
        assert store.failure is None  # cancelled, not failed
        assert store.last_id == 1
    finally:
        store.close_connection()


async def test_listeners_see_each_event_as_it_is_sequenced(tmp_path: Path) -> None:
    seen: list[tuple[int, str]] = []
    async with writing(tmp_path / "t.db") as store:
        store.subscribe(lambda ev: seen.append((ev.id, ev.type)))
        store.append_nowait("breaker.closed", {"provider": "claude"})
        assert seen == [(1, "breaker.closed")]  # synchronously, before any commit
        await store.wait_durable(1)
        assert store.durable_id == 1


async def test_caught_up_waits_for_what_was_sequenced_and_not_for_a_full_disk(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    async with writing(db) as store:
        store.append_nowait("client.a", {})
        store.append_nowait("client.b", {})
        assert store.durable_id == 0  # sequenced, not yet committed
        await store.caught_up()
        assert store.durable_id == 2 and rows(db)[-1] == (2, "client.b")

        store.retry_s = 0.05
        fill_disk(store)
        store.append_nowait("client.big", {"blob": "x" * 200_000})
        with trio.fail_after(5):  # a read shows what is on disk rather than hang
            await store.caught_up()
        assert store.durable_id == 2
        free_disk(store)
