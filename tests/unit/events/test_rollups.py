"""Summary rollups give the very answers the SQL over the raw events gives.

Random ledgers are written through the real ``EventStore`` (so the rollups are the ones
the writer keeps, batch by batch), then every grouping and random filters are answered
both ways on real SQLite: ``summary.summarise`` (rollups where the filter allows) and
``queries.run_summary`` (the events only). The catch-up at start is held to the same.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples
from tsukud.clock import FixedClock
from tsukud.events import rollups
from tsukud.events.queries import GROUP_KEYS, EventFilter, group_row, run_summary
from tsukud.events.store import EventStore, connect
from tsukud.events.summary import plan, summarise

DAY0 = 1_800_000_000.0 - 1_800_000_000.0 % 86400  # a midnight UTC
DAYS = ["2027-01-15", "2027-01-16", "2027-01-17", "2027-01-18"]
PROVIDERS = ["claude", "gemini", "tavily"]
MODELS = [None, "m-1", "m-2"]
SESSIONS = [None, "s1", "s2"]
# Money as the daemon records it: to 9 decimals.
COSTS = st.one_of(
    st.none(),
    st.integers(0, 5_000_000_000).map(lambda n: n / 1e9),
    st.sampled_from([0.0, 1.5e-6, 0.000000001, 0.1, 0.25, 3]),
)


@st.composite
def events(draw: st.DrawFn) -> tuple[float, str, dict[str, Any], str | None]:
    """(time, type, payload, session): one event the catalogue accepts."""
    day = draw(st.integers(0, len(DAYS) - 1))
    second = draw(st.sampled_from([0, 1e-6, 1, 3599.999999, 3600, 43200, 45000, 86399.999999]))
    kind = draw(st.sampled_from(["turn", "cut_off", "search", "reserved", "client", "other"]))
    provider = draw(st.sampled_from(PROVIDERS))
    model = draw(st.sampled_from(MODELS))
    cost = draw(COSTS)
    payload: dict[str, Any]
    if kind == "turn":
        type_ = "llm.turn"
        payload = {
            "provider": provider,
            "input_tokens": draw(st.integers(0, 200_000)),
            "output_tokens": draw(st.integers(0, 64_000)),
        }
        if model is not None:
            payload["model"] = model
        if cost is not None:
            payload["cost_usd"] = cost
    elif kind == "cut_off":
        type_ = "llm.cut_off"
        payload = {"provider": provider, "reservation": "r", "call": 1, "reason": "deadline"}
        if model is not None:
            payload["model"] = model
        if cost is not None:
            payload["cost_usd"] = cost
        estimated = draw(st.sampled_from([None, True, False]))
        if estimated is not None:
            payload["estimated"] = estimated
    elif kind == "search":
        type_ = "discovery.search"
        payload = {"tool": "jq", "provider": provider, "ok": True}
        if cost is not None:
            payload["cost_usd"] = cost
    elif kind == "reserved":
        type_ = "budget.reserved"
        payload = {"reservation": "r", "day": DAYS[day], "amount_usd": 3}
    elif kind == "client":
        # A client's annotation may claim anything; it is counted, never as spending.
        type_ = draw(st.sampled_from(["client.note", "client.bench"]))
        payload = {
            "provider": draw(st.sampled_from([provider, 7, None, ["x"]])),
            "model": model,
            "cost_usd": draw(st.sampled_from([cost, "1.5", 10**18, True])),
            "input_tokens": draw(st.sampled_from([5, 2.5, "9", False])),
            "estimated": draw(st.booleans()),
        }
    else:
        type_ = "daemon.stopped"
        payload = {"pid": 1, "uptime_s": 1.0}
    return DAY0 + day * 86400 + second, type_, payload, draw(st.sampled_from(SESSIONS))


def bounds() -> st.SearchStrategy[str | None]:
    on_day = st.sampled_from(DAYS).map(lambda d: d + "T00:00:00.000000Z")
    times = ["T00:00:00Z", "T12:00:00.5Z", "T12", "T12:00:00.000000Z", "T12:30:00.000000Z", "T01"]
    inside = st.tuples(st.sampled_from(DAYS), st.sampled_from(times))
    return st.one_of(
        st.none(),
        st.sampled_from(DAYS),
        on_day,
        inside.map("".join),
        st.sampled_from(["2027-01", "2027-01-16T", "2027-01-17T23:59:59.999999Z", ""]),
    )


FILTERS = st.builds(
    EventFilter,
    since=bounds(),
    until=bounds(),
    types=st.lists(
        st.sampled_from(["llm.*", "llm.turn", "client.*", "discovery.search", "budget."]),
        max_size=2,
    ),
    session=st.sampled_from([None, None, None, "s1"]),
)


def write(db: Path, batches: list[list[tuple[float, str, dict[str, Any], str | None]]]) -> None:
    """Append each batch, waiting for it to be durable before the next: several commits,
    so rollup rows are updated as well as inserted."""

    async def main() -> None:
        clock = FixedClock(DAY0)
        store = EventStore(db, clock=clock)
        store.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            for batch in batches:
                for t, type_, payload, session in batch:
                    clock.t = t
                    store.append_nowait(type_, payload, session)
                await store.wait_durable(store.last_id)
            store.close()
        store.close_connection()

    trio.run(main)


def wire(answer: object) -> Any:
    """A summary's answer as the client reads it."""
    return msgspec.to_builtins(answer)


