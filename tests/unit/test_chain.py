from __future__ import annotations

import sqlite3
from pathlib import Path

import trio

from tsukud.clock import FixedClock
from tsukud.events.chain import GENESIS, link
from tsukud.events.store import EventStore, connect, verify_chain


def test_link_depends_on_every_field() -> None:
    base = link(GENESIS, 1, "2026-01-01T00:00:00.000000Z", "a.b", "s", '{"x":1}')
    variants = [
        link("1" * 64, 1, "2026-01-01T00:00:00.000000Z", "a.b", "s", '{"x":1}'),
        link(GENESIS, 2, "2026-01-01T00:00:00.000000Z", "a.b", "s", '{"x":1}'),
        link(GENESIS, 1, "2026-01-01T00:00:00.000001Z", "a.b", "s", '{"x":1}'),
        link(GENESIS, 1, "2026-01-01T00:00:00.000000Z", "a.c", "s", '{"x":1}'),
        link(GENESIS, 1, "2026-01-01T00:00:00.000000Z", "a.b", None, '{"x":1}'),
        link(GENESIS, 1, "2026-01-01T00:00:00.000000Z", "a.b", "s", '{"x":2}'),
    ]
    assert base not in variants
    assert len(set(variants)) == len(variants)


async def _fill(path: Path, n: int) -> None:
    store = EventStore(path, clock=FixedClock(1_800_000_000.0))
    store.open()
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        for i in range(n):
            store.append_nowait("client.test", {"i": i}, session="s1" if i % 2 else None)
        await store.wait_durable(n)
        store.close()
    store.close_connection()


def _verify(path: Path):  # type: ignore[no-untyped-def]
    conn = connect(path, readonly=True)
    try:
        return verify_chain(conn)
    finally:
        conn.close()


async def test_ledger_is_append_only_and_edits_are_detected(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await _fill(db, 50)
    assert _verify(db).ok and _verify(db).checked == 50

    conn = sqlite3.connect(db)
    try:
        conn.execute("UPDATE events SET payload = '{\"i\":999}' WHERE id = 17")
        raise AssertionError("update should be refused")
    except sqlite3.IntegrityError as e:
        assert "append-only" in str(e)
    # Someone with the file can drop the guard; the chain still tells.
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET payload = '{\"i\":999}' WHERE id = 17")
    conn.commit()
    conn.close()
    report = _verify(db)
    assert not report.ok and report.first_bad_id == 17


async def test_deleted_row_is_detected(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await _fill(db, 20)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE id = 5")
    conn.commit()
    conn.close()
    report = _verify(db)
    assert not report.ok and report.first_bad_id == 5 and "missing" in report.reason


async def test_reopen_continues_the_chain(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await _fill(db, 10)
    await _fill(db, 10)
    report = _verify(db)
    assert report.ok and report.checked == 20
