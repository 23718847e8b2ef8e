"""Read-side queries: pure SQL builders, checked by running their SQL on real SQLite."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import msgspec
import pytest
import trio

from tests.unit.events.conftest import StoreFactory
from tsukud.clock import FixedClock, iso
from tsukud.errors import InvalidParams
from tsukud.events import queries
from tsukud.events.queries import (
    EventFilter,
    check_times,
    iter_list,
    list_sql,
    run_summary,
    where,
    within_bytes,
)
from tsukud.events.store import EventStore, connect

NOW = 1_800_000_000.0


def test_where_is_empty_without_filters() -> None:
    assert where(EventFilter()) == ("", [])


def test_type_prefixes_become_index_ranges_and_exact_types_equalities() -> None:
    sql, params = where(EventFilter(types=["llm.*", "budget.", "daemon.started"]))
    assert sql == (" WHERE ((type >= ? AND type < ?) OR (type >= ? AND type < ?) OR type = ?)")
    assert params == ["llm.", "llm/", "budget.", "budget/", "daemon.started"]


def test_all_filters_are_bound_never_interpolated() -> None:
    f = EventFilter(since="2027-01-01", until="2027-02-01", types=["x'; DROP"], session="s'1")
    sql, params = where(f)
    assert "DROP" not in sql and "s'1" not in sql
    assert params == ["2027-01-01", "2027-02-01", "x'; DROP", "s'1"]


def test_list_sql_takes_the_newest_n_oldest_first() -> None:
    sql, params = list_sql(EventFilter(session="s"), 2)
    assert sql.endswith("ORDER BY id DESC LIMIT ?) AS newest ORDER BY id")
    assert params == ["s", 2]
    assert list_sql(EventFilter(), 0)[0].endswith("FROM events ORDER BY id")


def test_summary_refuses_an_unknown_grouping() -> None:
    with pytest.raises(InvalidParams, match="cannot group by 'colour'"):
        run_summary(sqlite3.connect(":memory:"), EventFilter(), "colour")


def fill(store: EventStore) -> None:
    """Five events: three LLM turns (one unpriced), a reservation and a paid search."""

    async def run() -> None:
        store.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            turn = {"model": "m1", "input_tokens": 10, "output_tokens": 5}
            store.append_nowait("llm.turn", {**turn, "provider": "claude", "cost_usd": 0.5}, "s1")
            store.append_nowait("llm.turn", {**turn, "provider": "claude", "cost_usd": 0.25}, "s1")
            store.append_nowait("llm.turn", {**turn, "provider": "local"}, "s2")  # unpriced
            store.append_nowait(
                "budget.reserved", {"reservation": "r", "day": iso(NOW)[:10], "amount_usd": 3}
            )
            store.append_nowait(
                "discovery.search",
                {"tool": "jq", "provider": "tavily", "ok": True, "cost_usd": 0.01},
                "s2",
            )
            await store.wait_durable(store.last_id)
            store.close()
        store.close_connection()

    trio.run(run)


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[sqlite3.Connection]:
    db = tmp_path / "t.db"
    fill(EventStore(db, clock=FixedClock(NOW)))
    conn = connect(db, readonly=True)
    yield conn
    conn.close()


@pytest.fixture
def any_ledger(backend: StoreFactory, tmp_path: Path) -> Iterator[sqlite3.Connection]:
    """The same ledger on either backend, through a read connection as the store's
    readers open it (this daemon's chain as ``events``)."""
    store = backend(tmp_path, FixedClock(NOW))
    fill(store)
    if store.origin is None:
        conn = connect(tmp_path / "tsuku.db", readonly=True)
    else:
        from tsukud.events.pg_store import PgEventStore, PgReadConnection

        assert isinstance(store, PgEventStore)
        conn = cast(sqlite3.Connection, PgReadConnection(store.url, store.origin))
    yield conn
    conn.close()


def test_summary_counts_money_only_where_it_was_spent(ledger: sqlite3.Connection) -> None:
    groups = {g.key: msgspec.to_builtins(g) for g in run_summary(ledger, EventFilter(), "provider")}
    assert groups["claude"]["cost_usd"] == 0.75 and groups["claude"]["llm_turns"] == 2
    assert groups["claude"]["input_tokens"] == 20 and groups["claude"]["output_tokens"] == 10
    assert groups["local"]["cost_unknown"] == 1 and groups["local"]["cost_usd"] == 0.0
    assert groups["tavily"]["cost_usd"] == 0.01 and groups["tavily"]["llm_turns"] == 0
    assert groups[None]["events"] == 1 and groups[None]["cost_usd"] == 0.0  # the reservation


def test_listing_filters_by_session_and_type_prefix(any_ledger: sqlite3.Connection) -> None:
    f = EventFilter(types=["llm.*"], session="s1")
    rows = [r for chunk in iter_list(any_ledger, f, 0) for r in chunk]
    assert [(r[0], r[2], r[3]) for r in rows] == [(1, "llm.turn", "s1"), (2, "llm.turn", "s1")]
    newest = [r[0] for chunk in iter_list(any_ledger, EventFilter(), 2, chunk=1) for r in chunk]
    assert newest == [4, 5]


@pytest.mark.parametrize("limit", [-1, 2**63, 10**40])
def test_a_limit_sqlite_cannot_bind_is_refused_with_a_hint(limit: int) -> None:
    with pytest.raises(InvalidParams, match=f"limit {limit} is out of range") as e:
        list_sql(EventFilter(), limit)
    assert e.value.hint == "Give 0 (all) or a count up to 9223372036854775807."


def test_the_largest_limit_runs(any_ledger: sqlite3.Connection) -> None:
    rows = [r for chunk in iter_list(any_ledger, EventFilter(), 2**63 - 1) for r in chunk]
    assert len(rows) == 5


def test_too_many_type_filters_are_refused_before_sqlite_sees_them(
    ledger: sqlite3.Connection,
) -> None:
    many = EventFilter(types=[f"t{i}" for i in range(20_000)])
    with pytest.raises(InvalidParams, match="20000 type filters; at most 100") as e:
        run_summary(ledger, many, "day")
    assert "llm.*" in e.value.hint
    # The most allowed still runs on SQLite.
    most = EventFilter(types=["llm.turn", *(f"t{i}.*" for i in range(99))])
    assert [g.events for g in run_summary(ledger, most, "type")] == [3]


def test_listed_events_come_in_runs_that_fit_a_frame() -> None:
    def row(i: int, payload_len: int) -> list[Any]:
        return [
            i,
            "2027-01-01T00:00:00.000000Z",
            "client.x",
            "s",
            '"' + "x" * payload_len + '"',
            "h",
        ]

    rows = [row(i, 300_000) for i in range(5)] + [row(5, 10), row(6, 2_000_000)]
    runs = list(within_bytes(rows, 1_000_000))
    assert [[r[0] for r in run] for run in runs] == [[0, 1, 2], [3, 4, 5], [6]]
    for run in runs[:-1]:
        keys = ("id", "ts", "type", "session", "payload", "hash")
        listed = [dict(zip(keys, r, strict=True)) for r in run]
        assert len(json.dumps({"id": 1, "progress": {"events": listed}})) <= 1_000_000
    assert list(within_bytes([], 10)) == []


@pytest.mark.parametrize("bad", ["\x00not a date", "yesterday", "2027-01-16 08:00", "2027-1-6"])
@pytest.mark.parametrize("field", ["since", "until"])
def test_a_time_that_is_not_a_ledger_time_is_refused_not_compared(field: str, bad: str) -> None:
    """As text, '\\x00not a date' sorts before every time: it would list everything."""
    with pytest.raises(InvalidParams, match=f"filter.{field} must be a UTC time"):
        check_times(msgspec.convert({field: bad}, EventFilter))


@pytest.mark.parametrize("good", ["2027-01-16", "2027-01-16T08", "2027-01-16T08:15:00.000000Z"])
def test_ledger_times_and_their_leading_parts_are_accepted(good: str) -> None:
    check_times(EventFilter(since=good, until=good))


def test_a_type_filter_no_event_type_can_meet_is_named_with_the_nearest() -> None:
    """`--type 'instal.*'` matches nothing because no type could (issue 29, point 8): the
    listing's empty answer says so and names the nearest type or prefix."""
    hint = queries.types_hint(["instal.*"])
    assert hint is not None and "no event type is 'instal.*'; did you mean 'install.*'?" in hint
    hint = queries.types_hint(["llm.turns", "llm.*"])
    assert hint is not None and "'llm.turns'; did you mean 'llm.turn'?" in hint
    assert "'llm.*'" not in hint.split("(")[0]  # a real prefix is not named
    assert queries.types_hint(["llm.turn", "install.", "budget.*"]) is None
    assert "did you mean" not in (queries.types_hint(["zzzz"]) or "")


def test_an_empty_listing_carries_the_hint_only_when_a_filter_cannot_match() -> None:
    from tsukud.rpc.methods import Listed, _counted

    assert _counted(0, queries.EventFilter(types=["instal.*"])).hint
    assert _counted(0, queries.EventFilter(types=["install.*"])) == Listed(0)
    assert _counted(3, queries.EventFilter(types=["instal.*"])) == Listed(3)
    assert _counted(0, queries.EventFilter()) == Listed(0)
