"""Summary rollups: what ``events summary`` adds up, per hour x type x provider x model
(``rollups``) and per session x hour (``session_rollups``).

A summary of a year of events should not read a year of events. Hours rather than days:
a summary from "3 days ago" then reads at most the part-hour at each end from the events,
and a summary by day adds up 24 rows per key and day. The writer folds every
batch it commits into both tables in the same transaction (``add_up`` adds up the batch
in memory, then ``upsert`` does one UPDATE or INSERT per key it touched), so the rollups
and the events they count are always the same snapshot: a crash, a full disk or a lost
``-wal`` loses or keeps all of them together. ``meta`` records, per table, the last event
id folded (``Table.through``).

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
from dataclasses import dataclass
from typing import Any, Protocol

from tsukud.events import catalogue, queries

# hour ('YYYY-MM-DDTHH'), type, provider, model
Key = tuple[str, str, str | None, str | None]
# session, hour
SessionKey = tuple[str | None, str]
Counted = tuple[Key, Sequence[int]]  # one event's key and summed columns
# What most events add: one to the count. Shared, so that case allocates nothing and
# ``add_up`` adds it with one addition.
COUNT_ONLY = (1, 0, 0, 0, 0, 0, 0)
THROUGH = "rollups_through"
SESSION_THROUGH = "session_rollups_through"
_COLUMNS = queries.SUM_COLUMNS


@dataclass(frozen=True)
class Table:
    """One rollup table: its key columns, the SQL over ``events`` for each, and the
    ``meta`` key recording the last event id it counts. Each table has its own record,
    so a ledger from a version that had only ``rollups`` gets ``session_rollups`` folded
    at its next start without refolding the other. ``nullable``: the keys that may be
    NULL (a shared ledger's unique index's care, ``_pg_conflict``)."""

    name: str
    keys: tuple[str, ...]
    over_events: tuple[str, ...]  # the same keys as SQL over one ``events`` row
    through: str
    nullable: frozenset[str] = frozenset()

    @property
    def update_sql(self) -> str:
        # Built from constants only (names and the summary's SQL); values are bound.
        sets = ", ".join(f"{c} = {c} + ?" for c in _COLUMNS)
        match = " AND ".join(f"{k} IS ?" for k in self.keys)
        return f"UPDATE {self.name} SET {sets} WHERE {match}"  # noqa: S608

    @property
    def insert_sql(self) -> str:
        cols = ", ".join((*self.keys, *_COLUMNS))
        marks = ", ".join("?" * (len(self.keys) + len(_COLUMNS)))
        return f"INSERT INTO {self.name} ({cols}) VALUES ({marks})"  # noqa: S608

    @property
    def rows_sql(self) -> str:
        return f"SELECT {', '.join((*self.keys, *_COLUMNS))} FROM {self.name}"  # noqa: S608

    @property
    def fold_sql(self) -> str:
        keys = ", ".join(f"{e} AS k{i}" for i, e in enumerate(self.over_events))
        group = ", ".join(f"k{i}" for i in range(len(self.keys)))
        return (
            f"SELECT {keys}, {', '.join(queries.SUMS)} FROM events"  # noqa: S608
            f" WHERE id > ? AND id <= ? GROUP BY {group}"
        )


HOURLY = Table(
    "rollups",
    ("hour", "type", "provider", "model"),
    ("substr(ts, 1, 13)", "type", queries.PROVIDER, queries.MODEL),
    THROUGH,
    frozenset({"provider", "model"}),
)
# Per session and hour: ``events summary --by session`` (and a session filter) without
# reading the events. Hours too, so a since/until on an hour boundary is answered alike.
SESSIONS = Table(
    "session_rollups",
    ("session", "hour"),
    ("session", "substr(ts, 1, 13)"),
    SESSION_THROUGH,
    frozenset({"session"}),
)
TABLES = (HOURLY, SESSIONS)


@dataclass
class Batch:
    """One batch's sums for every rollup table, added up in memory."""

    hourly: dict[Key, list[int]]
    sessions: dict[SessionKey, list[int]]

    def of(self, table: Table) -> Mapping[Any, list[int]]:
        return self.hourly if table is HOURLY else self.sessions


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
    return key, (
        1,
        int(type_ == "llm.turn"),
        _int(payload.get("input_tokens")),
        _int(payload.get("output_tokens")),
        nano or 0,
        (nano or 0) if estimated else 0,
        int(nano is None and type_ in queries.PRICED_TYPES),
    )


