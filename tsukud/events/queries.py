"""Read-side queries over the ledger: listing, summaries.

SQL builders are pure (filters in, SQL and parameters out) so they are tested without a
database and the benchmark can run the very same SQL "raw" as its baseline.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from tsukud.errors import InvalidParams

# SQLite refuses a statement whose OR chain is deeper than 1000 or that binds more than
# 32,766 values, and 64-bit integers only: bounds far above any real use, checked here so
# a request past them is told so instead of failing inside SQLite.
MAX_TYPES = 100
MAX_LIMIT = 2**63 - 1


# The ledger's time format, or a leading part of it ('2027-01-16', '2027-01-16T08'):
# compared as text with ``ts``, so anything else would silently match the wrong events.
_LEDGER_TIME = re.compile(
    r"\d{4}(-\d{2}(-\d{2}(T\d{2}(:\d{2}(:\d{2}(\.\d{1,6})?)?)?)?Z?)?)?", re.ASCII
)


class EventFilter(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    since: str | None = None  # ISO UTC, inclusive
    until: str | None = None  # ISO UTC, exclusive
    types: list[str] = []  # exact types, or prefixes ending in '.' / '.*'
    session: str | None = None
    origin: str | None = None  # one daemon's events in a shared ledger


def check_times(f: EventFilter) -> None:
    """A caller's ``since``/``until`` must be ledger times (the summary's own part-hour
    filters use bounds that are not): anything else is refused, not compared."""
    for name, value in (("since", f.since), ("until", f.until)):
        if value and not _LEDGER_TIME.fullmatch(value):
            raise InvalidParams(
                f"filter.{name} must be a UTC time like 2027-01-16T08:00:00.000000Z "
                f"(or a leading part of one), got {value[:40]!r}",
                hint="tsukuctl events takes --since 7d, 12h or 2026-11-01 (also --until).",
            )


def where(f: EventFilter, *, shared: bool = False) -> tuple[str, list[Any]]:
    """The filter as a WHERE clause. ``shared``: on PostgreSQL, whose text comparisons
    follow the database's collation (a punctuation-blind one puts 'llm.turn' after
    'llm/'), so the ranges over times and types compare bytes, as SQLite does."""
    c = ' COLLATE "C"' if shared else ""
    if len(f.types) > MAX_TYPES:
        raise InvalidParams(
            f"{len(f.types)} type filters; at most {MAX_TYPES} are allowed",
            hint="Filter by prefix instead (`llm.*` matches every llm event type).",
        )
    clauses: list[str] = []
    params: list[Any] = []
    if f.since:
        clauses.append(f"ts{c} >= ?")
        params.append(f.since)
    if f.until:
        clauses.append(f"ts{c} < ?")
        params.append(f.until)
    if f.types:
        alts: list[str] = []
        for t in f.types:
            if t.endswith(".*") or t.endswith("."):
                prefix = t.rstrip("*")
                # A range on the index instead of LIKE: 'llm.' <= type < 'llm/'.
                alts.append(f"(type{c} >= ? AND type{c} < ?)")
                params.extend([prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)])
            else:
                alts.append("type = ?")
                params.append(t)
        clauses.append("(" + " OR ".join(alts) + ")")
    if f.session:
        clauses.append("session = ?")
        params.append(f.session)
    if f.origin:
        clauses.append("origin = ?")
        params.append(f.origin)
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def types_hint(types: Sequence[str]) -> str | None:
    """Why a type filter matched nothing, when it is because no event type could match
    (``--type 'instal.*'``): the filters no catalogued type meets, each with the nearest
    type or prefix. None when every filter names a real type (the ledger just has none)."""
    import difflib

    from tsukud.events.catalogue import EVENTS

    prefixes = sorted({t.split(".", 1)[0] + ".*" for t in EVENTS})
    said: list[str] = []
    for spec in types:
        prefix = spec.rstrip("*") if spec.endswith((".", ".*")) else None
        if any(t == spec or (prefix and t.startswith(prefix)) for t in EVENTS):
            continue
        names = prefixes if prefix else sorted(EVENTS)
        close = difflib.get_close_matches(spec, names, n=1, cutoff=0.6)
        said.append(
            f"no event type is {spec!r}" + (f"; did you mean {close[0]!r}?" if close else "")
        )
    if not said:
        return None
    return "; ".join(said) + " (docs/events.md lists the types; `llm.*` takes a prefix)"


def check_origin(f: EventFilter, *, shared: bool) -> None:
    """An origin filter means something on a shared ledger only."""
    if f.origin and not shared:
        raise InvalidParams(
            "only a shared ledger has origins",
            hint="This daemon's ledger is SQLite (no ledger.url): every event is its own.",
        )


# A shared ledger's listing: every origin's events in the database's order (``gid``),
# each with its origin and its place in that origin's chain.
SHARED_COLUMNS = "gid, ts, type, session, payload, hash, origin, seq"


def list_sql(f: EventFilter, limit: int, *, shared: bool = False) -> tuple[str, list[Any]]:
    """The newest ``limit`` matching events, oldest first (0 = all). ``shared``: from a
    shared ledger's table of every origin (``SHARED_COLUMNS``)."""
    if not 0 <= limit <= MAX_LIMIT:
        raise InvalidParams(
            f"limit {limit} is out of range",
            hint=f"Give 0 (all) or a count up to {MAX_LIMIT}.",
        )
    check_origin(f, shared=shared)
    w, params = where(f, shared=shared)
    cols, table, order = (
        (SHARED_COLUMNS, "tsuku.events", "gid") if shared else (_COLUMNS, "events", "id")
    )
    # Interpolated parts are constants and placeholders from ``where``; values are bound.
    if limit <= 0:
        return f"SELECT {cols} FROM {table}{w} ORDER BY {order}", params  # noqa: S608
    return (
        f"SELECT {cols} FROM (SELECT {cols} FROM {table}{w}"  # noqa: S608
        # Named: PostgreSQL (before 16) wants a subquery in FROM to have a name.
        f" ORDER BY {order} DESC LIMIT ?) AS newest ORDER BY {order}",
        [*params, limit],
    )


