"""The ledger against its checkpoint, with real SQLite files damaged the ways a crash, a
careless user or a same-uid attacker would: each is refused with ``ledger_corrupt`` saying
what was lost, and the legitimate cases (a new home, a loss the user accepted with
``tsukud --accept-ledger``) open."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from tests.unit.events.test_store import rows, writing
from tsukud.clock import FixedClock
from tsukud.errors import ExitCode, LedgerCorrupt
from tsukud.events.chain import GENESIS, link
from tsukud.events.integrity import (
    CHECKPOINT_SIZE,
    SLOT_OFFSETS,
    SLOT_SIZE,
    CheckpointWriter,
    checkpoint_path_for,
    read_checkpoint,
    write_checkpoint,
)
from tsukud.events.store import EventStore, connect

NOW = 1_800_000_000.0


async def append_durably(store: EventStore, n: int) -> None:
    for i in range(n):
        store.append_nowait("client.test", {"i": i})
    await store.wait_durable(store.last_id)


async def fill(db: Path, n: int) -> str:
    """``n`` client events through a real writer; returns the head hash."""
    async with writing(db) as store:
        await append_durably(store, n)
        return store.last_hash


def open_store(db: Path) -> EventStore:
    store = EventStore(db, clock=FixedClock(NOW))
    store.open()
    return store


def refused(db: Path) -> LedgerCorrupt:
    with pytest.raises(LedgerCorrupt) as info:
        open_store(db).close_connection()
    assert info.value.exit_code == ExitCode.LEDGER_CORRUPT
    return info.value


def truncate(db: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        p = Path(f"{db}{suffix}")
        if p.exists():
            p.write_bytes(b"")


def overwrite(db: Path, offset: int, data: bytes) -> None:
    with open(db, "r+b") as f:
        f.seek(offset)
        f.write(data)


def sql(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    for s in statements:
        conn.execute(s)
    conn.commit()
    conn.close()


def held(cp: Path) -> tuple[int, str] | None:
    anchor = read_checkpoint(cp)
    return None if anchor is None else (anchor.id, anchor.hash)


async def test_a_new_home_opens_and_the_checkpoint_follows_every_batch(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    cp = checkpoint_path_for(db)
    assert cp == tmp_path / "state" / "ledger.head"
    async with writing(db) as store:
        assert not store.adopted and not cp.exists()  # nothing committed yet
        await store.append("client.a", {})
        assert held(cp) == (1, store.last_hash)
        for i in range(3):
            store.append_nowait("client.b", {"i": i})
        await store.wait_durable(4)
        assert held(cp) == (4, store.last_hash)
    assert cp.stat().st_mode & 0o777 == 0o600 and cp.parent.stat().st_mode & 0o777 == 0o700


async def test_a_database_truncated_to_nothing_is_refused_with_what_was_lost(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    await fill(db, 40)
    truncate(db)
    e = refused(db)
    assert "events 1-40 are missing (40 events)" in e.message
    assert e.data["lost_from"] == 1 and e.data["lost_to"] == 40 and e.data["lost_count"] == 40
    assert "restore both files from a backup" in e.hint
    assert "tsukud --accept-ledger" in e.hint  # how to accept the loss instead


async def test_a_lost_wal_is_refused(tmp_path: Path) -> None:
    """The committed rows still in the -wal (not yet checkpointed into the main file)
    are gone when only the main file survives."""
    db = tmp_path / "t.db"
    await fill(db, 5)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # 1-5 are in the main file now
    conn.close()
    async with writing(db) as store:
        for i in range(10):
            store.append_nowait("client.late", {"i": i})
        await store.wait_durable(15)
        # The "crash": copy what is on disk while the writer's connection is still open,
        # the way kill -9 leaves it, minus the -wal.
        copy = tmp_path / "copy"
        copy.mkdir()
        shutil.copy(db, copy / "t.db")
        shutil.copytree(tmp_path / "state", copy / "state")
    e = refused(copy / "t.db")
    assert e.data["lost_from"] == 6 and e.data["lost_to"] == 15
    assert "the ledger ends at 5" in e.message


async def test_deleted_newest_rows_are_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await fill(db, 30)
    sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id > 25")
    e = refused(db)
    assert (e.data["lost_from"], e.data["lost_to"], e.data["lost_count"]) == (26, 30, 5)


async def test_an_edit_with_the_chain_recomputed_is_refused(tmp_path: Path) -> None:
    """The hash is keyless: an editor can recompute every later hash, and the chain then
    verifies on its own. The checkpoint's hash for the last id no longer matches."""
    db = tmp_path / "t.db"
    await fill(db, 20)
    conn = sqlite3.connect(db)
    conn.execute("DROP TRIGGER events_no_update")
    conn.execute("UPDATE events SET payload = '{\"i\":999}' WHERE id = 7")
    prev = conn.execute("SELECT hash FROM events WHERE id = 6").fetchone()[0]
    for id_, ts, type_, session, payload in conn.execute(
        "SELECT id, ts, type, session, payload FROM events WHERE id >= 7 ORDER BY id"
    ).fetchall():
        prev = link(prev, id_, ts, type_, session, payload)
        conn.execute("UPDATE events SET hash = ? WHERE id = ?", (prev, id_))
    conn.commit()
    conn.close()
    e = refused(db)
    assert "event 20 is not the one the checkpoint records" in e.message
    assert e.data["first_bad_id"] == 20 and "lost_count" not in e.data
    assert "edited outside tsuku" in e.hint


