"""The ledger's checkpoint, and what a damaged or full ledger tells the user.

The hash chain proves that the rows present were not edited; it cannot show that the
newest rows are gone, because a shorter chain is still a valid one. So the writer keeps a
checkpoint outside the database, ``state/ledger.head`` next to it: the last committed id
and its hash, moved after every committed batch (one small write per batch, not per
event). It is written only after SQLite has committed (and fsynced) the batch, so it
never runs ahead of the database; after a crash it may lag by one batch, which is
harmless. A power failure must never leave it empty or unreadable (that would be
indistinguishable from one an attacker deleted), so it holds two slots, each with its
own checksum, a page apart; each batch overwrites the older slot in place and syncs it
(``CheckpointWriter``), and a read takes the newest slot that checks out. A torn write
can only damage the slot being written, and the other still holds the previous
checkpoint. The file itself is created, and replaced when it is not the one this writer
made, atomically: written whole, fsynced, renamed over the old one, directory fsynced.
A one-line checkpoint from before the slots is still read.

A database that ends before the checkpoint's id (a truncated or deleted file, a lost
``-wal``, deleted rows), whose row at that id has another hash (a rewritten chain), or
that holds events but has no checkpoint at all (deleting it together with the newest
rows must not pass), is refused at start and by ``events verify``. Going on with such a
ledger is a person's explicit act, ``tsukud --accept-ledger``, recorded with what was
lost.

Same-uid attackers can rewrite both files; docs/events.md says so, and offers
``events verify --head`` against a head kept elsewhere.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from tsukud.errors import LedgerCorrupt
from tsukud.events.chain import Anchor, Damage, anchor_damage
from tsukud.fsutil import NO_SPACE, nearly_full, write_atomic

CHECKPOINT_SOURCE = "the checkpoint"
_HEX = frozenset("0123456789abcdef")


class _Checkpoint(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    last_id: int
    head: str
    sum: str = ""  # of a slot (``_slot_sum``); "" in a one-line checkpoint from before slots


# Two slots, each on a page of its own (a torn write of one cannot reach the other), each
# a JSON object padded with spaces to a fixed size and ended by a newline.
SLOT_SIZE = 128
SLOT_OFFSETS = (0, 4096)
CHECKPOINT_SIZE = SLOT_OFFSETS[1] + SLOT_SIZE


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Checkpoint)


def checkpoint_path_for(db: Path) -> Path:
    return db.parent / "state" / "ledger.head"


def read_checkpoint(path: Path) -> Anchor | None:
    """The checkpoint, or None when there is none (a new home, or a ledger from before
    checkpoints). One that cannot be read is damage, not absence: the newest slot that
    checks out is the checkpoint, and a file with neither is unreadable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _unreadable(path, str(e)) from None
    if not data:
        raise _unreadable(path, "empty")
    if len(data) != CHECKPOINT_SIZE:  # one line, as written before the slots
        try:
            cp = _decoder.decode(data)
        except msgspec.DecodeError as e:
            raise _unreadable(path, str(e)) from None
        if cp.sum or not _sound(cp):
            raise _unreadable(path, "not a (last id, head hash) pair")
        return Anchor(cp.last_id, cp.head, CHECKPOINT_SOURCE)
    slots = [_read_slot(data[at : at + SLOT_SIZE]) for at in SLOT_OFFSETS]
    found = [cp for cp in slots if cp is not None]
    if not found:
        raise _unreadable(path, "neither of its two slots holds a checked (last id, head hash)")
    newest = max(found, key=lambda cp: cp.last_id)
    return Anchor(newest.last_id, newest.head, CHECKPOINT_SOURCE)


def _read_slot(data: bytes) -> _Checkpoint | None:
    try:
        cp = _decoder.decode(data)
    except msgspec.DecodeError:
        return None  # torn by a crash mid-write, or never written
    if not _sound(cp) or cp.sum != _slot_sum(cp.last_id, cp.head):
        return None
    return cp