_COLUMNS = "id, ts, type, session, payload, hash"
# One listed event as JSON text, written by SQLite: the object ``events.list`` sends for
# a row (``rpc/methods.py`` ``_events_chunk`` writes the same in Python, for streamed
# listings; a test holds the two alike), the payload as stored (a JSON object).
_EVENT_JSON = (
    """'{"id":' || id || ',"ts":' || json_quote(ts) || ',"type":' || json_quote(type)"""
    """ || ',"session":' || json_quote(session) || ',"payload":' || payload"""
    """ || ',"hash":' || json_quote(hash) || '}'"""
)


def list_json_sql(f: EventFilter, limit: int) -> tuple[str, list[Any]]:
    """``list_sql``'s events (SQLite's ledger) as one row: how many, and their JSON
    objects joined by commas, oldest first. SQLite writes the text with the GIL let go,
    so a listing's worker thread holds it for one row, not for six objects per event
    (which ``status``, answered on the event loop, would wait behind)."""
    sql, params = list_sql(f, limit)
    return f"SELECT count(*), group_concat({_EVENT_JSON}, ',') FROM ({sql})", params  # noqa: S608


# What a summary adds up, as SQL over one ``events`` row. ``events/rollups.py`` folds the
# same quantities in Python as events are appended (``rollups.contribution``); a test
# holds the two to identical answers over random ledgers. Money and tokens come only from
# the daemon's own events (their payloads are checked against the catalogue): a
# ``client.*`` annotation is counted as an event, never as spending, since clients cannot
# speak for the daemon's account. Money is summed in integer nano-dollars (each event's
# cost rounded once; the daemon records costs to 9 decimals), so the sum does not depend
# on the order of the additions.
DAEMON = "(type < 'client.' OR type >= 'client/')"


def _field(name: str) -> str:
    """A field of a daemon event's payload (NULL for a client's): its type is the
    catalogue's (text for provider and model, integer tokens, a number or null cost)."""
    return f"CASE WHEN {DAEMON} THEN json_extract(payload, '$.{name}') END"


