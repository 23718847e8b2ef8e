"""The ledger's checkpoint, and what a damaged or full ledger tells the user.

The hash chain proves that the rows present were not edited; it cannot show that the
newest rows are gone, because a shorter chain is still a valid one. So the writer keeps a
checkpoint outside the database, ``state/ledger.head`` next to it: the last committed id
and its hash, replaced atomically after every committed batch (one small file per
batch, not per event). It is written only after SQLite has committed (and fsynced) the
batch, so it never runs ahead of the database; after a crash it may lag by one batch,
which is harmless. It is fsynced, file and directory, before it replaces the old one:
a checkpoint that a power failure could leave empty would be indistinguishable from
one an attacker deleted.

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
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path

import msgspec

from tsukud.errors import LedgerCorrupt
from tsukud.events.chain import Anchor, Damage, anchor_damage
from tsukud.fsutil import NO_SPACE, nearly_full, write_atomic

CHECKPOINT_SOURCE = "the checkpoint"
_HEX = frozenset("0123456789abcdef")


class _Checkpoint(msgspec.Struct, forbid_unknown_fields=True):
    last_id: int
    head: str


_encoder = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder(_Checkpoint)


def checkpoint_path_for(db: Path) -> Path:
    return db.parent / "state" / "ledger.head"


def read_checkpoint(path: Path) -> Anchor | None:
    """The checkpoint, or None when there is none (a new home, or a ledger from before
    checkpoints). One that cannot be read is damage, not absence."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _unreadable(path, str(e)) from None
    if not data:
        raise _unreadable(path, "empty")
    try:
        cp = _decoder.decode(data)
    except msgspec.DecodeError as e:
        raise _unreadable(path, str(e)) from None
    if cp.last_id < 0 or len(cp.head) != 64 or not set(cp.head) <= _HEX:
        raise _unreadable(path, "not a (last id, head hash) pair")
    return Anchor(cp.last_id, cp.head, CHECKPOINT_SOURCE)


def write_checkpoint(path: Path, last_id: int, head: str) -> None:
    data = _encoder.encode(_Checkpoint(last_id, head)) + b"\n"
    write_atomic(path, data, mode=0o600, sync=True)


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
