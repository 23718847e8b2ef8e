"""``events summary`` on both backends: the same events give the same groups, totals and
key order on SQLite and on a shared PostgreSQL ledger, each from its rollups where the
filter allows (``source`` says so) and from the events where not, for every grouping; a
shared ledger's summary is the team's, and ``origin`` narrows it to one daemon's."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import msgspec
import pytest
import trio

from tests.pg import PgDatabase, PgServer
from tests.unit.events.conftest import StoreFactory
from tsukud.clock import FixedClock
from tsukud.errors import InvalidParams
from tsukud.events import summary
from tsukud.events.queries import GROUP_KEYS, EventFilter, iter_list, run_summary, summary_sql
from tsukud.events.store import EventStore

DAY0 = 1_800_000_000.0 - 1_800_000_000.0 % 86400  # a midnight UTC: 2027-01-15
H = 3600.0

# (seconds after DAY0, type, payload, session): every kind a summary adds up, money to 9
# decimals, estimated and unpriced calls, and clients' annotations claiming anything.
LEDGER: list[tuple[float, str, dict[str, Any], str | None]] = [
    (0, "daemon.started", {"pid": 1, "version": "x", "activation": "manual", "socket": None,
                           "startup_ms": 1.0}, None),
    (10, "llm.turn", {"provider": "claude", "model": "m-1", "input_tokens": 1200,
                      "output_tokens": 300, "cost_usd": 0.012345678}, "s1"),
    (H + 5, "llm.turn", {"provider": "gemini", "input_tokens": 50, "output_tokens": 7}, "s1"),
    (H + 1800, "llm.cut_off", {"provider": "claude", "model": "m-2", "reservation": "r",
                               "call": 2, "reason": "deadline", "cost_usd": 0.5}, "s2"),
    (2 * H, "llm.cut_off", {"provider": "claude", "reservation": "r", "call": 3,
                            "reason": "abandoned", "cost_usd": 0.25, "estimated": False}, None),
    (2 * H + 1, "llm.cut_off", {"provider": "gemini", "reservation": "r", "call": 4,
                                "reason": "deadline"}, "s2"),
    (3 * H, "discovery.search", {"tool": "jq", "provider": "tavily", "ok": True,
                                 "cost_usd": 0.008}, "s1"),
    (3 * H + 2, "budget.reserved", {"reservation": "r", "day": "2027-01-15",
                                    "amount_usd": 3}, None),
    (3 * H + 3, "client.note", {"provider": 7, "model": None, "cost_usd": "1.5",
                                "input_tokens": "9", "estimated": "yes"}, "s1"),
    (3 * H + 4, "client.bench", {"provider": "claude", "cost_usd": 10**18,
                                 "input_tokens": 2.5, "estimated": True}, None),
    (86400 + 60, "llm.turn", {"provider": "claude", "model": "m-1", "input_tokens": 10,
                              "output_tokens": 20, "cost_usd": 1.5e-6}, "s2"),
    (86400 + 61, "daemon.stopped", {"pid": 1, "uptime_s": 1.0}, None),
]  # fmt: skip

FILTERS = [
    EventFilter(),
    EventFilter(since="2027-01-15T01:00:00.000000Z"),
    EventFilter(since="2027-01-15T01:10:00.000000Z", until="2027-01-16"),
    EventFilter(types=["llm.*"]),
    EventFilter(types=["client.*", "discovery.search"]),
    EventFilter(session="s1"),
]


def write(store: EventStore, clock: FixedClock, ledger: list[Any]) -> None:
    """Open ``store``, append ``ledger`` at its times, and leave it closed."""

    async def main() -> None:
        store.open()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(store.run)
                for t, type_, payload, session in ledger:
                    clock.t = DAY0 + t
                    store.append_nowait(type_, payload, session)
                await store.wait_durable(store.last_id)
                store.close()
        finally:
            store.close_connection()

    trio.run(main)


def answer(store: EventStore, f: EventFilter, by: str) -> dict[str, Any]:
    """What ``events.summary`` answers on ``store``'s backend (the RPC's call)."""
    shared = store.origin is not None
    got = store.read_sync(lambda conn: summary.summarise(conn, f, by, shared=shared))
    return msgspec.to_builtins(got)  # type: ignore[no-any-return]


def test_every_summary_is_the_same_on_both_backends(backend: StoreFactory, tmp_path: Path) -> None:
    clock = FixedClock(DAY0)
    store = backend(tmp_path / "home", clock)
    write(store, clock, LEDGER)
    # The reference: the summary's SQL over the same events in SQLite, no rollups.
    ref_clock = FixedClock(DAY0)
    ref = EventStore(tmp_path / "ref" / "tsuku.db", clock=ref_clock)
    write(ref, ref_clock, LEDGER)
    for f in FILTERS:
        for by in GROUP_KEYS:
            want = ref.read_sync(
                lambda conn, f=f, by=by: msgspec.to_builtins(run_summary(conn, f, by))
            )
            got = answer(store, f, by)
            assert got["by"] == by
            # From the rollups wherever the filter allows, on either backend.
            assert got["source"] == summary.plan(f, by).source, (store.backend, f, by)
            assert got["groups"] == want, (store.backend, f, by)
            for column, value in got["totals"].items():
                assert value == pytest.approx(sum(g[column] for g in want)), (f, by, column)
    total = answer(store, EventFilter(), "provider")["totals"]
    # Money only where it was spent: not the reservation, not the clients' claims.
    assert total["cost_usd"] == pytest.approx(0.012345678 + 0.5 + 0.25 + 0.008 + 1.5e-6)
    assert total["cost_estimated_usd"] == pytest.approx(0.5)  # the cut-off not said otherwise
    assert total["cost_unknown"] == 2 and total["llm_turns"] == 3
    assert total["input_tokens"] == 1260 and total["events"] == len(LEDGER)


def test_a_shared_summary_is_the_teams_and_origin_narrows_it(
    pg_database: PgDatabase, tmp_path: Path
) -> None:
    from tsukud.events.pg_store import PgEventStore

    stores = []
    for name, part in (("a", LEDGER[:6]), ("b", LEDGER[6:])):
        clock = FixedClock(DAY0)
        store = PgEventStore(pg_database.url, tmp_path / name, clock=clock)
        write(store, clock, part)
        stores.append(store)
    a, b = stores
    team = answer(a, EventFilter(), "type")
    assert team["totals"]["events"] == len(LEDGER)
    assert answer(b, EventFilter(), "type") == team  # any daemon answers for the team
    only_a = answer(b, EventFilter(origin=a.origin), "type")
    assert only_a["totals"]["events"] == 6
    assert {g["key"] for g in only_a["groups"]} == {"daemon.started", "llm.turn", "llm.cut_off"}
    only_b = answer(a, EventFilter(origin=b.origin), "provider")
    assert only_b["totals"]["cost_usd"] == pytest.approx(0.008 + 1.5e-6)


def test_an_origin_filter_is_refused_on_sqlite() -> None:
    with pytest.raises(InvalidParams, match="only a shared ledger has origins"):
        summary_sql(EventFilter(origin="host-1"), "day")


def test_a_database_whose_collation_ignores_punctuation_filters_as_sqlite_does(
    pg_server: PgServer, tmp_path: Path
) -> None:
    """ICU's ``ka-shifted`` (like glibc's en_US) sorts 'llm.turn' after 'llm/': the
    type and time ranges must compare bytes. The schema makes its columns so; the
    queries say so too, for a ledger whose columns schema version 1 made (here)."""
    import psycopg

    from tsukud.events.pg_store import PgEventStore, migrate

    name = f"tc_{os.getpid()}_{secrets.token_hex(3)}"
    pg_server.execute(
        f'CREATE DATABASE "{name}" TEMPLATE template0 LOCALE_PROVIDER icu'
        " ICU_LOCALE 'en-u-ka-shifted' LOCALE 'C.UTF-8'"
    )
    try:
        with psycopg.connect(pg_server.admin_url(name), autocommit=True) as conn:
            migrate(conn)
            assert collations(conn) == [("C",)]  # the schema's own: indexes serve byte ranges
            conn.execute(
                'ALTER TABLE tsuku.events ALTER COLUMN type TYPE text COLLATE "default",'
                ' ALTER COLUMN ts TYPE text COLLATE "default"'
            )
        clock = FixedClock(DAY0)
        store = PgEventStore(pg_server.admin_url(name), tmp_path / "home", clock=clock)
        write(store, clock, LEDGER)
        ref_clock = FixedClock(DAY0)
        ref = EventStore(tmp_path / "ref" / "tsuku.db", clock=ref_clock)
        write(ref, ref_clock, LEDGER)
        for f in FILTERS:
            want = ref.read_sync(
                lambda conn, f=f: msgspec.to_builtins(run_summary(conn, f, "type"))
            )
            assert answer(store, f, "type")["groups"] == want, f
            listed = store.read_sync(lambda conn, f=f: types(iter_list(conn, f, 0, shared=True)))
            assert listed == ref.read_sync(lambda conn, f=f: types(iter_list(conn, f, 0))), f
    finally:
        pg_server.drop_database(name)


def collations(conn: Any) -> list[tuple[str]]:
    return conn.execute(  # type: ignore[no-any-return]
        "SELECT DISTINCT c.collname FROM pg_attribute a JOIN pg_collation c"
        " ON c.oid = a.attcollation WHERE a.attrelid = 'tsuku.events'::regclass"
        " AND a.attname IN ('type', 'ts')"
    ).fetchall()


def types(chunks: Any) -> list[str]:
    return [row[2] for rows in chunks for row in rows]


def test_replayed_turns_are_said_apart_on_both_backends(
    backend: StoreFactory, tmp_path: Path
) -> None:
    """What replayed turns cost when recorded is read from the turns that carry it (on
    PostgreSQL only those payloads are parsed), never from a client's note claiming it."""
    clock = FixedClock(DAY0)
    store = backend(tmp_path / "home", clock)
    replayed = {"provider": "claude", "cost_usd": 0.0, "replayed": True, "replayed_cost_usd": 0.25}
    ledger = [
        (0, "llm.turn", replayed, None),
        (1, "llm.turn", {"provider": "claude", "cost_usd": 0.5}, None),
        (2, "client.note", {"replayed_cost_usd": 9}, None),
    ]
    write(store, clock, ledger)
    got = answer(store, EventFilter(), "provider")
    assert got["replayed_usd"] == 0.25 and got["totals"]["cost_usd"] == 0.5
    assert got["source"] == "rollups"