COST_NANO = f"CAST(round({_field('cost_usd')} * 1000000000) AS INTEGER)"
# An llm.cut_off is estimated unless it says otherwise; any other event only if it says so.
ESTIMATED = "coalesce(json_extract(payload, '$.estimated'), type = 'llm.cut_off')"
# A call (answered or cut off) whose price is unknown: counted, never taken as free.
PRICED_TYPES = ("llm.turn", "llm.cut_off")
COST_UNKNOWN = f"type IN {PRICED_TYPES!r} AND json_extract(payload, '$.cost_usd') IS NULL"
PROVIDER = _field("provider")
MODEL = _field("model")
# The summed columns, in SUMMARY_COLUMNS order after the key.
SUMS = (
    "count(*)",
    "coalesce(sum(type = 'llm.turn'), 0)",
    f"coalesce(sum({_field('input_tokens')}), 0)",
    f"coalesce(sum({_field('output_tokens')}), 0)",
    f"coalesce(sum({COST_NANO}), 0)",
    f"coalesce(sum(CASE WHEN {ESTIMATED} THEN {COST_NANO} END), 0)",
    f"coalesce(sum({COST_UNKNOWN}), 0)",
)

GROUP_KEYS = {
    "day": "substr(ts, 1, 10)",
    "hour": "substr(ts, 1, 13)",
    "provider": PROVIDER,
    "model": MODEL,
    "session": "session",
    "type": "type",
}


def group_key(by: str) -> str:
    try:
        return GROUP_KEYS[by]
    except KeyError:
        raise InvalidParams(
            f"cannot group by {by!r}", hint=f"Choose one of: {', '.join(GROUP_KEYS)}."
        ) from None


# The same quantities over a shared ledger's table (PostgreSQL): each payload parsed once
# (``j``), its fields cast to what the catalogue declares, sums cast back to integers (a
# sum of numerics would come back as a Decimal), and no comparison that depends on the
# database's collation. A client's payload is never cast (it may hold anything): the
# CASE tests the type first, and PostgreSQL evaluates a CASE's branches in order.
PG_DAEMON = "left(type, 7) <> 'client.'"


def _pg_field(name: str, cast: str = "") -> str:
    return f"CASE WHEN {PG_DAEMON} THEN (j ->> '{name}'){cast} END"


_PG_COST_NANO = f"round({_pg_field('cost_usd', '::numeric')} * 1000000000)"
_PG_ESTIMATED = "coalesce((j ->> 'estimated')::boolean, type = 'llm.cut_off')"
PG_SUMS = (
    "count(*)",
    "count(*) FILTER (WHERE type = 'llm.turn')",
    f"coalesce(sum({_pg_field('input_tokens', '::numeric')}), 0)::bigint",
    f"coalesce(sum({_pg_field('output_tokens', '::numeric')}), 0)::bigint",
    f"coalesce(sum({_PG_COST_NANO}), 0)::bigint",
    f"coalesce(sum(CASE WHEN NOT ({PG_DAEMON}) THEN NULL"
    f" WHEN {_PG_ESTIMATED} THEN {_PG_COST_NANO} END), 0)::bigint",
    f"count(*) FILTER (WHERE type IN {PRICED_TYPES!r} AND j ->> 'cost_usd' IS NULL)",
)
PG_GROUP_KEYS = {
    **GROUP_KEYS,
    "provider": _pg_field("provider"),
    "model": _pg_field("model"),
}


def summary_sql(f: EventFilter, by: str, *, shared: bool = False) -> tuple[str, list[Any]]:
    """Counts, tokens and money per group, straight from the events (``shared``: every
    origin's, or ``f.origin``'s, in a shared ledger's table).

    Only events that spend money carry ``cost_usd`` (llm.turn, llm.cut_off, paid
    searches), so summing it never double counts reservations. A call with an unknown
    price has no cost and is counted in ``cost_unknown`` instead of being treated as free.
    Money comes out in nano-dollars (``cost_nano``, ``estimated_nano``).
    """
    key = group_key(by)
    check_origin(f, shared=shared)
    w, params = where(f, shared=shared)
    # Interpolated parts are constants and placeholders from ``where``; values are bound.
    if shared:
        sql = (
            f"SELECT {PG_GROUP_KEYS[by]} AS k, {', '.join(PG_SUMS)}"  # noqa: S608
            " FROM (SELECT type, ts, session, payload::jsonb AS j"
            f" FROM tsuku.events{w}) AS e GROUP BY k"
        )
        return sql, params
    sql = f"SELECT {key} AS k, {', '.join(SUMS)} FROM events{w} GROUP BY k ORDER BY k"  # noqa: S608
    return sql, params