@pytest.mark.parametrize("damage", ["garbage", "torn_page"])
async def test_a_malformed_database_is_refused_with_recovery_steps(
    tmp_path: Path, damage: str
) -> None:
    db = tmp_path / "t.db"
    await fill(db, 300)
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    data = bytearray(db.read_bytes())
    if damage == "garbage":
        data = bytearray(b"this is not sqlite" * 100)
    else:
        page = 4096
        data[page : 3 * page] = b"\xa5" * (2 * page)  # the tables' first pages
    db.write_bytes(bytes(data))
    e = refused(db)
    assert "not a readable SQLite database" in e.message
    assert ".recover" in e.hint and "backup" in e.hint


async def test_a_ledger_without_its_checkpoint_is_refused_until_a_person_accepts_it(
    tmp_path: Path,
) -> None:
    """Issue 31: a missing checkpoint used to be adopted silently, so deleting it
    together with the newest rows passed every check."""
    db = tmp_path / "t.db"
    head = await fill(db, 12)
    checkpoint_path_for(db).unlink()
    e = refused(db)
    assert "holds 12 events but its checkpoint" in e.message and "is missing" in e.message
    assert "tsukud --accept-ledger" in e.hint and "put it back" in e.hint
    async with writing(db, accept=True) as store:
        assert store.adopted
        await store.wait_durable(13)
    assert rows(db)[-1] == (13, "ledger.adopted")
    conn = connect(db, readonly=True)
    (payload,) = conn.execute("SELECT payload FROM events WHERE id = 13").fetchone()
    conn.close()
    adopted = json.loads(payload)
    assert adopted["last_id"] == 12 and adopted["head"] == head
    assert adopted["reason"].startswith("accepted with tsukud --accept-ledger: ")
    assert "checkpoint" in adopted["reason"]
    async with writing(db) as again:  # anchored now: no second adoption, no question
        assert not again.adopted and again.last_id == 13


async def test_the_checkpoint_deleted_with_the_newest_rows_is_refused(tmp_path: Path) -> None:
    # The attack of issue 31 item 5: drop the newest rows, then the checkpoint that
    # would show them missing. The shorter chain is valid; the missing checkpoint is not.
    db = tmp_path / "t.db"
    await fill(db, 10)
    sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id > 6")
    checkpoint_path_for(db).unlink()
    e = refused(db)
    assert "holds 6 events" in e.message and e.data["checkpoint"] == "missing"


