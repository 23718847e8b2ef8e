"""Money when a run is cut short with a provider call in flight: the daemon killed with
SIGKILL, the client interrupted with Ctrl-C. Real tsukud and tsukuctl processes, the
greedy fake Claude behind the real SDK holding the calls open, so the cut lands in the
middle of a request every time.

What the ledger must show afterwards: every answered call at exactly what the fake
billed for it, every call cut off at its worst case (never less than what it would have
billed), marked estimated, and the run's settlement and terminal event at that total.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.create.greedy import Greedy, create_args, greedy_world, ledger
from tests.integration.create.helpers import CLAUDE_KEY
from tsukud.errors import ExitCode

BUDGET = Decimal("5.00")
CENT = Decimal("0.01")


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    yield from greedy_world()


def tsuku_for(world: FakeGitHub, claude: FakeAnthropic) -> Tsuku:
    path = short_home()
    return Tsuku(
        path,
        {
            **base_env(path),
            **world.env(),
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "ANTHROPIC_BASE_URL": claude.url,
            "TSUKU_LLM_DAILY_BUDGET": str(BUDGET),
            "TSUKU_LLM_HOURLY_LIMIT": "100",
        },
    )


def spawn_create(t: Tsuku, i: int) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", *create_args(t, i)],
        env=t.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def dec(x: float) -> Decimal:
    return Decimal(str(x))


def dominates(charged: list[Decimal], served: list[Decimal]) -> bool:
    """Each served call can be paired with its own charge at least as large."""
    return len(charged) == len(served) and all(
        c >= s for c, s in zip(sorted(charged), sorted(served), strict=True)
    )


def per_session(events: list[dict[str, Any]], type_: str, field: str) -> dict[str, Decimal]:
    out: dict[str, Decimal] = defaultdict(Decimal)
    for e in events:
        if e["type"] == type_:
            out[e["session"]] += dec(e["payload"][field])
    return out


def wait_settled(t: Tsuku, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        budget: dict[str, Any] = t.call("status")["budget"]
        if budget["reserved_usd"] == 0 or time.monotonic() > deadline:
            return budget
        time.sleep(0.1)


# Among the slowest tests (issue 26): kill -9 with calls in flight, a restart and the
# abandoned runs' settling (processes are the subject).
def test_kill_9_with_calls_in_flight_charges_served_and_cut_off_calls(world: FakeGitHub) -> None:
    runs = 3
    greedy = Greedy(hold_from_call=3)  # two answered calls per run, the third in flight
    with FakeAnthropic(fallback=greedy) as claude:
        t = tsuku_for(world, claude)
        try:
            daemon = t.start()
            clients = [spawn_create(t, i) for i in range(runs)]
            greedy.wait_held(runs)
            assert len(greedy.billed) == 2 * runs
            os.kill(daemon.pid, signal.SIGKILL)
            daemon.wait()
            for c in clients:
                _out, err = c.communicate(timeout=60)
                assert c.returncode == ExitCode.DAEMON_UNAVAILABLE, err
                assert "Traceback" not in err
            greedy.release()  # the answers reach nobody

            t.start()
            budget = wait_settled(t)
            assert budget["reserved_usd"] == 0, budget
            events = ledger(t)
            turns = [e for e in events if e["type"] == "llm.turn"]
            cuts = [e["payload"] for e in events if e["type"] == "llm.cut_off"]
            # Answered calls: exactly what the provider billed, call for call.
            assert len(turns) == len(greedy.billed)
            served = sum(greedy.billed, Decimal(0))
            paid = sum((dec(e["payload"]["cost_usd"]) for e in turns), Decimal(0))
            assert paid.quantize(CENT) == served.quantize(CENT)
            assert abs(paid - served) < Decimal("0.000001")
            # Calls in flight at the kill: their worst case, estimated, never less than
            # what the provider would have billed for them.
            assert all(c["reason"] == "abandoned" and c["estimated"] for c in cuts), cuts
            assert dominates([dec(c["cost_usd"]) for c in cuts], greedy.held)
            # Each run settled at its own total; the day's total within the budget.
            charged = per_session(events, "llm.turn", "cost_usd")
            for s, v in per_session(events, "llm.cut_off", "cost_usd").items():
                charged[s] += v
            settled = per_session(events, "budget.settled", "actual_usd")
            assert len(settled) == runs
            for s, total in settled.items():
                assert total.quantize(CENT) == charged[s].quantize(CENT), s
            # Each run's terminal event, written by the next start, carries that total.
            ended = {e["session"]: e["payload"] for e in events if e["type"] == "generation.failed"}
            assert set(ended) == set(settled)
            for s, p in ended.items():
                assert p["error_code"] == "abandoned", p
                assert dec(p["run_cost_usd"]).quantize(CENT) == charged[s].quantize(CENT), s
            day = sum(charged.values(), Decimal(0))
            assert dec(budget["spent_usd"]).quantize(CENT) == day.quantize(CENT)
            assert served + sum(greedy.held, Decimal(0)) <= day <= BUDGET
        finally:
            greedy.release()
            t.stop_all()
            shutil.rmtree(t.home, ignore_errors=True)


# Among the slowest tests (issue 26): a real SIGINT with an LLM call in flight, then the
# run's settling (signals and time are the subject).
@pytest.mark.slow  # a run cut off in flight; test_kill_9_with_calls_in_flight_* stays
def test_ctrl_c_with_a_call_in_flight_ends_the_run_at_its_true_total(world: FakeGitHub) -> None:
    greedy = Greedy(hold_from_call=2)
    with FakeAnthropic(fallback=greedy) as claude:
        t = tsuku_for(world, claude)
        try:
            t.start()
            client = spawn_create(t, 0)
            greedy.wait_held(1)
            client.send_signal(signal.SIGINT)
            _out, err = client.communicate(timeout=60)
            assert client.returncode == ExitCode.CANCELLED, err
            assert "Traceback" not in err
            budget = wait_settled(t)
            assert budget["reserved_usd"] == 0, budget
            events = ledger(t)
            (failed,) = [e for e in events if e["type"] == "generation.failed"]
            assert failed["payload"]["error_code"] == "cancelled"
            turns = [e["payload"] for e in events if e["type"] == "llm.turn"]
            (cut,) = [e["payload"] for e in events if e["type"] == "llm.cut_off"]
            (served,) = greedy.billed
            (turn,) = turns
            assert dec(turn["cost_usd"]).quantize(CENT) == served.quantize(CENT)
            assert cut["reason"] == "cancelled" and cut["estimated"] is True
            assert dominates([dec(cut["cost_usd"])], greedy.held)
            total = dec(turn["cost_usd"]) + dec(cut["cost_usd"])
            # The terminal event carries the run's true total: billed + estimated.
            assert dec(failed["payload"]["run_cost_usd"]).quantize(CENT) == total.quantize(CENT)
            (settled,) = [e["payload"] for e in events if e["type"] == "budget.settled"]
            assert dec(settled["actual_usd"]).quantize(CENT) == total.quantize(CENT)
            assert dec(budget["spent_usd"]).quantize(CENT) == total.quantize(CENT)
        finally:
            greedy.release()
            t.stop_all()
            shutil.rmtree(t.home, ignore_errors=True)