def _sound(cp: _Checkpoint) -> bool:
    return cp.last_id >= 0 and len(cp.head) == 64 and set(cp.head) <= _HEX


def _slot_sum(last_id: int, head: str) -> str:
    return hashlib.sha256(b"%d:%s" % (last_id, head.encode("ascii"))).hexdigest()[:16]


def _slot(last_id: int, head: str) -> bytes:
    body = _encoder.encode(_Checkpoint(last_id, head, _slot_sum(last_id, head)))
    return body.ljust(SLOT_SIZE - 1) + b"\n"


def write_checkpoint(path: Path, last_id: int, head: str) -> None:
    """A new checkpoint file, both slots holding (``last_id``, ``head``), replacing
    whatever was there atomically: a writer's first checkpoint, and set-ups (a
    benchmark's ledger built outside a daemon)."""
    slot = _slot(last_id, head)
    gap = b" " * (SLOT_OFFSETS[1] - SLOT_SIZE - 1) + b"\n"
    write_atomic(path, slot + gap + slot, mode=0o600, sync=True)


class CheckpointWriter:
    """The writer's side: its first checkpoint (and any after the file was removed or
    replaced under it) written whole and atomically, every other one into the older
    slot, in place, synced before returning. Two system calls and one data sync per
    batch, where a whole new file cost a temporary file, two syncs, a rename and a
    directory sync. Blocking: the writer's thread."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: tuple[int, int] | None = None  # (device, inode) of the file it made
        self._next = 0  # the slot the next checkpoint goes to

    def write(self, last_id: int, head: str) -> None:
        if self._file is not None and self._write_slot(_slot(last_id, head)):
            return
        write_checkpoint(self.path, last_id, head)
        st = os.stat(self.path)
        self._file, self._next = (st.st_dev, st.st_ino), 1

    def _write_slot(self, slot: bytes) -> bool:
        """Overwrite the older slot in place; False when the file is not the one this
        writer made (removed, or replaced by something else), so it is made again."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return False
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._file or st.st_size != CHECKPOINT_SIZE:
                return False
            if os.pwrite(fd, slot, SLOT_OFFSETS[self._next]) != len(slot):
                raise OSError(errno.EIO, f"short write to {self.path}")
            os.fdatasync(fd)
        finally:
            os.close(fd)
        self._next ^= 1
        return True


def check_head(
    conn: sqlite3.Connection, *, db: Path, checkpoint: Path, last_id: int
) -> Anchor | None:
    """Hold the database (whose last id is ``last_id``) to the checkpoint: one indexed
    lookup, cheap enough for every start. Returns the checkpoint (None: there is none)."""
    anchor = read_checkpoint(checkpoint)
    if anchor is None:
        return None
    row = conn.execute("SELECT hash FROM events WHERE id = ?", (anchor.id,)).fetchone()
    damage = anchor_damage(anchor, last_id, None if row is None else str(row[0]))
    if damage is not None:
        raise damaged(damage, db=db, checkpoint=checkpoint)
    return anchor


def accepted_gaps(conn: sqlite3.Connection) -> tuple[int, int]:
    """How many missing ids the user has already accepted, and up to which id
    (``ledger.adopted`` events record the gap they adopted); an indexed lookup of a
    rare type."""
    row = conn.execute(
        "SELECT coalesce(sum(json_extract(payload, '$.missing')), 0), "
        "coalesce(max(json_extract(payload, '$.last_id')), 0) FROM events "
        "WHERE type = 'ledger.adopted'"
    ).fetchone()
    return int(row[0] or 0), int(row[1] or 0)


def missing_rows(conn: sqlite3.Connection, last_id: int) -> int:
    """How many ids in 1..``last_id`` have no row, beyond the gaps already accepted.
    ``count(*)`` walks the smallest index: milliseconds on a million events."""
    (present,) = conn.execute("SELECT count(*) FROM events").fetchone()
    return last_id - int(present) - accepted_gaps(conn)[0]


