"""kill -9 with a paid web search in flight, end to end: real tsukud and tsukuctl, a local
model asking for a Tavily search that the fake Tavily holds open. The search's fee was
written ahead (``discovery.search_started``, durable before the query left), so the
next daemon charges it, marked estimated, and the run's settlement and terminal event
carry it. Before the write-ahead, such a search was never charged."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tests.integration.discover.helpers import TAVILY_KEY, World, local_searches_then_finds
from tsukud.errors import ExitCode

pytestmark = pytest.mark.ctl_process  # a client killed mid-search: real processes

FEE = 0.008  # discover.tavily_search_usd's default
TAVILY = ("--search-provider", "tavily")


def wait_for(what: str, ready: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_kill_9_with_a_paid_search_in_flight_charges_its_fee(world: World) -> None:
    world.search.delay = 120.0  # Tavily holds its answer: the kill lands mid-search
    local_searches_then_finds(world.local)
    home = short_home()
    env = {**base_env(home), **world.env(home, "local", TAVILY_API_KEY=TAVILY_KEY)}
    t = Tsuku(home, env)
    try:
        daemon = t.start()
        client = subprocess.Popen(
            [sys.executable, "-m", "tsukuctl", "discover", "stripe-cli", "--yes", *TAVILY],
            env=t.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        wait_for("the search to reach Tavily", lambda: world.search.searches("tavily"))
        os.kill(daemon.pid, signal.SIGKILL)
        daemon.wait()
        _out, err = client.communicate(timeout=60)
        assert client.returncode == ExitCode.DAEMON_UNAVAILABLE, err
        assert "Traceback" not in err

        t.start()
        wait_for("the settlement", lambda: t.call("status")["budget"]["reserved_usd"] == 0)
        events = [
            e
            for e in map(json.loads, t.ctl("events", "--json", "--limit", "0").stdout.splitlines())
            if (e["session"] or "").startswith("discover-")
        ]

        def of(type_: str) -> list[dict[str, Any]]:
            return [e["payload"] for e in events if e["type"] == type_]

        (ahead,) = of("discovery.search_started")
        assert ahead["provider"] == "tavily" and ahead["worst_case_usd"] == pytest.approx(FEE)
        (search,) = of("discovery.search")  # written by the next start
        assert search["reason"] == "abandoned" and search["estimated"] is True
        assert search["cost_usd"] == pytest.approx(FEE) and search["ok"] is False
        assert (search["reservation"], search["search"]) == (ahead["reservation"], 1)
        (settled,) = of("budget.settled")
        assert settled["actual_usd"] == pytest.approx(FEE)  # the local model's tokens are free
        (failed,) = of("discovery.failed")
        assert failed["error_code"] == "abandoned" and failed["spent_usd"] == pytest.approx(FEE)
        assert len(world.search.searches("tavily")) == 1
        assert t.call("status")["budget"]["spent_usd"] == pytest.approx(FEE)
    finally:
        world.search.delay = 0.0
        t.stop_all()
        shutil.rmtree(home, ignore_errors=True)