def contributions(
    ts: str, types: Sequence[str], payloads: Sequence[Mapping[str, Any]]
) -> list[Counted]:
    """``contribution`` of each event of a batch sharing ``ts`` (``append_many``'s): a
    type counted by its name alone (a client's) is worked out once, not per event, and
    a batch of such types alone (a client's batch) is mapped in C."""
    distinct = set(types)
    if all(t.startswith(catalogue.CLIENT_PREFIX) for t in distinct):
        named = {t: contribution(ts, t, _NO_PAYLOAD) for t in distinct}
        return list(map(named.__getitem__, types))
    by_name: dict[str, Counted] = {}
    counted = []
    for type_, payload in zip(types, payloads, strict=True):
        c = by_name.get(type_)
        if c is None:
            c = contribution(ts, type_, payload)
            if type_.startswith(catalogue.CLIENT_PREFIX):
                by_name[type_] = c
        counted.append(c)
    return counted


_NO_PAYLOAD: Mapping[str, Any] = {}  # a client type is counted by its name alone


def _add(acc: dict[Any, list[int]], key: Any, sums: Sequence[int], times: int) -> None:
    have = acc.get(key)
    if have is None:
        have = acc[key] = [0] * len(sums)
    for i, v in enumerate(sums):
        have[i] += v * times


def add_up(counted: Iterable[Counted], sessions: Iterable[str | None]) -> Batch:
    """Events' contributions (and their sessions, in the same order) -> summed columns
    per key of each table: one batch, in memory. Equal contributions of one session
    (a batch of client notes: nearly all of them) are counted first, then added once.
    They are counted in runs of the same tuple (``contributions`` hands every event of a
    type counted by its name alone the same one) and session, compared by identity: a
    batch's events mostly come in such runs, and a tuple hashed per event would hash its
    key and every column each time."""
    batch = Batch({}, {})
    hourly, by_session = batch.hourly, batch.sessions
    for (key, sums), session, times in _runs(counted, sessions):
        _add(hourly, key, sums, times)
        _add(by_session, (session, key[0]), sums, times)
    return batch


def _runs(
    counted: Iterable[Counted], sessions: Iterable[str | None]
) -> list[tuple[Counted, str | None, int]]:
    """Each distinct (contribution, session) of a batch and how many events it has."""
    together: dict[tuple[int, str | None], list[Any]] = {}
    last: Counted | None = None
    session_of_last: str | None = None
    run = 0
    for c, session in zip(counted, sessions, strict=True):
        if c is last and session == session_of_last:
            run += 1
            continue
        if last is not None:
            _tally(together, last, session_of_last, run)
        last, session_of_last, run = c, session, 1
    if last is not None:
        _tally(together, last, session_of_last, run)
    return [(c, session, times) for c, session, times in together.values()]


def _tally(
    together: dict[tuple[int, str | None], list[Any]], c: Counted, session: str | None, n: int
) -> None:
    entry = together.get((id(c), session))
    if entry is None:
        together[id(c), session] = [c, session, n]  # c is kept alive: its id stays unique
    else:
        entry[2] += n


def _upsert(conn: sqlite3.Connection, table: Table, sums: Mapping[Any, Iterable[int]]) -> None:
    """NULL keys are matched with IS, which a UNIQUE constraint cannot do."""
    update, insert = table.update_sql, table.insert_sql
    for key, values in sums.items():
        vals = list(values)
        if conn.execute(update, (*vals, *key)).rowcount == 0:
            conn.execute(insert, (*key, *vals))


def _record(conn: sqlite3.Connection, table: Table, through: int) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (table.through, str(through))
    )


def upsert(conn: sqlite3.Connection, batch: Batch, through: int) -> None:
    """Add ``batch`` to every rollup table and record ``through`` (inside the caller's
    transaction)."""
    for table in TABLES:
        _upsert(conn, table, batch.of(table))
        _record(conn, table, through)


