"""Holds of a daemon that never comes back (``tsukud/policy/pg_leases.py``): another
daemon settles them after ``policy.hold_lease_seconds`` at their worst case, marked
estimated, in its own chain, once; a daemon merely paused shorter than the lease keeps
them. Real daemons, a real PostgreSQL."""

from __future__ import annotations

import os
import signal
import threading
import time
from typing import Any

import psycopg

from tests.conftest import Tsuku
from tests.integration.ledger_pg.conftest import SharedHomes, started
from tests.integration.ledger_pg.test_shared_budget import day_row, every_event
from tests.pg import PgDatabase
from tests.waiting import wait_until
from tsukud.events.pg_store import SCHEMA_FILES
from tsukud.policy.pg_leases import EVENT, renew, settle_expired

AMOUNT = 0.25  # USD, held by the daemon that goes silent


def origin(t: Tsuku) -> str:
    return str(t.call("status")["events"]["origin"])


def hold(db: PgDatabase, rid: str) -> tuple[Any, ...]:
    """(actual_micro, settled_by) of the hold ``rid``."""
    with psycopg.connect(db.url) as conn:
        row = conn.execute(
            "SELECT actual_micro, settled_by FROM tsuku.budget_holds WHERE reservation = %s",
            (rid,),
        ).fetchone()
    assert row is not None, rid
    return tuple(row)


def settlements(t: Tsuku) -> list[dict[str, Any]]:
    return every_event(t, EVENT)


def test_a_daemon_killed_holding_money_has_it_settled_by_another_at_its_worst_case(
    pg_database: PgDatabase, shared_homes: SharedHomes
) -> None:
    """A holds $0.25 and is killed (kill -9); B settles it once A's lease runs out: the
    whole $0.25, estimated, in B's chain naming A and the reservation, the day's row
    spent by exactly that."""
    env = {"TSUKU_LLM_DAILY_BUDGET": "1.00", "TSUKU_POLICY_HOLD_LEASE_SECONDS": "2"}
    a, b = started(shared_homes, pg_database.url, 2, env)
    origin_a, origin_b = origin(a), origin(b)
    rid = a.call("budget.reserve", {"amount_usd": AMOUNT, "confirmed": True})["reservation"]
    assert day_row(pg_database)[2] == 250_000  # held, open
    proc = a.procs[-1]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    wait_until(lambda: settlements(b), "B settling A's hold after A's lease", timeout=30)
    (ev,) = settlements(b)
    assert ev["origin"] == origin_b
    assert ev["payload"] == {
        "origin": origin_a,
        "reservation": rid,
        "day": ev["payload"]["day"],
        "reserved_usd": AMOUNT,
        "actual_usd": AMOUNT,
        "estimated": True,
        "lease_expired_at": ev["payload"]["lease_expired_at"],
    }
    assert hold(pg_database, rid) == (250_000, origin_b)
    _limit, held, open_, spent = day_row(pg_database)
    assert (held, open_, spent) == (250_000, 0, 250_000)


def test_a_daemon_paused_shorter_than_the_lease_keeps_its_holds_and_past_it_loses_them(
    pg_database: PgDatabase, shared_homes: SharedHomes
) -> None:
    """A (lease 4 s, renewed every second) is stopped for 1 s: B looks meanwhile and
    settles nothing. Stopped again for longer than the lease, its hold is settled by B;
    A, woken, settles it at what it spent, and the row keeps the worst case, once."""
    env = {"TSUKU_LLM_DAILY_BUDGET": "1.00", "TSUKU_POLICY_HOLD_LEASE_SECONDS": "4"}
    a, b = started(shared_homes, pg_database.url, 2, env)
    origin_b = origin(b)
    rid = a.call("budget.reserve", {"amount_usd": AMOUNT, "confirmed": True})["reservation"]
    pid = a.procs[-1].pid
    os.kill(pid, signal.SIGSTOP)
    try:
        time.sleep(1.0)  # the pause itself is what is tested: B looks every second
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(1.0)  # and B goes on looking after it
    assert hold(pg_database, rid) == (None, None)
    assert settlements(b) == []

    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until(lambda: settlements(b), "B settling the hold of A paused past its lease")
    finally:
        os.kill(pid, signal.SIGCONT)
    assert hold(pg_database, rid) == (250_000, origin_b)
    # A, awake, settles its reservation at what it spent: the row keeps the worst case.
    a.call("budget.settle", {"reservation": rid, "actual_usd": 0.0})
    assert day_row(pg_database)[1:] == (250_000, 0, 250_000)


def _setup_day(db: PgDatabase) -> None:
    """A day with two open holds of ``dead`` (its lease ran out a minute ago) and one of
    ``alive`` (its lease good for an hour)."""
    with psycopg.connect(db.url) as conn:
        for schema in SCHEMA_FILES:  # the daemon's migration, without a daemon
            conn.execute(schema.read_bytes())
        conn.execute(
            "INSERT INTO tsuku.budget_days (day, limit_micro, held_micro, open_micro)"
            " VALUES ('2026-01-01', 1000000, 600000, 600000)"
        )
        for rid, who, amount in (("r-1", "dead", 100_000), ("r-2", "dead", 200_000)):
            conn.execute(
                "INSERT INTO tsuku.budget_holds (reservation, origin, day, amount_micro)"
                " VALUES (%s, %s, '2026-01-01', %s)",
                (rid, who, amount),
            )
        conn.execute(
            "INSERT INTO tsuku.budget_holds (reservation, origin, day, amount_micro)"
            " VALUES ('r-3', 'alive', '2026-01-01', 300000)"
        )
        renew(conn, "alive", "d-1", 3600)
        renew(conn, "dead", "d-2", 1)
        conn.execute(
            "UPDATE tsuku.origin_leases SET alive_until = now() - interval '1 minute'"
            " WHERE origin = 'dead'"
        )


def test_two_settlers_racing_for_a_silent_origins_holds_settle_them_once(
    pg_database: PgDatabase,
) -> None:
    """Two settlers find the same open holds; the first holds their rows until it
    commits, the second waits on the row lock and then updates nothing: each hold is
    charged once, the alive origin's hold is left alone. (Dropping ``actual_micro IS
    NULL`` from the settlement charges them twice here.)"""
    _setup_day(pg_database)
    second: list[list[Any]] = []
    with psycopg.connect(pg_database.url) as one, psycopg.connect(pg_database.url) as two:
        with one.transaction():
            first = settle_expired(one, "settler-1")
            assert sorted(h.reservation for h in first) == ["r-1", "r-2"]

            def race() -> None:
                with two.transaction():
                    second.append(settle_expired(two, "settler-2"))

            th = threading.Thread(target=race)
            th.start()
            wait_until(lambda: _waits_on_a_lock(pg_database), "the second settler waiting")
        th.join(timeout=30)
    assert second == [[]]
    with psycopg.connect(pg_database.url) as conn:
        rows = conn.execute(
            "SELECT reservation, actual_micro, settled_by FROM tsuku.budget_holds"
            " ORDER BY reservation"
        ).fetchall()
        day = conn.execute(
            "SELECT held_micro, open_micro, spent_micro FROM tsuku.budget_days"
        ).fetchone()
    assert rows == [
        ("r-1", 100_000, "settler-1"),
        ("r-2", 200_000, "settler-1"),
        ("r-3", None, None),
    ]
    assert day == (600_000, 300_000, 300_000)


def _waits_on_a_lock(db: PgDatabase) -> bool:
    with psycopg.connect(db.url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return row is not None and int(row[0]) > 0