def assert_same(conn: sqlite3.Connection, f: EventFilter, by: str) -> None:
    got = wire(summarise(conn, f, by))
    want = wire(run_summary(conn, f, by))
    assert got["groups"] == want, (f, by, plan(f, by))
    for column in ("events", "llm_turns", "input_tokens", "output_tokens", "cost_unknown"):
        assert got["totals"][column] == sum(g[column] for g in want)


LEDGERS = st.lists(st.lists(events(), min_size=1, max_size=12), min_size=1, max_size=4)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=LEDGERS, filters=st.lists(FILTERS, min_size=1, max_size=6))
def test_rollups_answer_what_the_raw_events_answer(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[list[tuple[float, str, dict[str, Any], str | None]]],
    filters: list[EventFilter],
) -> None:
    db = tmp_path_factory.mktemp("ledger") / "tsuku.db"
    write(db, batches)
    conn = connect(db, readonly=True)
    try:
        for f in [EventFilter(), *filters]:
            for by in GROUP_KEYS:
                assert_same(conn, f, by)
    finally:
        conn.close()


def rollup_rows(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
    """Every rollup table's rows, each tagged with its table."""
    return sorted(
        ((t.name, *r) for t in rollups.TABLES for r in conn.execute(f"SELECT * FROM {t.name}")),
        key=lambda r: [str(x) for x in r],
    )


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=LEDGERS, cut=st.integers(0, 48))
def test_catch_up_folds_what_the_writer_folds(
    tmp_path_factory: pytest.TempPathFactory,
    batches: list[list[tuple[float, str, dict[str, Any], str | None]]],
    cut: int,
) -> None:
    """An old ledger (no rollups), then one whose rollups lag: the start-up fold, with
    the summary's SQL, ends where the writer's Python fold ended."""
    db = tmp_path_factory.mktemp("ledger") / "tsuku.db"
    write(db, batches)
    conn = connect(db)
    try:
        kept = rollup_rows(conn)
        last = conn.execute("SELECT max(id) FROM events").fetchone()[0]
        conn.execute("DELETE FROM rollups")
        conn.execute("DELETE FROM session_rollups")
        conn.execute("DELETE FROM meta")
        assert rollups.catch_up(conn, min(cut, last)) == min(cut, last)
        assert rollups.through(conn) == min(cut, last)
        assert rollups.through(conn, rollups.SESSIONS) == min(cut, last)
        assert rollups.catch_up(conn, last) == last - min(cut, last)
        assert rollup_rows(conn) == kept
        assert rollups.catch_up(conn, last) == 0  # nothing behind: nothing done
    finally:
        conn.close()


def test_an_old_ledger_gets_its_rollups_at_start(tmp_path: Path) -> None:
    db = tmp_path / "tsuku.db"
    turn = {"provider": "claude", "model": "m-1", "input_tokens": 10, "cost_usd": 0.5}
    cut = {"provider": "claude", "reservation": "r", "call": 2, "reason": "x", "cost_usd": 0.25}
    write(db, [[(DAY0, "llm.turn", turn, "s"), (DAY0 + 1, "llm.cut_off", cut, "s")]])
    conn = connect(db)
    conn.execute("DROP TABLE rollups")  # as a version before rollups left it
    conn.execute("DELETE FROM meta")
    conn.close()
    write(db, [[(DAY0 + 2, "llm.turn", turn, "s")]])  # opening folds the first two
    conn = connect(db, readonly=True)
    try:
        got = wire(summarise(conn, EventFilter(), "provider"))
        assert got["source"] == "rollups"
        claude = got["groups"][-1]
        assert claude == wire(group_row("claude", [3, 2, 20, 0, 1_250_000_000, 250_000_000, 0]))
        assert claude["cost_usd"] == 1.25 and claude["cost_estimated_usd"] == 0.25
        assert rollups.through(conn) == 3
    finally:
        conn.close()


