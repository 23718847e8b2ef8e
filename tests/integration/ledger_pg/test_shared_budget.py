"""One day's budget shared by daemons on one PostgreSQL ledger: the database decides
(a conditional UPDATE of the day's row, a CHECK behind it), so daemons racing for the
last dollars never pass the limit together, a database restarted under load loses
nothing and over-spends nothing, and a writer with the table's rights cannot write an
over-spent row."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import psycopg
import pytest

from tests.conftest import Tsuku
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.create.greedy import Greedy, create_args, greedy_world
from tests.integration.create.helpers import claude_env
from tests.integration.ledger_pg.conftest import SharedHomes, started
from tests.pg import PgDatabase, url
from tests.waiting import wait_until
from tsukuctl.client import Client
from tsukud.errors import ExitCode
from tsukud.launch import RemoteError

LIMIT = Decimal("1.50")


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    yield from greedy_world()


def every_event(t: Tsuku, *types: str) -> list[dict[str, Any]]:
    """The whole team's events of ``types`` (every origin), as ``tsukuctl events`` lists."""
    args = ["events", "--json", "--limit", "0"]
    for ty in types:
        args += ["--type", ty]
    cp = t.ctl(*args, check=True, timeout=120)
    return [json.loads(line) for line in cp.stdout.splitlines()]


def day_row(db: PgDatabase) -> tuple[int, int, int, int]:
    """(limit, held, open, spent) of the only day's row, micro-USD."""
    with psycopg.connect(db.url) as conn:
        rows = conn.execute(
            "SELECT limit_micro, held_micro, open_micro, spent_micro FROM tsuku.budget_days"
        ).fetchall()
    assert len(rows) == 1, rows
    return tuple(int(x) for x in rows[0])  # type: ignore[return-value]


def test_three_daemons_racing_for_the_last_dollars_never_pass_the_shared_limit(
    world: FakeGitHub, pg_database: PgDatabase, shared_homes: SharedHomes
) -> None:
    """Three daemons, four greedy creates each, one $1.50 day: what the fake billed stays
    within it and equals what the ledger says across all origins; every run ends done or
    refused for the budget (nothing else: the database's CHECK refusing an over-spent row
    would be another error, so dropping the UPDATE's condition fails here)."""
    greedy = Greedy()
    with FakeAnthropic(fallback=greedy) as claude:
        env = {**world.env(), **claude_env(claude.url, LIMIT)}
        daemons = started(shared_homes, pg_database.url, 3, env)
        codes: list[int] = []
        errors: list[str] = []

        def one(t: Tsuku, i: int) -> None:
            cp = t.ctl(*create_args(t, i), timeout=300)
            codes.append(cp.returncode)
            if cp.returncode not in (0, ExitCode.BUDGET):
                errors.append(cp.stderr[-600:])

        threads = [
            threading.Thread(target=one, args=(t, n * 10 + i))
            for n, t in enumerate(daemons)
            for i in range(4)
        ]
        for th in threads:
            th.start()
        for th in threads:
            th.join()

        assert errors == [], errors
        billed = sum(greedy.billed, Decimal(0))
        assert 0 < billed <= LIMIT
        assert codes.count(ExitCode.BUDGET) >= 3, codes  # the day ran out for someone

        origins = {t.call("status")["events"]["origin"] for t in daemons}
        turns = every_event(daemons[0], "llm.turn")
        assert {e["origin"] for e in turns} <= origins
        assert len(turns) == len(greedy.billed)
        ledger = sum((Decimal(str(e["payload"]["cost_usd"])) for e in turns), Decimal(0))
        assert abs(ledger - billed) < Decimal("0.00001"), (ledger, billed)

        limit, held, open_, spent = day_row(pg_database)
        assert limit == 1_500_000 and held <= limit and open_ == 0
        assert abs(Decimal(spent) / 1_000_000 - billed) < Decimal("0.00001")
        for t in daemons:  # every daemon shows the team's numbers
            budget = t.call("status")["budget"]
            assert budget["reserved_usd"] == 0
            assert budget["spent_usd"] == pytest.approx(float(billed), abs=1e-5)


