"""Read-side queries over the ledger: listing, summaries.

SQL builders are pure (filters in, SQL and parameters out) so they are tested without a
database and the benchmark can run the very same SQL "raw" as its baseline.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import msgspec

from tsukud.errors import InvalidParams

# SQLite refuses a statement whose OR chain is deeper than 1000 or that binds more than
# 32,766 values, and 64-bit integers only: bounds far above any real use, checked here so
# a request past them is told so instead of failing inside SQLite.
MAX_TYPES = 100
MAX_LIMIT = 2**63 - 1


class EventFilter(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    since: str | None = None  # ISO UTC, inclusive
    until: str | None = None  # ISO UTC, exclusive
    types: list[str] = []  # exact types, or prefixes ending in '.' / '.*'
    session: str | None = None


def where(f: EventFilter) -> tuple[str, list[Any]]:
    if len(f.types) > MAX_TYPES:
        raise InvalidParams(
            f"{len(f.types)} type filters; at most {MAX_TYPES} are allowed",
            hint="Filter by prefix instead (`llm.*` matches every llm event type).",
        )
    clauses: list[str] = []
    params: list[Any] = []
    if f.since:
        clauses.append("ts >= ?")
        params.append(f.since)
    if f.until:
        clauses.append("ts < ?")
        params.append(f.until)
    if f.types:
        alts: list[str] = []
        for t in f.types:
            if t.endswith(".*") or t.endswith("."):
                prefix = t.rstrip("*")
                # A range on the index instead of LIKE: 'llm.' <= type < 'llm/'.
                alts.append("(type >= ? AND type < ?)")
                params.extend([prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)])
            else:
                alts.append("type = ?")
                params.append(t)
        clauses.append("(" + " OR ".join(alts) + ")")
    if f.session:
        clauses.append("session = ?")
        params.append(f.session)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def list_sql(f: EventFilter, limit: int) -> tuple[str, list[Any]]:
    """The newest ``limit`` matching events, oldest first (0 = all)."""
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidParams(
            f"limit {limit} is out of range",
            hint=f"Give 0 (all) or a count up to {MAX_LIMIT}.",
        )
    w, params = where(f)
    cols = "id, ts, type, session, payload, hash"
    # Interpolated parts are constants and placeholders from ``where``; values are bound.
    if limit <= 0:
        return f"SELECT {cols} FROM events{w} ORDER BY id", params  # noqa: S608
    return (
        f"SELECT {cols} FROM (SELECT {cols} FROM events{w}"  # noqa: S608
        " ORDER BY id DESC LIMIT ?) ORDER BY id",
        [*params, limit],
    )


GROUP_KEYS = {
    "day": "substr(ts, 1, 10)",
    "hour": "substr(ts, 1, 13)",
    "provider": "json_extract(payload, '$.provider')",
    "model": "json_extract(payload, '$.model')",
    "session": "session",
    "type": "type",
}


def summary_sql(f: EventFilter, by: str) -> tuple[str, list[Any]]:
    """Counts, tokens and money per group.

    Only events that spend money carry ``cost_usd`` (llm.turn, paid searches), so summing
    it never double counts reservations. A turn with an unknown price has no cost and is
    counted in ``cost_unknown`` instead of being treated as free.
    """
    try:
        key = GROUP_KEYS[by]
    except KeyError:
        raise InvalidParams(
            f"cannot group by {by!r}", hint=f"Choose one of: {', '.join(GROUP_KEYS)}."
        ) from None
    w, params = where(f)
    # Interpolated parts are constants and placeholders from ``where``; values are bound.
    sql = (
        f"SELECT {key} AS k, count(*),"  # noqa: S608
        " sum(type = 'llm.turn'),"
        " coalesce(sum(json_extract(payload, '$.input_tokens')), 0),"
        " coalesce(sum(json_extract(payload, '$.output_tokens')), 0),"
        " coalesce(sum(json_extract(payload, '$.cost_usd')), 0),"
        " sum(type = 'llm.turn' AND json_extract(payload, '$.cost_usd') IS NULL)"
        f" FROM events{w} GROUP BY k ORDER BY k"
    )
    return sql, params


SUMMARY_COLUMNS = (
    "key",
    "events",
    "llm_turns",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "cost_unknown",
)


def run_summary(conn: sqlite3.Connection, f: EventFilter, by: str) -> list[dict[str, Any]]:
    sql, params = summary_sql(f, by)
    out = []
    for row in conn.execute(sql, params):
        item = dict(zip(SUMMARY_COLUMNS, row, strict=True))
        item["cost_usd"] = round(float(item["cost_usd"]), 6)
        out.append(item)
    return out


def iter_list(
    conn: sqlite3.Connection,
    f: EventFilter,
    limit: int,
    chunk: int = 500,
    max_bytes: int | None = None,
) -> Iterator[list[Any]]:
    """Matching rows, ``chunk`` at a time, each chunk also within ``max_bytes`` as JSON."""
    sql, params = list_sql(f, limit)
    cur = conn.execute(sql, params)
    while rows := cur.fetchmany(chunk):
        if max_bytes is None:
            yield rows
        else:
            yield from within_bytes(rows, max_bytes)


def within_bytes(rows: list[Any], max_bytes: int) -> Iterator[list[Any]]:
    """Consecutive runs of ``rows`` whose JSON stays within ``max_bytes`` (a row larger
    than that alone comes on its own), so a frame of events never passes the frame cap
    however large the payloads clients appended."""
    run: list[Any] = []
    size = 0
    for row in rows:
        n = row_json_bytes(row)
        if run and size + n > max_bytes:
            yield run
            run, size = [], 0
        run.append(row)
        size += n
    if run:
        yield run


def row_json_bytes(row: Any) -> int:
    """An upper bound on one listed event's JSON: the payload as stored, the other texts
    at their worst escaping (6 bytes a character), plus keys, id, timestamp and hash."""
    _id, ts, type_, session, payload, hash_ = row
    texts = len(ts) + len(type_) + len(session or "") + len(hash_)
    return len(payload.encode()) + 6 * texts + 128
