"""The money promise end to end: 20 concurrent ``tsukuctl create … --llm --yes`` against
a real tsukud, the fake GitHub and a greedy fake Claude (real SDK) that reads three
49 KB files on every turn, with a daily budget for about three typical runs."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.create.greedy import Greedy, create_args, greedy_world
from tests.integration.create.helpers import CLAUDE_KEY
from tsukud.errors import ExitCode


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    yield from greedy_world()


# Among the slowest tests (issue 26): twenty concurrent creates against one budget (the race
# is the subject).
def test_twenty_greedy_creates_never_pass_the_budget(world: FakeGitHub) -> None:
    greedy = Greedy()
    path = short_home()
    with FakeAnthropic(fallback=greedy) as claude:
        t = Tsuku(
            path,
            {
                **base_env(path),
                **world.env(),
                "ANTHROPIC_API_KEY": CLAUDE_KEY,
                "ANTHROPIC_BASE_URL": claude.url,
                "TSUKU_LLM_DAILY_BUDGET": "1.50",
                "TSUKU_LLM_HOURLY_LIMIT": "100",
            },
        )
        try:
            t.start()
            codes: list[int] = []

            def one(i: int) -> None:
                cp = t.ctl(*create_args(t, i), timeout=300)
                codes.append(cp.returncode)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            billed = sum(greedy.billed, Decimal(0))
            assert 0 < billed <= Decimal("1.50")
            assert codes.count(ExitCode.BUDGET) >= 17, codes
            evs = [
                json.loads(x)
                for x in t.ctl("events", "--json", "--limit", "0", check=True).stdout.splitlines()
            ]
            turns = [e["payload"] for e in evs if e["type"] == "llm.turn"]
            assert len(turns) == len(greedy.billed)
            ledger = sum((Decimal(str(p["cost_usd"])) for p in turns), Decimal(0))
            assert round(ledger, 2) == round(billed, 2)
            # Each run's terminal event carries its true total, and no run spent more
            # than it reserved (its first reservation and every extension).
            by_session: dict[str, dict[str, Any]] = {}
            for e in evs:
                run = by_session.setdefault(e["session"] or "", {"reserved": 0.0, "spent": 0.0})
                if e["type"] == "budget.reserved":
                    run["reserved"] += e["payload"]["amount_usd"]
                elif e["type"] == "llm.turn":
                    run["spent"] += e["payload"]["cost_usd"]
                elif e["type"] in ("generation.completed", "generation.failed"):
                    run["terminal"] = e["payload"]["run_cost_usd"]
            for session, run in by_session.items():
                assert run["spent"] <= run["reserved"] + 1e-6, session
                if "terminal" in run:
                    assert run["terminal"] == pytest.approx(run["spent"], abs=1e-6), session
            stopped = [
                e["payload"]
                for e in evs
                if e["type"] == "generation.failed"
                and e["payload"]["error_code"] == "budget_exceeded"
                and e["payload"]["run_cost_usd"]
            ]
            # Every file the greedy asked for was read (tests/integration/create/greedy.py:
            # without them no run outgrows its reservation), so two admitted runs cannot
            # both finish within $1.50 and one is stopped at its ceiling.
            assert greedy.refused_reads == 0
            assert stopped, "a greedy run is stopped at its ceiling after spending"
            status = json.loads(t.ctl("status", "--json", check=True).stdout)["budget"]
            assert status["reserved_usd"] == 0 and status["spent_usd"] <= 1.50
            assert status["spent_usd"] == pytest.approx(float(billed), abs=1e-5)
        finally:
            t.stop_all()
            shutil.rmtree(path, ignore_errors=True)
