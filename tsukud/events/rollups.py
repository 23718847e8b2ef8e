"""Summary rollups: what ``events summary`` adds up, per hour x type x provider x model.

A summary of a year of events should not read a year of events. Hours rather than days:
a summary from "3 days ago" then reads at most the part-hour at each end from the events,
and a summary by day adds up 24 rows per key and day. The writer folds every
batch it commits into the ``rollups`` table in the same transaction (``fold_batch`` adds
up the batch in memory, then one UPDATE or INSERT per key it touched), so the rollups
and the events they count are always the same snapshot: a crash, a full disk or a lost
``-wal`` loses or keeps both together. ``meta.rollups_through`` records the last event
id folded.

The rollups are derived data, outside the hash chain and the append-only triggers (they
are updated in place): they can always be rebuilt from the events, and are. At start,
``catch_up`` folds whatever they lag behind the events (a ledger from a version without
rollups, or one an older version appended to), and rebuilds them from scratch when they
claim more than the ledger holds (a ledger whose loss the user accepted) or have no
record of what they cover.

``contribution`` is the Python reading of the SQL in ``events/queries.py`` (``SUMS``,
``PROVIDER``, ``MODEL``); the catch-up folds with that SQL itself. A test holds the two
to identical answers over random ledgers.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tsukud.events import catalogue, queries

# hour ('YYYY-MM-DDTHH'), type, provider, model
Key = tuple[str, str, str | None, str | None]
Counted = tuple[Key, Sequence[int]]  # one event's key and summed columns
# What most events add: one to the count. Shared, so that case allocates nothing and
# ``add_up`` adds it with one addition.
COUNT_ONLY = (1, 0, 0, 0, 0, 0, 0)
THROUGH = "rollups_through"
_COLUMNS = queries.SUM_COLUMNS
# Built from constants only (column names and the summary's SQL); values are bound.
_UPDATE = (
    "UPDATE rollups SET "  # noqa: S608
    + ", ".join(f"{c} = {c} + ?" for c in _COLUMNS)
    + " WHERE hour = ? AND type = ? AND provider IS ? AND model IS ?"
)
_INSERT = (
    f"INSERT INTO rollups (hour, type, provider, model, {', '.join(_COLUMNS)})"  # noqa: S608
    f" VALUES ({', '.join('?' * (4 + len(_COLUMNS)))})"
)
_ROWS_SQL = f"SELECT hour, type, provider, model, {', '.join(_COLUMNS)} FROM rollups"  # noqa: S608
_FOLD_SQL = (
    f"SELECT substr(ts, 1, 13) AS h, type, {queries.PROVIDER} AS p, {queries.MODEL} AS m,"  # noqa: S608
    f" {', '.join(queries.SUMS)} FROM events WHERE id > ? AND id <= ? GROUP BY h, type, p, m"
)


def _nano(usd: Any) -> int | None:
    """A cost in nano-dollars, rounded as SQLite's ``round()`` does (half away from zero),
    or None when it is not a finite number (msgspec stores NaN and infinities as null)."""
    if type(usd) is not float and type(usd) is not int:
        return None
    r = usd * 1e9
    if not math.isfinite(r):
        return None
    return int(r + 0.5) if r >= 0 else -int(-r + 0.5)


def _int(value: Any) -> int:
    return value if type(value) is int else 0


def _str(value: Any) -> str | None:
    return value if type(value) is str else None


def contribution(ts: str, type_: str, payload: Mapping[str, Any]) -> Counted:
    """One event's key and summed columns (``queries.SUM_COLUMNS``)."""
    hour = ts[:13]
    if type_.startswith(catalogue.CLIENT_PREFIX):
        return (hour, type_, None, None), COUNT_ONLY
    key = (hour, type_, _str(payload.get("provider")), _str(payload.get("model")))
    if (
        type_ not in queries.PRICED_TYPES
        and "cost_usd" not in payload
        and "input_tokens" not in payload
        and "output_tokens" not in payload
    ):
        return key, COUNT_ONLY
    nano = _nano(payload.get("cost_usd"))
    estimated = payload.get("estimated")
    if type(estimated) is not bool:
        estimated = type_ == "llm.cut_off"
    return key, [
        1,
        type_ == "llm.turn",
        _int(payload.get("input_tokens")),
        _int(payload.get("output_tokens")),
        nano or 0,
        (nano or 0) if estimated else 0,
        nano is None and type_ in queries.PRICED_TYPES,
    ]


def add_up(counted: Iterable[Counted]) -> dict[Key, list[int]]:
    """Events' contributions -> summed columns per key: one batch, in memory."""
    acc: dict[Key, list[int]] = {}
    for key, sums in counted:
        have = acc.get(key)
        if have is None:
            acc[key] = list(sums)
        elif sums is COUNT_ONLY:
            have[0] += 1
        else:
            for i, v in enumerate(sums):
                have[i] += v
    return acc


def upsert(conn: sqlite3.Connection, sums: Mapping[Key, Iterable[int]], through: int) -> None:
    """Add ``sums`` to the rollups and record ``through`` (inside the caller's
    transaction). NULL keys are matched with IS, which a UNIQUE constraint cannot do."""
    for key, values in sums.items():
        vals = list(values)
        if conn.execute(_UPDATE, (*vals, *key)).rowcount == 0:
            conn.execute(_INSERT, (*key, *vals))
    conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (THROUGH, str(through)))


def through(conn: sqlite3.Connection) -> int | None:
    """The last event id the rollups count, or None when they have no record of it."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (THROUGH,)).fetchone()
    try:
        return int(row[0]) if row is not None else None
    except ValueError:
        return None


def catch_up(conn: sqlite3.Connection, last_id: int, *, rebuild: bool = False) -> int:
    """Bring the rollups to ``last_id`` with the summary's own SQL (one transaction), from
    scratch if ``rebuild``; returns how many events were folded. Blocking: start-up,
    set-up, and the writer's thread."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        stored = None if rebuild else through(conn)
        done = stored if stored is not None and stored <= last_id else 0
        if done == 0:
            conn.execute("DELETE FROM rollups")
        if stored != last_id:
            rows = conn.execute(_FOLD_SQL, (done, last_id)).fetchall()
            upsert(conn, {(r[0], r[1], r[2], r[3]): r[4:] for r in rows}, last_id)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return last_id - done


def agree(conn: sqlite3.Connection) -> bool:
    """Do the rollups hold what the events they claim to count add up to? (Read in one
    snapshot.) They are outside the hash chain and updatable, so ``events verify``
    asks; a whole-ledger scan."""
    conn.execute("BEGIN")
    try:
        done = through(conn)
        if done is None:
            return False
        have = {tuple(r[:4]): list(r[4:]) for r in conn.execute(_ROWS_SQL)}
        want = {tuple(r[:4]): list(r[4:]) for r in conn.execute(_FOLD_SQL, (0, done))}
        return have == want
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