def through(conn: sqlite3.Connection, table: Table = HOURLY) -> int | None:
    """The last event id ``table`` counts, or None when it has no record of it."""
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (table.through,)).fetchone()
    try:
        return int(row[0]) if row is not None else None
    except ValueError:
        return None


def catch_up(conn: sqlite3.Connection, last_id: int, *, rebuild: bool = False) -> int:
    """Bring every rollup table to ``last_id`` with the summary's own SQL (one
    transaction), from scratch if ``rebuild``; returns how many events were folded (the
    most any table needed). Blocking: start-up, set-up, and the writer's thread."""
    conn.execute("BEGIN IMMEDIATE")
    folded = 0
    try:
        for table in TABLES:
            stored = None if rebuild else through(conn, table)
            done = stored if stored is not None and stored <= last_id else 0
            if done == 0:
                conn.execute(f"DELETE FROM {table.name}")  # noqa: S608 (a constant)
            if stored != last_id:
                rows = conn.execute(table.fold_sql, (done, last_id)).fetchall()
                n = len(table.keys)
                _upsert(conn, table, {tuple(r[:n]): r[n:] for r in rows})
                _record(conn, table, last_id)
            folded = max(folded, last_id - done)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return folded


def agree(conn: sqlite3.Connection) -> bool:
    """Do the rollups hold what the events they claim to count add up to? (Read in one
    snapshot.) They are outside the hash chain and updatable, so ``events verify``
    asks; a whole-ledger scan per table."""
    conn.execute("BEGIN")
    try:
        for table in TABLES:
            done = through(conn, table)
            if done is None:
                return False
            n = len(table.keys)
            have = {tuple(r[:n]): list(r[n:]) for r in conn.execute(table.rows_sql)}
            want = {tuple(r[:n]): list(r[n:]) for r in conn.execute(table.fold_sql, (0, done))}
            if have != want:
                return False
        return True
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")


# ---- a shared ledger (PostgreSQL) --------------------------------------------------------
# The same tables in schema ``tsuku`` (events_pg.sql), one pair for every origin, folded
# with the same ``add_up`` and the same sums (``queries.PG_SUMS``, the shared ledger's
# reading of ``SUMS``); only the SQL's dialect differs. What they count is a mark per
# origin (``rollup_marks.through``, a seq of its chain) rather than one id. The
# statements take ``?`` placeholders, as every read of the ledger does (``pg_store``
# turns them into psycopg's on the connections it hands in).


class Statements(Protocol):
    """A connection's ``execute`` (``?`` placeholders): a read connection of
    ``pg_store``, or its writer's, presented so."""

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Any: ...


_MARKS = "tsuku.rollup_marks"
# Every origin's range of seqs to fold, bound as three arrays: (origin, after, through].
_RANGES = "unnest(?::text[], ?::bigint[], ?::bigint[]) AS r(origin, lo, hi)"


def _pg_conflict(table: Table) -> str:
    """The unique index's expressions (events_pg.sql), which ON CONFLICT must name: a
    NULL key is ``coalesce(k, '')`` with ``k IS NULL``, so it matches itself and not ''."""
    parts = [f"coalesce({k}, ''), ({k} IS NULL)" if k in table.nullable else k for k in table.keys]
    return ", ".join(parts)


def _pg_into(table: Table, rows: str) -> str:
    """Add ``rows`` (a SELECT of ``table``'s keys and sums, in order) to ``table``: safe
    under concurrent writers (a key another transaction is adding waits for it, then
    adds to it)."""
    cols = (*table.keys, *_COLUMNS)
    sets = ", ".join(f"{c} = r.{c} + EXCLUDED.{c}" for c in _COLUMNS)
    return (
        f"INSERT INTO tsuku.{table.name} AS r ({', '.join(cols)}) {rows}"
        f" ON CONFLICT ({_pg_conflict(table)}) DO UPDATE SET {sets}"
    )


def pg_upsert_sql(table: Table, only_if: str = "") -> str:
    """Add rows bound as one array per column (``_columns``) to ``table``, under the
    condition ``only_if`` (``pg_add``'s moved mark)."""
    arrays = ", ".join(["?::text[]"] * len(table.keys) + ["?::bigint[]"] * len(_COLUMNS))
    where = f" WHERE {only_if}" if only_if else ""
    return _pg_into(table, f"SELECT * FROM unnest({arrays}) AS u{where}")  # noqa: S608


