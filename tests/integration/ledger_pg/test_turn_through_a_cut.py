"""A model call answered while the shared ledger is cut off reaches the ledger once the
connection is back (``pg_breakers.SharedBreakers.call_succeeded`` appends the turn
before it tells the breaker row; ``llm/service.py`` waits for the ledger): the fake's
bill equals the ledger's turns without any restart. Real daemon, real SDK, a real
PostgreSQL behind a proxy that cuts."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from decimal import Decimal

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.create.greedy import Greedy, create_args, greedy_world
from tests.integration.create.helpers import CLAUDE_KEY
from tests.integration.ledger_pg.conftest import SharedHomes, started
from tests.integration.ledger_pg.test_shared_budget import every_event
from tests.pg import PgDatabase
from tests.tcp_proxy import TcpProxy
from tests.waiting import wait_until

pytestmark = [pytest.mark.ctl_process]


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    yield from greedy_world()


def test_a_call_answered_while_the_ledger_is_cut_off_is_on_the_ledger_once_it_is_back(
    world: FakeGitHub, pg_database: PgDatabase, shared_homes: SharedHomes
) -> None:
    greedy = Greedy(hold_from_call=2)  # the run's second call waits at the provider
    with (
        FakeAnthropic(fallback=greedy) as claude,
        TcpProxy(("127.0.0.1", pg_database.server.port)) as proxy,
    ):
        env = {
            **world.env(),
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "ANTHROPIC_BASE_URL": claude.url,
            "TSUKU_LLM_DAILY_BUDGET": "5.00",
            "TSUKU_LLM_HOURLY_LIMIT": "100",
        }
        (t,) = started(shared_homes, pg_database.url_via(proxy.port), 1, env)
        run = subprocess.Popen(
            [sys.executable, "-m", "tsukuctl", *create_args(t, 0)],
            env=t.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            greedy.wait_held(1)
            proxy.cut()
            greedy.release()  # answered, and billed, while the ledger is out of reach
            time.sleep(1.0)  # the cut itself is what is tested
            proxy.restore()
            run.communicate(timeout=120)
        finally:
            greedy.release()
            if run.poll() is None:
                run.kill()
                run.wait()
        wait_until(
            lambda: t.call("status")["events"]["unreachable"] is None,
            "the daemon writing again after the cut",
        )
        calls = [*greedy.billed, *greedy.held]
        turns = every_event(t, "llm.turn")
        assert every_event(t, "llm.cut_off") == []
        assert len(turns) == len(calls) >= 2, (len(turns), len(calls))
        ledger = sum((Decimal(str(e["payload"]["cost_usd"])) for e in turns), Decimal(0))
        assert abs(ledger - sum(calls, Decimal(0))) < Decimal("0.00001")