def replayed_sql(f: EventFilter, *, shared: bool = False) -> tuple[str, list[Any]]:
    """What the filter's replayed turns (an ``llm.turn`` a recording answered: its
    ``cost_usd`` is 0) cost when they were recorded, in nano-dollars. Never spent, so
    no summed column holds it and no rollup counts it: the summary says it apart, read
    from the turns alone (the ``(type, ts)`` index)."""
    w, params = where(f, shared=shared)
    turns = f"{w} {'AND' if w else 'WHERE'} type = 'llm.turn'"
    if shared:
        # Parsed only where the key's text is: most turns were not replayed, and parsing
        # every turn's payload would make a summary the rollups answer read them all.
        cost = "(payload::jsonb ->> 'replayed_cost_usd')::numeric"
        return (
            f"SELECT coalesce(sum(round({cost} * 1000000000)), 0)::bigint"  # noqa: S608
            f" FROM tsuku.events{turns} AND strpos(payload, '\"replayed_cost_usd\"') > 0",
            params,
        )
    cost = "json_extract(payload, '$.replayed_cost_usd')"
    return (
        f"SELECT coalesce(sum(CAST(round({cost} * 1000000000) AS INTEGER)), 0)"  # noqa: S608
        f" FROM events{turns}",
        params,
    )


def replayed_usd(conn: Any, f: EventFilter, *, shared: bool = False) -> float:
    """:func:`replayed_sql`'s figure, in dollars."""
    sql, params = replayed_sql(f, shared=shared)
    return int(conn.execute(sql, params).fetchone()[0]) / 1_000_000_000


# Columns of a summary row as the SQL returns them (money in nano-dollars) ...
SUM_COLUMNS = (
    "events",
    "llm_turns",
    "input_tokens",
    "output_tokens",
    "cost_nano",
    "estimated_nano",
    "cost_unknown",
)
# ... and as a summary answers them (money in dollars).
SUMMARY_COLUMNS = (
    "key",
    "events",
    "llm_turns",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "cost_estimated_usd",
    "cost_unknown",
)


class SummaryRow(msgspec.Struct, frozen=True, kw_only=True):
    """One summary group as answered (``key``: the day, hour, provider, ... it counts),
    or, without a key, the totals; ``rest``, the groups past ``top`` summed, also says
    how many ``groups`` it holds (schema/rpc.md, ``events.summary``)."""

    key: Any | UnsetType = UNSET  # None is a key: events without a session, say
    events: int
    llm_turns: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    cost_estimated_usd: float
    cost_unknown: int
    groups: int | UnsetType = UNSET


def group_row(key: Any, sums: Sequence[int]) -> SummaryRow:
    """One summary group as answered: nano-dollars become dollars. ``key`` UNSET: the
    totals' row."""
    events, turns, tin, tout, nano, est_nano, unknown = sums
    return SummaryRow(
        key=key,
        events=events,
        llm_turns=turns,
        input_tokens=tin,
        output_tokens=tout,
        cost_usd=nano / 1_000_000_000,
        cost_estimated_usd=est_nano / 1_000_000_000,
        cost_unknown=unknown,
    )


def raw_sums(
    conn: sqlite3.Connection, f: EventFilter, by: str, *, shared: bool = False
) -> dict[Any, list[int]]:
    """Group key -> summed columns (``SUM_COLUMNS``), straight from the events."""
    sql, params = summary_sql(f, by, shared=shared)
    return {row[0]: list(row[1:]) for row in conn.execute(sql, params)}


def run_summary(conn: sqlite3.Connection, f: EventFilter, by: str) -> list[SummaryRow]:
    """The summary's groups computed from the raw events (no rollups): the reference the
    rollups are held to, and the benchmarks' baseline."""
    sql, params = summary_sql(f, by)
    return [group_row(row[0], row[1:]) for row in conn.execute(sql, params)]


def iter_list(
    conn: sqlite3.Connection,
    f: EventFilter,
    limit: int,
    chunk: int = 500,
    max_bytes: int | None = None,
    *,
    shared: bool = False,
) -> Iterator[list[Any]]:
    """Matching rows, ``chunk`` at a time, each chunk also within ``max_bytes`` as JSON."""
    sql, params = list_sql(f, limit, shared=shared)
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
    _id, ts, type_, session, payload, hash_ = row[:6]
    texts = len(ts) + len(type_) + len(session or "") + len(hash_)
    if len(row) > 6:  # a shared ledger's origin and seq
        texts += len(row[6]) + 20
    return len(payload.encode()) + 6 * texts + 128
