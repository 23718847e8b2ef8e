from __future__ import annotations

import sqlite3
from pathlib import Path

import trio

from tsukud.clock import FixedClock
from tsukud.events.chain import GENESIS, Anchor, anchor_damage, check_chain, link
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


def _rows(n: int) -> list[tuple[int, str, str, str | None, str, str]]:
    rows, prev = [], GENESIS
    for i in range(1, n + 1):
        ts, payload = f"2026-01-01T00:00:{i:02d}.000000Z", f'{{"i":{i}}}'
        prev = link(prev, i, ts, "client.x", None, payload)
        rows.append((i, ts, "client.x", None, payload, prev))
    return rows


def test_check_chain_holds_the_rows_to_anchors_and_a_noted_head() -> None:
    rows = _rows(6)
    assert check_chain([rows[:3], rows[3:]]).ok  # batches are one sequence
    at4 = Anchor(4, rows[3][5], "the checkpoint")
    report = check_chain([rows], [at4], head=rows[2][5][:16])
    assert report.ok and report.checked == 6 and report.head == rows[5][5]
    assert report.head_id == 3

    short = check_chain([rows[:2]], [at4])  # the newest rows are gone
    assert short.damage is not None and short.damage.lost == (3, 4)
    assert short.damage.lost_count == 2 and "the checkpoint records event 4" in short.reason

    other = check_chain([rows], [Anchor(4, "f" * 64, "the checkpoint")])
    assert other.first_bad_id == 4 and "rewritten" in other.reason

    unknown = check_chain([rows], head="0123456789abcdef")
    assert unknown.damage is not None and unknown.damage.head_not_found
    assert check_chain([], [Anchor(0, GENESIS, "the checkpoint")]).ok  # an empty ledger


def test_anchor_damage_is_none_exactly_when_the_chain_passes_through_it() -> None:
    a = Anchor(5, "a" * 64, "x")
    assert anchor_damage(a, 5, "a" * 64) is None
    assert anchor_damage(a, 9, "a" * 64) is None  # later rows are fine
    lost = anchor_damage(a, 4, None)
    assert lost is not None and lost.lost == (5, 5) and "(1 event)" in lost.reason
    edited = anchor_damage(a, 9, "b" * 64)
    assert edited is not None and edited.lost is None and edited.first_bad_id == 5