def test_a_ledger_with_hourly_rollups_only_gets_its_session_rollups_at_start(
    tmp_path: Path,
) -> None:
    """A ledger from the version before session rollups: its hourly rollups are kept as
    they are, the session rollups folded from the events, and both then count on."""
    db = tmp_path / "tsuku.db"
    turn = {"provider": "claude", "model": "m-1", "input_tokens": 10, "cost_usd": 0.5}
    write(db, [[(DAY0, "llm.turn", turn, "s"), (DAY0 + 1, "llm.turn", turn, None)]])
    conn = connect(db)
    conn.execute("DROP TABLE session_rollups")
    conn.execute("DELETE FROM meta WHERE key = ?", (rollups.SESSION_THROUGH,))
    conn.execute("UPDATE rollups SET input_tokens = 7")  # marks the rows as not refolded
    conn.close()
    write(db, [[(DAY0 + 2, "llm.turn", turn, "s")]])
    conn = connect(db, readonly=True)
    try:
        got = wire(summarise(conn, EventFilter(), "session"))
        assert got["source"] == "rollups"
        assert got["groups"] == wire(run_summary(conn, EventFilter(), "session"))
        assert [g["events"] for g in got["groups"]] == [1, 2]  # None, then 's'
        assert conn.execute("SELECT sum(input_tokens) FROM rollups").fetchone()[0] == 7 + 10
    finally:
        conn.close()


def test_rollups_that_claim_more_than_the_ledger_are_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "tsuku.db"
    write(db, [[(DAY0, "daemon.stopped", {"pid": 1, "uptime_s": 1.0}, None)]])
    conn = connect(db)
    conn.execute("UPDATE meta SET value = '99'")
    conn.execute("UPDATE rollups SET events = 1000")
    conn.execute("UPDATE session_rollups SET events = 1000")
    assert rollups.catch_up(conn, 1) == 1
    assert conn.execute("SELECT sum(events) FROM rollups").fetchone()[0] == 1
    assert conn.execute("SELECT sum(events) FROM session_rollups").fetchone()[0] == 1
    conn.close()


@pytest.mark.parametrize(
    ("f", "by", "source"),
    [
        (EventFilter(), "day", "rollups"),
        (EventFilter(since="2027-01-16", until="2027-01-18T00:00:00.000000Z"), "model", "rollups"),
        (EventFilter(since="2027-01-16T08:15:00.000000Z"), "type", "rollups+raw"),
        (EventFilter(until="2027-01-16T08:00:00.5Z"), "provider", "rollups+raw"),
        (
            EventFilter(since="2027-01-16T08:00:00Z", until="2027-01-16T09:00:00Z"),
            "day",
            "rollups+raw",
        ),
        (EventFilter(since="2027-01-16T08:10:00Z", until="2027-01-16T08:50:00Z"), "day", "raw"),
        (
            EventFilter(since="2027-01-16T08", until="2027-01-16T09:00:00.000000Z"),
            "hour",
            "rollups",
        ),
        (EventFilter(session="s1"), "day", "rollups"),
        (EventFilter(session="s1"), "provider", "raw"),
        (EventFilter(session="s1", types=["llm.*"]), "hour", "raw"),
        (EventFilter(), "hour", "rollups"),
        (EventFilter(), "session", "rollups"),
        (EventFilter(session="s1"), "session", "rollups"),
        (EventFilter(since="2027-01-16T08", until="2027-01-17"), "session", "rollups"),
        (EventFilter(since="2027-01-16T08:15:00.000000Z"), "session", "rollups+raw"),
        (EventFilter(types=["llm.*"]), "session", "raw"),
    ],
)
def test_what_the_rollups_answer_and_what_falls_back(f: EventFilter, by: str, source: str) -> None:
    assert plan(f, by).source == source


@pytest.mark.parametrize("table", [t.name for t in rollups.TABLES])
def test_verify_rebuilds_rollups_that_do_not_add_up(tmp_path: Path, table: str) -> None:
    """The rollups are outside the chain and the append-only triggers: an edit to them is
    found by verify and undone by the writer, from the events."""
    db = tmp_path / "tsuku.db"
    turn = {"provider": "claude", "model": "m-1", "input_tokens": 10, "cost_usd": 0.5}
    write(
        db,
        [
            [
                (DAY0, "llm.turn", turn, "s"),
                (DAY0 + 1, "daemon.stopped", {"pid": 1, "uptime_s": 1.0}, None),
            ]
        ],
    )
    edit = connect(db)
    edit.execute(f"UPDATE {table} SET cost_nano = 0")
    edit.close()

    async def main() -> None:
        store = EventStore(db, clock=FixedClock(DAY0 + 2))
        store.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(store.run)
            assert (await store.verify()).ok
            assert store.rollups_stale
            # The writer rebuilds before its next batch.
            await store.append("llm.turn", turn, "s")
            assert not store.rollups_stale
            await store.verify()
            assert not store.rollups_stale
            store.close()
        store.close_connection()

    trio.run(main)
    conn = connect(db, readonly=True)
    try:
        for by in ("provider", "session"):
            got = wire(summarise(conn, EventFilter(), by))
            assert got["source"] == "rollups"
            assert got["groups"] == wire(run_summary(conn, EventFilter(), by))
            assert got["totals"]["cost_usd"] == 1.0
        assert rollups.agree(conn)
    finally:
        conn.close()