class Load:
    """Reservations (each settled at its full amount) made over and over by threads,
    until ``stop``: what was granted and acknowledged, when, and each refusal's code."""

    def __init__(self) -> None:
        self.granted: list[tuple[float, str, Decimal]] = []  # (when, reservation, amount)
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self, t: Tsuku, amount: Decimal) -> None:
        with Client.connect(t.socket, autostart=False) as c:
            while not self.stop.is_set():
                try:
                    g = c.call("budget.reserve", {"amount_usd": float(amount), "confirmed": True})
                except RemoteError as e:
                    self.errors.append(e.remote_code)
                    time.sleep(0.02)
                    continue
                self.granted.append((time.monotonic(), g["reservation"], amount))
                try:
                    c.call(
                        "budget.settle",
                        {"reservation": g["reservation"], "actual_usd": float(amount)},
                    )
                except RemoteError as e:
                    self.errors.append(e.remote_code)
                time.sleep(0.01)

    def total(self) -> Decimal:
        return sum((a for _w, _r, a in self.granted), Decimal(0))


def test_the_database_restarted_under_load_over_spends_nothing_and_the_daemons_go_on(
    pg_database: PgDatabase, shared_homes: SharedHomes
) -> None:
    """Two daemons reserve (and settle at the full amount) $0.01 at a time against a
    $1.00 day while PostgreSQL is stopped as by a crash (``-m immediate``) and started
    again: refusals are typed (the budget, or the ledger out of reach), both daemons are
    granted reservations again after the restart until the day is spent, what was
    granted never passes the limit, and every grant is in its daemon's chain."""
    daemons = started(shared_homes, pg_database.url, 2, {"TSUKU_LLM_DAILY_BUDGET": "1.00"})
    load = Load()
    threads = [
        threading.Thread(target=load.run, args=(t, Decimal("0.01")))
        for t in daemons
        for _ in range(2)
    ]
    for th in threads:
        th.start()
    try:
        wait_until(lambda: len(load.granted) >= 10, "reservations granted before the crash")
        pg_database.server.stop("immediate")
        time.sleep(1.0)
        pg_database.server.restart_stopped()
        restarted = time.monotonic()
        wait_until(
            lambda: "budget_exceeded" in load.errors, "the day spent after the restart", timeout=60
        )
    finally:
        load.stop.set()
        for th in threads:
            th.join()

    assert set(load.errors) <= {"budget_exceeded", "ledger_unavailable"}, set(load.errors)
    assert "ledger_unavailable" in load.errors  # the crash was seen, as a typed error
    assert load.total() <= Decimal("1.00"), load.total()
    assert any(when > restarted for when, _r, _a in load.granted)  # they went on
    for t in daemons:
        wait_until(
            lambda t=t: t.call("status")["events"]["unreachable"] is None,
            "the daemon writing again after the restart",
        )
        with pytest.raises(RemoteError) as refused:
            t.call("budget.reserve", {"amount_usd": 0.02, "confirmed": True})
        assert refused.value.remote_code == "budget_exceeded"
    limit, held, _open, spent = day_row(pg_database)
    assert held <= limit == 1_000_000 and spent <= limit
    recorded = {e["payload"]["reservation"] for e in every_event(daemons[0], "budget.reserved")}
    assert {r for _w, r, _a in load.granted} <= recorded  # nothing acknowledged was lost


def test_a_writer_with_the_tables_rights_cannot_write_an_overspent_day(
    pg_database: PgDatabase, shared_homes: SharedHomes
) -> None:
    (t,) = started(shared_homes, pg_database.url, 1, {"TSUKU_LLM_DAILY_BUDGET": "1.00"})
    t.call("budget.reserve", {"amount_usd": 0.25, "confirmed": True})
    role, password = f"hostile_{pg_database.name}", "pw-hostile-123"
    server = pg_database.server
    server.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
    try:
        server.execute(f"GRANT USAGE ON SCHEMA tsuku TO {role}", pg_database.name)
        server.execute(
            f"GRANT SELECT, UPDATE ON tsuku.budget_days, tsuku.budget_holds TO {role}",
            pg_database.name,
        )
        with psycopg.connect(
            url(role, password, server.port, pg_database.name), autocommit=True
        ) as conn:
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute("UPDATE tsuku.budget_days SET held_micro = limit_micro + 1")
            with pytest.raises(psycopg.errors.CheckViolation):
                conn.execute("UPDATE tsuku.budget_days SET held_micro = -1")
            # Its rights do reach the row: a change within the limit goes through.
            conn.execute("UPDATE tsuku.budget_days SET held_micro = held_micro")
        assert day_row(pg_database)[:3] == (1_000_000, 250_000, 250_000)
    finally:
        server.execute(f"DROP OWNED BY {role}", pg_database.name)
        server.execute(f"DROP ROLE {role}")