# A batch's sums, added only if its origin's mark moves from the batch's predecessor:
# one statement, one round trip. ``moved`` is read before any row is added (the
# condition is evaluated once, first), so the mark is locked before any rollup row.
PG_ADD = (
    f"WITH moved AS (UPDATE {_MARKS} SET through = ?"  # noqa: S608 (constants)
    " WHERE origin = ? AND through = ? RETURNING origin), "
    + ", ".join(
        f"add_{t.name} AS ({pg_upsert_sql(t, 'EXISTS (SELECT 1 FROM moved)')})"  # noqa: S608
        for t in TABLES
    )
    + " SELECT count(*) FROM moved"
)


# Both tables' sums over the events of the ranges bound (``_RANGES``), in one scan (each
# payload parsed once, as ``j``): the catch-up's fold and what ``pg_agree`` holds the
# tables to. A row is ``rollups``' when ``GROUPING(session)`` is 1 (its set has no
# session), ``session_rollups``' otherwise; the keys are ``queries``' shared reading.
PG_FOLD = (
    "SELECT hour, type, provider, model, session, GROUPING(session) AS hourly,"  # noqa: S608
    f" {', '.join(queries.PG_SUMS)} FROM"
    f" (SELECT substr(e.ts, 1, 13) AS hour, e.type, {queries.PG_GROUP_KEYS['provider']}"
    f" AS provider, {queries.PG_GROUP_KEYS['model']} AS model, e.session, j FROM"
    " (SELECT e.type, e.ts, e.session, e.payload::jsonb AS j FROM tsuku.events e"
    f" JOIN {_RANGES} ON e.origin = r.origin AND e.seq > r.lo AND e.seq <= r.hi) AS e) AS e"
    " GROUP BY GROUPING SETS ((hour, type, provider, model), (session, hour))"
)


# The catch-up: ``PG_FOLD`` added to both tables in the database, one statement. Its rows
# need no order: a catch-up holds every mark, so no writer is adding to any row.
_FOLDED = ("hour", "type", "provider", "model", "session", "hourly", *_COLUMNS)


def _add_folded(table: Table) -> str:
    """``table``'s rows of ``f`` (``PG_FOLD``'s answer) added to it."""
    cols = ", ".join((*table.keys, *_COLUMNS))
    rows = f"SELECT {cols} FROM f WHERE hourly = {int(table is HOURLY)}"  # noqa: S608
    return f"add_{table.name} AS ({_pg_into(table, rows)})"


PG_CATCH_UP = (
    f"WITH f ({', '.join(_FOLDED)}) AS MATERIALIZED ({PG_FOLD}), "
    + ", ".join(_add_folded(t) for t in TABLES)
    + " SELECT 1"
)


def _pg_fold(conn: Statements, ranges: list[list[Any]]) -> Batch:
    """``PG_FOLD``'s rows as the tables' keys and sums."""
    folded = Batch({}, {})
    for hour, type_, provider, model, session, hourly, *sums in conn.execute(PG_FOLD, ranges):
        if hourly:
            folded.hourly[hour, type_, provider, model] = sums
        else:
            folded.sessions[session, hour] = sums
    return folded


def _in_lock_order(sums: Mapping[Any, Iterable[int]]) -> list[tuple[Any, list[int]]]:
    """The rows of a batch in one order every writer uses (NULL before text), so two
    transactions adding to the same keys lock them in the same order: no deadlock."""
    return sorted(
        ((key, list(values)) for key, values in sums.items()),
        key=lambda kv: tuple((v is not None, v or "") for v in kv[0]),
    )


def _columns(table: Table, sums: Mapping[Any, Iterable[int]]) -> list[list[Any]]:
    """``sums`` as ``pg_upsert_sql`` binds them: one list per column, rows in lock order."""
    rows = _in_lock_order(sums)
    width = len(table.keys) + len(_COLUMNS)
    return [[(*k, *v)[i] for k, v in rows] for i in range(width)]