def test_a_summary_reads_the_events_while_the_rollups_lag_them(tmp_path: Path) -> None:
    """Rollups behind the events (a start that had no space to catch them up) are not
    used: the answer comes from the events, and says so."""
    db = tmp_path / "tsuku.db"
    turn = {"provider": "claude", "input_tokens": 10, "cost_usd": 0.5}
    write(db, [[(DAY0, "llm.turn", turn, "s")], [(DAY0 + 1, "llm.turn", turn, "s")]])
    conn = connect(db)
    try:
        for table, by in ((rollups.THROUGH, "day"), (rollups.SESSION_THROUGH, "session")):
            assert wire(summarise(conn, EventFilter(), by))["source"] == "rollups"
            conn.execute("UPDATE meta SET value = '1' WHERE key = ?", (table,))
            got = wire(summarise(conn, EventFilter(), by))
            assert got["source"] == "raw"
            assert got["groups"] == wire(run_summary(conn, EventFilter(), by))
            assert got["totals"]["cost_usd"] == 1.0
    finally:
        conn.close()


@pytest.mark.parametrize("by", ["day", "hour", "session"])
def test_a_session_filter_holds_in_the_part_hours_too(tmp_path: Path, by: str) -> None:
    """The part-hour at each end is read from the events with the session filter too:
    another session's events in those part-hours are not counted."""
    db = tmp_path / "tsuku.db"
    turn = {"provider": "claude", "input_tokens": 10, "cost_usd": 0.5}
    times = [DAY0 + 8 * 3600 + s for s in (1800, 2400, 3600 + 60, 2 * 3600 + 600, 2 * 3600 + 1800)]
    write(db, [[(t, "llm.turn", turn, s) for t in times for s in ("s1", "s2", None)]])
    since, until = "2027-01-15T08:30:00.000000Z", "2027-01-15T10:20:00.000000Z"
    f = EventFilter(since=since, until=until, session="s1")
    assert plan(f, by).source == "rollups+raw"
    conn = connect(db, readonly=True)
    try:
        assert_same(conn, f, by)
        assert wire(summarise(conn, f, by))["totals"]["events"] == 4
    finally:
        conn.close()


def test_past_top_groups_only_the_costliest_are_listed_and_the_rest_add_up(
    tmp_path: Path,
) -> None:
    """A year of sessions does not fit one frame: the answer lists the ``top`` costing
    most (in key order) and sums the others in ``rest``, so groups + rest = totals."""
    db = tmp_path / "tsuku.db"
    costs = {"s1": 0.1, "s2": 3.0, "s3": 0.2, "s4": 2.0, "s5": 0.0}
    write(
        db,
        [
            [
                (DAY0 + i, "llm.turn", {"provider": "claude", "input_tokens": 1, "cost_usd": c}, s)
                for i, (s, c) in enumerate(costs.items())
            ]
        ],
    )
    conn = connect(db, readonly=True)
    try:
        whole = wire(summarise(conn, EventFilter(), "session"))
        assert [g["key"] for g in whole["groups"]] == ["s1", "s2", "s3", "s4", "s5"]
        assert "rest" not in whole
        got = wire(summarise(conn, EventFilter(), "session", top=2))
        assert [g["key"] for g in got["groups"]] == ["s2", "s4"]
        assert got["rest"]["groups"] == 3
        assert got["rest"]["cost_usd"] == pytest.approx(0.3)
        assert got["totals"] == whole["totals"]
        for column in ("events", "llm_turns", "input_tokens"):
            listed = sum(g[column] for g in got["groups"])
            assert listed + got["rest"][column] == got["totals"][column]
    finally:
        conn.close()


def test_the_clients_cap_on_top_is_the_daemons() -> None:
    from tsukuctl.events_commands import MAX_SUMMARY_GROUPS
    from tsukud.events.summary import MAX_GROUPS

    assert MAX_SUMMARY_GROUPS == MAX_GROUPS
