"""Answering ``events summary``: from the rollups where they can, from the events where not.

The rollups (``events/rollups.py``) count whole hours per type, provider and model
(``rollups``), and per session (``session_rollups``), so they answer a summary grouped by
day, hour, provider, model, type or session whose time bounds fall on hour boundaries.
What they cannot answer is read from the events with the summary's own SQL
(``queries.summary_sql``), honestly and no more than needed:

- a grouping and filter no one table holds (by session with a type filter; by provider,
  model or type with a session filter): the events, all of it;
- a ``since`` or ``until`` inside an hour: the rollups for the whole hours between, the
  events for the part-hour at each end, added together per group;
- both ends inside the same hour: the events.

A shared ledger (PostgreSQL) answers the same way from its own rollups, which count every
origin's events (``rollups.pg_current``: each origin's mark at its head); a filter on one
origin is read from the events, as the rollups have no origin.

Timestamps are the ledger's fixed-width form ('YYYY-MM-DDTHH:MM:SS.ffffffZ'), so
``ts >= s`` for every event of hour H exactly when ``s <= H + ':00:00.000000Z'``, and a
bound of 13 characters or fewer compares with the hour as it does with the timestamp.
The answer says where it came from (``source``: rollups, rollups+raw or raw).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from tsukud.events import queries, rollups
from tsukud.events.queries import EventFilter, SummaryRow

# Grouping -> the rollups' column for it ...
# The most groups one answer lists (about 250 bytes each, so well inside a frame); the
# others are summed in its ``rest`` (see ``_answer``).
MAX_GROUPS = 2000

ROLLUP_BY = {
    "day": "substr(hour, 1, 10)",
    "hour": "hour",
    "provider": "provider",
    "model": "model",
    "type": "type",
    "session": "session",
}
# ... and the groupings each table can answer (with which filters: see ``_table``).
_GROUPINGS = {
    rollups.HOURLY: frozenset({"day", "hour", "provider", "model", "type"}),
    rollups.SESSIONS: frozenset({"day", "hour", "session"}),
}
HOUR = 13  # len('YYYY-MM-DDTHH')
HOUR_START = ":00:00.000000Z"  # the smallest time in an hour a ledger timestamp has
PAST_HOUR = "\x7f"  # H + this sorts after every timestamp of hour H, before the next's


class SummaryAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """``events.summary``: the groups (at most ``top``), the totals over all of them,
    where they were read from, and ``rest``, the groups not listed summed, only when
    there were more than ``top``."""

    by: str
    groups: list[SummaryRow]
    totals: SummaryRow
    source: str  # rollups, rollups+raw or raw
    rest: SummaryRow | UnsetType = UNSET
    replayed_usd: float = 0.0  # turns a recording answered: priced, never spent


@dataclass(frozen=True)
class Plan:
    """Where a summary's numbers come from: a WHERE over the rollups (None: no rollup
    part) and the slices of raw events to add to it."""

    rollup: tuple[str, list[Any]] | None
    raw: list[EventFilter] = field(default_factory=list)
    table: rollups.Table = rollups.HOURLY

    @property
    def source(self) -> str:
        if self.rollup is None:
            return "raw"
        return "rollups+raw" if self.raw else "rollups"


def _aligned(bound: str) -> bool:
    """Does ``bound`` fall on an hour boundary (no event of its hour lies before it)?"""
    return len(bound) <= HOUR or bound <= bound[:HOUR] + HOUR_START


def _table(f: EventFilter, by: str) -> rollups.Table | None:
    """The rollup table that holds ``by`` and can apply ``f``'s type and session filters
    (``session_rollups`` has no type; ``rollups`` no session; neither an origin), or None."""
    if f.origin:
        return None
    if f.session:
        ok = by in _GROUPINGS[rollups.SESSIONS] and not f.types
        return rollups.SESSIONS if ok else None
    if by in _GROUPINGS[rollups.HOURLY]:
        return rollups.HOURLY
    return rollups.SESSIONS if by in _GROUPINGS[rollups.SESSIONS] and not f.types else None


def plan(f: EventFilter, by: str) -> Plan:
    """Which rollups and which raw slices answer ``f`` grouped ``by``."""
    queries.group_key(by)  # refuses an unknown grouping
    since, until = f.since or None, f.until or None
    table = _table(f, by)
    if table is None:
        return Plan(None, [f])
    clauses: list[str] = []
    params: list[Any] = []
    raw: list[EventFilter] = []
    head = since is not None and not _aligned(since)
    tail = until is not None and not _aligned(until)
    if head and tail and since is not None and until is not None and since[:HOUR] >= until[:HOUR]:
        return Plan(None, [f])  # within one hour: the events are few
    if since is not None:
        if head:
            # The part-hour after ``since`` from the events, whole hours from the next one.
            end = since[:HOUR] + PAST_HOUR
            raw.append(
                EventFilter(
                    since=since, until=min(end, until or end), types=f.types, session=f.session
                )
            )
            clauses.append("hour > ?")
            params.append(since[:HOUR])
        else:
            clauses.append("hour >= ?")
            params.append(since if len(since) <= HOUR else since[:HOUR])
    if until is not None:
        if tail:
            start = until[:HOUR]
            raw.append(
                EventFilter(
                    since=max(start, since or start), until=until, types=f.types, session=f.session
                )
            )
            clauses.append("hour < ?")
            params.append(start)
        else:
            clauses.append("hour < ?")
            params.append(until if len(until) <= HOUR else until[:HOUR])
    if f.types:
        # The same type clauses as over the events: the rollups have a `type` column.
        w, p = queries.where(EventFilter(types=f.types))
        clauses.append(w.removeprefix(" WHERE "))
        params.extend(p)
    if f.session:
        clauses.append("session = ?")
        params.append(f.session)
    where = (" WHERE " + " AND ".join(clauses)) if clauses else ""
    return Plan((where, params), raw, table)


def rollup_sql(
    where: str, by: str, table: rollups.Table = rollups.HOURLY, *, shared: bool = False
) -> str:
    """The rollups' groups (``shared``: a shared ledger's tables, its sums, numeric
    there, cast back to integers)."""
    # Interpolated parts are constants and placeholders; values are bound.
    cast, name = ("::bigint", f"tsuku.{table.name}") if shared else ("", table.name)
    sums = ", ".join(f"sum({c}){cast}" for c in queries.SUM_COLUMNS)
    key = ROLLUP_BY[by]
    return f"SELECT {key} AS k, {sums} FROM {name}{where} GROUP BY k ORDER BY k"  # noqa: S608


def _null_first(key: str | None) -> tuple[bool, str]:
    return key is not None, key or ""


def _current(conn: sqlite3.Connection, table: rollups.Table, shared: bool) -> bool:
    """Does ``table`` count every event in this snapshot (``shared``: every origin's)?"""
    if shared:
        return rollups.pg_current(conn)
    last = conn.execute("SELECT max(id) FROM events").fetchone()[0] or 0
    return rollups.through(conn, table) == last


def summarise(
    conn: sqlite3.Connection,
    f: EventFilter,
    by: str,
    top: int = MAX_GROUPS,
    *,
    shared: bool = False,
) -> SummaryAnswer:
    """The summary's answer: groups (at most ``top``, see :func:`_answer`), totals and
    ``source``. Its parts are read in one transaction, so they see the same ledger.
    ``shared``: a shared ledger (PostgreSQL), the whole team's (or ``f.origin``'s), read
    in one REPEATABLE READ snapshot, its events' reading ``queries``' shared SQL."""
    p = plan(f, by)
    sums: dict[Any, list[int]] = {}
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ" if shared else "BEGIN")
    try:
        if p.rollup is not None and not _current(conn, p.table, shared):
            p = Plan(None, [f])  # the rollups lag the events (see rollups.catch_up)
        if p.rollup is None:
            sums = queries.raw_sums(conn, f, by, shared=shared)
        else:
            where, params = p.rollup
            sql = rollup_sql(where, by, p.table, shared=shared)
            sums = {r[0]: list(r[1:]) for r in conn.execute(sql, params)}
            for part in p.raw:
                for k, values in queries.raw_sums(conn, part, by, shared=shared).items():
                    have = sums.setdefault(k, [0] * len(values))
                    for i, v in enumerate(values):
                        have[i] += v
        replayed = queries.replayed_usd(conn, f, shared=shared)
    finally:
        if conn.in_transaction:
            conn.execute("COMMIT")
    # SQLite's raw answer is in its order. Merged, or from a database whose collation
    # is its own: text keys, or NULL first, which is SQLite's order too (UTF-8 bytes
    # sort as code points).
    in_order = p.rollup is None and not shared
    keys = list(sums) if in_order else sorted(sums, key=_null_first)
    return msgspec.structs.replace(_answer(by, sums, keys, p.source, top), replayed_usd=replayed)


def _answer(
    by: str, sums: dict[Any, list[int]], keys: list[Any], source: str, top: int
) -> SummaryAnswer:
    """Groups in key order, totals over all of them. Past ``top`` groups (a year of
    sessions is tens of thousands: more than one frame holds), only the ``top`` costing
    most (then with most events) are listed and the others are summed in ``rest`` with
    their number, so the answer always fits a frame and still adds up to the totals."""
    totals = queries.group_row(UNSET, _summed(sums.values()))
    rest: SummaryRow | UnsetType = UNSET
    if len(keys) > top:
        cost = queries.SUM_COLUMNS.index("cost_nano")
        ranked = sorted(keys, key=lambda k: (sums[k][cost], sums[k][0]), reverse=True)
        kept = frozenset(ranked[:top])
        left = [sums[k] for k in keys if k not in kept]
        rest = msgspec.structs.replace(queries.group_row(UNSET, _summed(left)), groups=len(left))
        keys = [k for k in keys if k in kept]
    groups = [queries.group_row(k, sums[k]) for k in keys]
    return SummaryAnswer(by=by, groups=groups, totals=totals, source=source, rest=rest)


def _summed(rows: Iterable[list[int]]) -> list[int]:
    return [sum(col) for col in zip(*rows, strict=True)] or [0] * len(queries.SUM_COLUMNS)