def pg_add(conn: Statements, origin: str, after: int, through: int, batch: Batch) -> bool:
    """Add ``batch`` (``origin``'s events ``after`` < seq <= ``through``) inside the
    writer's transaction, if the rollups count that origin up to ``after``: its mark is
    moved by a conditional UPDATE, which locks it (before any rollup row) until the
    commit, in the statement that adds the sums (``PG_ADD``). False, and nothing added,
    when they do not (a catch-up is due)."""
    columns = [c for table in TABLES for c in _columns(table, batch.of(table))]
    moved = conn.execute(PG_ADD, [through, origin, after, *columns]).fetchone()
    return int(moved[0]) == 1


def _ranges(spans: Sequence[tuple[str, int, int]]) -> list[list[Any]]:
    return [[s[0] for s in spans], [s[1] for s in spans], [s[2] for s in spans]]


def pg_catch_up(conn: Statements, *, rebuild: bool = False) -> int:
    """Bring the rollups to every origin's head, folding per origin only what its mark
    does not count, from scratch if ``rebuild`` (or when a mark claims more than its
    chain holds: a loss accepted); returns how many events were folded. Inside the
    caller's transaction. Every mark is locked first, in one order: a writer adding a
    batch holds its own mark, so its events are either counted by it (committed before
    the lock is had) or after it (its conditional UPDATE then sees the moved mark); and
    two daemons starting together fold each event once, the second finding nothing."""
    # A mark of 0 for an origin no fold has seen yet (its events were written before the
    # rollups were, or it has none), left alone where one exists.
    conn.execute(
        f"INSERT INTO {_MARKS} (origin, through) SELECT o.origin, 0 FROM tsuku.origins o"  # noqa: S608
        f" WHERE NOT EXISTS (SELECT 1 FROM {_MARKS} m WHERE m.origin = o.origin)"
        " ORDER BY o.origin ON CONFLICT (origin) DO NOTHING"
    )
    marks = {
        str(o): int(t)
        for o, t in conn.execute(
            f"SELECT origin, through FROM {_MARKS} ORDER BY origin FOR UPDATE"  # noqa: S608
        ).fetchall()
    }
    # Read once every mark is held: the heads of the chains no writer is adding to now.
    heads = {
        str(o): int(h)
        for o, h in conn.execute("SELECT origin, head_seq FROM tsuku.origins").fetchall()
    }
    if rebuild or any(t > heads.get(o, 0) for o, t in marks.items()):
        for table in TABLES:
            conn.execute(f"DELETE FROM tsuku.{table.name}")  # noqa: S608 (a constant)
        conn.execute(f"UPDATE {_MARKS} SET through = 0")  # noqa: S608 (a constant)
        marks = dict.fromkeys(marks, 0)
    spans = [(o, marks.get(o, 0), h) for o, h in sorted(heads.items()) if marks.get(o, 0) != h]
    if not spans:
        return 0
    ranges = _ranges(spans)
    conn.execute(PG_CATCH_UP, ranges)
    conn.execute(
        f"UPDATE {_MARKS} m SET through = r.hi FROM {_RANGES}"  # noqa: S608 (constants)
        " WHERE m.origin = r.origin",
        ranges,
    )
    return sum(hi - lo for _, lo, hi in spans)


def pg_current(conn: Statements) -> bool:
    """Do the rollups count every origin's chain to its head (in the caller's snapshot)?"""
    behind = conn.execute(
        f"SELECT count(*) FROM tsuku.origins o LEFT JOIN {_MARKS} m"  # noqa: S608
        " ON m.origin = o.origin WHERE o.head_seq <> coalesce(m.through, 0)"
    ).fetchone()
    return int(behind[0]) == 0


def pg_agree(conn: Statements) -> bool:
    """``agree`` on a shared ledger: do the rollups hold what every origin's events up
    to its mark add up to? One snapshot (REPEATABLE READ), a whole-ledger scan per table."""
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    try:
        marks = conn.execute(f"SELECT origin, through FROM {_MARKS}").fetchall()  # noqa: S608
        want = _pg_fold(conn, _ranges([(str(o), 0, int(t)) for o, t in marks]))
        for table in TABLES:
            n = len(table.keys)
            rows = f"SELECT {', '.join((*table.keys, *_COLUMNS))} FROM tsuku.{table.name}"  # noqa: S608
            have = {tuple(r[:n]): list(r[n:]) for r in conn.execute(rows)}
            if have != want.of(table):
                return False
        return True
    finally:
        conn.execute("COMMIT")