def first_gap(conn: sqlite3.Connection, last_id: int, after: int) -> tuple[int, int]:
    """The first run of missing ids after id ``after`` (a scan: only on the way to an
    error)."""
    if conn.execute("SELECT 1 FROM events WHERE id = ?", (after + 1,)).fetchone() is None:
        start = after + 1
    else:
        (start,) = conn.execute(
            "SELECT e.id + 1 FROM events e WHERE e.id > ? AND e.id < ? AND NOT EXISTS "
            "(SELECT 1 FROM events f WHERE f.id = e.id + 1) ORDER BY e.id LIMIT 1",
            (after, last_id),
        ).fetchone() or (last_id + 1,)
    (end,) = conn.execute("SELECT min(id) FROM events WHERE id > ?", (start,)).fetchone()
    return int(start), int(end or last_id + 1) - 1


def check_rows(conn: sqlite3.Connection, *, db: Path, checkpoint: Path, last_id: int) -> None:
    """Every id up to the last is present (ids are 1, 2, 3 ... without gaps, but for
    gaps the user accepted): rows deleted from the middle, which the head and the
    checkpoint cannot show, are refused at start, not only by a full ``events verify``."""
    missing = missing_rows(conn, last_id)
    if missing <= 0:
        return
    first, last = first_gap(conn, last_id, accepted_gaps(conn)[1])
    if first > last_id:  # the new gap is among the accepted ones: name the first gap
        first, last = first_gap(conn, last_id, 0)
    damage = Damage(
        f"{missing} event{'s are' if missing != 1 else ' is'} missing from the middle of "
        f"the ledger, the first gap being events {first}-{last}: rows were deleted",
        first,
        (first, last),
    )
    raise damaged(damage, db=db, checkpoint=checkpoint) from None


ACCEPT = "tsukuctl daemon stop; tsukud --accept-ledger"


def _accept(checkpoint: Path) -> str:
    return (
        f"To go on with the ledger as it is now, run `{ACCEPT}`: the daemon then adopts "
        "the ledger and records what was lost."
    )


def missing_checkpoint(ledger: str, checkpoint: Path, last_id: int) -> LedgerCorrupt:
    """A ledger with events and no checkpoint: the checkpoint is what shows that the
    newest rows are gone, so its absence is not taken as "nothing was lost"."""
    return LedgerCorrupt(
        f"{ledger} holds {last_id} event{'s' if last_id != 1 else ''} but its "
        f"checkpoint {checkpoint} is missing, so rows deleted from its end could not be seen",
        hint="If you moved the checkpoint aside, put it back. If this ledger was written by "
        "a tsuku from before checkpoints, or you accept that its newest events may be "
        f"gone: {_accept(checkpoint)}",
        first_bad_id=last_id + 1,
        checkpoint="missing",
    )


def held_to_checkpoint(
    check: Callable[[], Anchor | None],
    *,
    ledger: str,
    checkpoint: Path,
    last_id: int,
    accept: bool,
) -> tuple[Anchor | None, LedgerCorrupt | None]:
    """A ledger (whose last id is ``last_id``) held to its checkpoint at start, for
    either store: ``check`` reads the checkpoint and holds the ledger to it (None: there
    is none, refused when the ledger has events). Returns the checkpoint, or with
    ``accept`` (``tsukud --accept-ledger``) the loss a person accepted in its place;
    anything else raises."""
    try:
        anchor = check()
        if anchor is None and last_id > 0:
            raise missing_checkpoint(ledger, checkpoint, last_id)
    except LedgerCorrupt as e:
        if accept and acceptable(e):
            return None, e
        raise
    return anchor, None