async def test_a_loss_is_accepted_with_accept_ledger_and_recorded(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await fill(db, 10)
    sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id > 6")
    e = refused(db)
    assert "tsukud --accept-ledger" in e.hint
    async with writing(db, accept=True) as store:
        assert store.adopted and store.last_id == 7  # 1-6 and the adoption
        await store.wait_durable(7)
    conn = connect(db, readonly=True)
    (payload,) = conn.execute("SELECT payload FROM events WHERE id = 7").fetchone()
    conn.close()
    adopted = json.loads(payload)
    assert (adopted["lost_from"], adopted["lost_to"], adopted["lost_count"]) == (7, 10, 4)
    async with writing(db) as again:
        assert not again.adopted and again.last_id == 7


async def test_accept_ledger_never_adopts_a_rewritten_chain(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await fill(db, 5)
    # The chain recomputed after an edit: the row at the checkpoint's id has another hash.
    sql(db, "DROP TRIGGER events_no_update", f"UPDATE events SET hash = '{'f' * 64}' WHERE id = 5")
    with pytest.raises(LedgerCorrupt) as e:
        EventStore(db, clock=FixedClock(NOW)).open(accept=True)
    assert "edited outside tsuku" in e.value.hint


async def test_an_empty_checkpoint_is_damage_not_absence(tmp_path: Path) -> None:
    # It is fsynced before it replaces the old one, so no power failure leaves it empty.
    db = tmp_path / "t.db"
    await fill(db, 3)
    checkpoint_path_for(db).write_bytes(b"")
    e = refused(db)
    assert "cannot be read (empty)" in e.message and "tsukud --accept-ledger" in e.hint
    async with writing(db, accept=True) as store:
        assert store.adopted


def test_the_checkpoint_is_fsynced_file_and_directory_before_it_replaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    cp = tmp_path / "state" / "ledger.head"
    write_checkpoint(cp, 7, "a" * 64)
    assert any(p.startswith(str(cp.parent) + "/.ledger.head.") for p in synced), synced
    assert str(cp.parent) in synced  # the rename itself is durable
    assert read_checkpoint(cp) is not None


async def test_an_unreadable_checkpoint_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await fill(db, 3)
    checkpoint_path_for(db).write_text('{"last_id": 3, "head": "not a hash"}')
    e = refused(db)
    assert "checkpoint" in e.message and "cannot be read" in e.message


async def test_verify_holds_the_chain_to_the_daemons_last_commit(tmp_path: Path) -> None:
    """Rows deleted behind a running daemon's back: the chain that is left is valid, but
    it no longer reaches the writer's last commit."""
    db = tmp_path / "t.db"
    async with writing(db) as store:
        for i in range(8):
            store.append_nowait("client.x", {"i": i})
        await store.wait_durable(8)
        report = await store.verify()
        assert report.ok and report.checked == 8 and report.head == store.last_hash
        sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id > 5")
        with pytest.raises(LedgerCorrupt) as info:
            await store.verify()
        assert info.value.data["lost_count"] == 3
        assert "the daemon's last commit records event 8" in info.value.message


async def test_verify_against_a_noted_head_catches_a_rewrite_of_both_files(
    tmp_path: Path,
) -> None:
    """An attacker with the user's uid deletes rows and rewrites the checkpoint to match:
    start-up and a plain verify cannot tell. A head the user noted earlier can."""
    db = tmp_path / "t.db"
    noted = await fill(db, 10)
    async with writing(db) as store:
        report = await store.verify(noted[:16])
        assert report.ok and report.head_id == 10
    sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id > 4")
    conn = connect(db, readonly=True)
    (h4,) = conn.execute("SELECT hash FROM events WHERE id = 4").fetchone()
    conn.close()
    checkpoint_path_for(db).write_text(json.dumps({"last_id": 4, "head": h4}))
    async with writing(db) as store:
        assert (await store.verify()).ok  # the limit docs/events.md states
        with pytest.raises(LedgerCorrupt, match="the head you gave") as info:
            await store.verify(noted)
        assert info.value.exit_code == ExitCode.LEDGER_CORRUPT
        assert "restore both from a backup that has that head" in info.value.hint


async def test_verify_reports_a_malformed_database(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    await fill(db, 400)
    async with writing(db) as store:
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        overwrite(db, 4096 * 3, b"\x00\xff" * 2048)  # behind the daemon's back
        with pytest.raises(LedgerCorrupt, match="not a readable SQLite database"):
            await store.verify()


def test_the_head_hash_of_an_empty_ledger_is_genesis(tmp_path: Path) -> None:
    store = open_store(tmp_path / "t.db")
    try:
        assert store.last_hash == store.durable_hash == GENESIS and not store.adopted
    finally:
        store.close_connection()


async def test_a_crash_between_commit_and_checkpoint_only_lags(tmp_path: Path) -> None:
    """The checkpoint is written after the commit: one batch behind is normal."""
    db = tmp_path / "t.db"
    await fill(db, 3)
    old = checkpoint_path_for(db).read_bytes()
    await fill(db, 3)
    checkpoint_path_for(db).write_bytes(old)  # as if the process died before moving it
    async with writing(db) as store:
        assert store.last_id == 6 and not store.adopted
        await trio.lowlevel.checkpoint()


async def test_rows_deleted_under_a_running_daemon_are_refused_at_the_next_start(
    tmp_path: Path,
) -> None:
    """The head and the checkpoint still agree after a middle deletion: only counting
    the rows shows it, and a start must not pass it."""
    db = tmp_path / "t.db"
    async with writing(db) as store:
        await append_durably(store, 10)
        sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id IN (3, 4)")
        await append_durably(store, 5)  # the daemon keeps appending after the deletion
    e = refused(db)
    assert "2 events are missing" in e.message and "3-4" in e.message
    assert e.data["lost_from"] == 3 and e.data["lost_to"] == 4
    # Accepting the loss (tsukud --accept-ledger) records the gap once...
    async with writing(db, accept=True) as store:
        assert store.adopted
        await store.wait_durable(store.last_id)
    conn = connect(db, readonly=True)
    (payload,) = conn.execute("SELECT payload FROM events WHERE type = 'ledger.adopted'").fetchone()
    conn.close()
    assert json.loads(payload)["missing"] == 2
    async with writing(db) as again:  # ...and later starts expect it
        assert not again.adopted
    sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id = 7")  # a new gap
    assert "1 event is missing" in refused(db).message


async def test_the_writer_refuses_to_chain_onto_rows_removed_under_it(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    async with writing(db) as store:
        await append_durably(store, 6)
        sql(db, "DROP TRIGGER events_no_delete", "DELETE FROM events WHERE id > 4")
        late = store.append_nowait("client.test", {"i": "late"})
        with pytest.raises(LedgerCorrupt) as info:
            await store.wait_durable(late.id)
        assert info.value.exit_code == ExitCode.LEDGER_CORRUPT
        assert "events 5-6 are missing" in (store.failure or "")
        with pytest.raises(LedgerCorrupt):
            store.append_nowait("client.test", {"i": "refused"})
    assert [i for i, _t in rows(db)] == [1, 2, 3, 4]  # nothing chained onto the gap


# ---- two slots, overwritten in place ---------------------------------------------------

H = [f"{i:x}" * 64 for i in range(10)]  # ten distinct head hashes ("000…", "111…", …)


def test_each_batch_overwrites_the_older_slot_of_the_same_file(tmp_path: Path) -> None:
    cp = tmp_path / "state" / "ledger.head"
    writer = CheckpointWriter(cp)
    writer.write(1, H[1])  # the first: a new file, both slots, atomically
    inode = cp.stat().st_ino
    for i in range(2, 6):
        writer.write(i, H[i])
        assert held(cp) == (i, H[i])
        assert cp.stat().st_ino == inode  # in place: no new file per batch
    data = cp.read_bytes()
    assert len(data) == CHECKPOINT_SIZE
    slots = [json.loads(data[at : at + SLOT_SIZE]) for at in SLOT_OFFSETS]
    assert sorted(s["last_id"] for s in slots) == [4, 5]  # the newest two


@pytest.mark.parametrize("damage", ["zeros", "half-written", "one-char", "sum"])
def test_a_torn_newest_slot_leaves_the_one_before(tmp_path: Path, damage: str) -> None:
    """A power failure mid-write damages only the slot being written: the read takes
    the other, one batch behind (harmless: the checkpoint may lag one batch)."""
    cp = tmp_path / "ledger.head"
    writer = CheckpointWriter(cp)
    for i in range(1, 4):
        writer.write(i, H[i])
    data = bytearray(cp.read_bytes())
    at = next(a for a in SLOT_OFFSETS if json.loads(data[a : a + SLOT_SIZE])["last_id"] == 3)
    slot = data[at : at + SLOT_SIZE]
    if damage == "zeros":
        slot = bytearray(SLOT_SIZE)
    elif damage == "half-written":
        slot[40:] = bytes(SLOT_SIZE - 40)
    elif damage == "one-char":  # still JSON, another head: the sum tells
        slot = slot.replace(b'"head":"3', b'"head":"4', 1)
    else:
        slot = slot.replace(b'"sum":"', b'"sum":"0', 1)[:SLOT_SIZE]
    data[at : at + SLOT_SIZE] = slot
    cp.write_bytes(data)
    assert held(cp) == (2, H[2])


def test_neither_slot_readable_is_refused_not_taken_for_no_checkpoint(tmp_path: Path) -> None:
    cp = tmp_path / "ledger.head"
    CheckpointWriter(cp).write(3, H[3])
    cp.write_bytes(b" " * CHECKPOINT_SIZE)
    with pytest.raises(LedgerCorrupt) as e:
        read_checkpoint(cp)
    assert "neither of its two slots" in e.value.message


def test_a_one_line_checkpoint_from_before_the_slots_is_read_and_replaced(
    tmp_path: Path,
) -> None:
    cp = tmp_path / "ledger.head"
    cp.write_text(json.dumps({"last_id": 7, "head": H[7]}) + "\n")
    assert held(cp) == (7, H[7])
    cp.write_text(json.dumps({"last_id": 7, "head": H[7], "sum": "00"}))  # not a slot's
    with pytest.raises(LedgerCorrupt):
        read_checkpoint(cp)
    cp.write_text(json.dumps({"last_id": 7, "head": H[7]}))
    CheckpointWriter(cp).write(8, H[8])  # a writer's first write makes the file anew
    assert held(cp) == (8, H[8]) and cp.stat().st_size == CHECKPOINT_SIZE


@pytest.mark.parametrize("how", ["removed", "replaced"])
def test_a_checkpoint_removed_or_replaced_under_the_writer_is_made_again(
    tmp_path: Path, how: str
) -> None:
    """Written in place, the slots would go to a removed file's orphaned inode (and the
    next start find no checkpoint) or into someone else's file: the writer notices and
    writes the whole file again."""
    cp = tmp_path / "ledger.head"
    writer = CheckpointWriter(cp)
    writer.write(1, H[1])
    writer.write(2, H[2])
    if how == "removed":
        cp.unlink()
    else:
        cp.write_text(json.dumps({"last_id": 0, "head": H[0]}))
    writer.write(3, H[3])
    assert held(cp) == (3, H[3]) and cp.stat().st_size == CHECKPOINT_SIZE


def test_a_new_writer_never_takes_an_older_runs_higher_slot(tmp_path: Path) -> None:
    """After a loss the user accepted (``--accept-ledger``) the next id is lower than
    the last checkpoint's: the new run's first write replaces both slots, so the newest
    slot is always this run's."""
    cp = tmp_path / "ledger.head"
    first = CheckpointWriter(cp)
    for i in range(5, 8):
        first.write(i, H[i])
    second = CheckpointWriter(cp)
    second.write(3, H[3])
    assert held(cp) == (3, H[3])
    second.write(4, H[4])
    assert held(cp) == (4, H[4])


def test_every_checkpoint_written_in_place_is_synced_before_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []
    real = os.fdatasync

    def fdatasync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    cp = tmp_path / "ledger.head"
    writer = CheckpointWriter(cp)
    writer.write(1, H[1])  # whole and atomic: fsync'd as write_checkpoint is
    for i in range(2, 5):
        writer.write(i, H[i])
    assert synced == [str(cp)] * 3