def acceptable(e: LedgerCorrupt) -> bool:
    """Whether ``--accept-ledger`` may adopt the ledger ``e`` refused: a loss (rows gone,
    a checkpoint gone or unreadable), not an edit (a chain that no longer links, a row
    at the checkpoint's id with another hash) nor a file SQLite cannot read."""
    return "lost_count" in e.data or e.data.get("checkpoint") in ("missing", "unreadable")


def damaged(
    damage: Damage, *, db: Path, checkpoint: Path, checked: int | None = None
) -> LedgerCorrupt:
    """``ledger_corrupt`` for ``damage``: what was lost and what to do about it."""
    if damage.lost is not None:
        hint = (
            f"Events {damage.lost[0]}-{damage.lost[1]} were recorded but are no longer in "
            f"{db}: the database or its -wal file was truncated, deleted or replaced by an "
            "older copy, or rows were deleted from it. With the daemon stopped, restore both "
            "files from a backup that has "
            "them. " + _accept(checkpoint) + " What the lost events recorded (spending, "
            "installs) is then forgotten."
        )
    elif damage.head_not_found:
        hint = (
            "Check that the head was noted from this TSUKU_HOME and copied whole. If it "
            f"was, {db} was changed since (rows removed or the chain rebuilt, along with "
            f"{checkpoint}): restore both from a backup that has that head."
        )
    else:
        hint = (
            f"{db} was edited outside tsuku. With the daemon stopped, restore it from a "
            "backup, or move tsuku.db and its -wal and -shm files aside to start an empty "
            "ledger (the history and today's spending are then forgotten)."
        )
    data: dict[str, int] = {"first_bad_id": damage.first_bad_id}
    if damage.lost is not None:
        data |= {"lost_from": damage.lost[0], "lost_to": damage.lost[1]}
        data["lost_count"] = damage.lost_count
    if checked is not None:
        data["checked"] = checked
    return LedgerCorrupt(f"the event ledger is damaged: {damage.reason}", hint=hint, **data)


def _unreadable(path: Path, why: str) -> LedgerCorrupt:
    return LedgerCorrupt(
        f"the ledger checkpoint {path} cannot be read ({why})",
        hint="It was edited or damaged outside tsuku, so the ledger cannot be checked "
        "against it. " + _accept(path),
        checkpoint="unreadable",
    )


def is_corruption(e: sqlite3.Error) -> bool:
    return getattr(e, "sqlite_errorcode", None) in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def is_disk_full(e: BaseException, db: Path) -> bool:
    if isinstance(e, sqlite3.Error):
        code = getattr(e, "sqlite_errorcode", None) or 0
        if code == sqlite3.SQLITE_FULL:
            return True
        # Growing the -shm file, for one, fails with SQLITE_IOERR, not SQLITE_FULL.
        return code & 0xFF == sqlite3.SQLITE_IOERR and nearly_full(db)
    return isinstance(e, OSError) and e.errno in NO_SPACE


def malformed(db: Path, why: object) -> LedgerCorrupt:
    name = db.name
    return LedgerCorrupt(
        f"the event ledger {db} is not a readable SQLite database ({why})",
        hint=(
            "With the daemon stopped: copy the damaged files somewhere safe "
            f"(`cp {db}* /some/where/`), then try to salvage the rows with "
            f"`sqlite3 {name} .recover | sqlite3 {name}.recovered` in {db.parent}, and put "
            f"{name}.recovered in place of {name} (removing {name}-wal and {name}-shm); or "
            f"restore {name} from a backup; or move {name}* aside to start an empty ledger. "
            "If the daemon then reports lost events, its message says how to accept the loss."
        ),
        database=str(db),
    )


@contextlib.contextmanager
def reading(db: Path) -> Iterator[None]:
    """Turn SQLite's "malformed" and "not a database" into ``ledger_corrupt`` with the
    recovery steps, instead of a traceback."""
    try:
        yield
    except sqlite3.DatabaseError as e:
        if is_corruption(e):
            raise malformed(db, e) from None
        raise
