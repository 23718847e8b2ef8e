"""A batch of model jobs killed with calls in flight: the next start returns the jobs to
the queue and settles each job's reservation by the crash settlement, in the job's own
ledger session (answered calls at what they cost, the call in flight at its worst case),
and ends each job's create run with its ``abandoned`` terminal event. Real tsukud and
tsukuctl processes, the greedy fake Claude (real SDK) holding the second call open."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from decimal import Decimal

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.batch.test_batch_kill import start_run
from tests.integration.create.greedy import Greedy, greedy_world, ledger
from tests.integration.create.test_create_kill import tsuku_for, wait_settled
from tests.waiting import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.ctl_process]


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    yield from greedy_world()


def test_kill_9_with_job_calls_in_flight_settles_each_jobs_session(world: FakeGitHub) -> None:
    greedy = Greedy(hold_from_call=2)  # one answered call per job, the second in flight
    with FakeAnthropic(fallback=greedy) as claude:
        t = tsuku_for(world, claude)
        try:
            daemon = t.start()
            cp = t.ctl(
                "batch", "add", "-", input="stern0 github:stern/stern\nstern1 github:stern/stern\n"
            )
            assert cp.returncode == 0, cp.stderr
            run = start_run(t, "--llm", "--yes")
            greedy.wait_held(2)
            os.kill(daemon.pid, signal.SIGKILL)
            daemon.wait()
            run.communicate(timeout=60)
            greedy.release()  # the answers reach nobody

            t.start()
            budget = wait_settled(t)
            assert budget["reserved_usd"] == 0, budget
            wait_until(
                lambda: len(ledger(t, "batch.requeued")) == 2, "both jobs returned to the queue"
            )
            events = ledger(t)
            leased = {e["session"] for e in events if e["type"] == "batch.leased"}
            assert len(leased) == 2 and all(s.startswith("batch-") for s in leased)
            requeued = {e["session"] for e in events if e["type"] == "batch.requeued"}
            assert requeued == leased
            # Each job's reservation was made, and settled, in the job's own session.
            reserved = {e["session"] for e in events if e["type"] == "budget.reserved"}
            settled = {e["session"]: e["payload"] for e in events if e["type"] == "budget.settled"}
            assert reserved == set(settled) == leased
            cuts = [e for e in events if e["type"] == "llm.cut_off"]
            assert {e["session"] for e in cuts} == leased
            assert all(e["payload"]["reason"] == "abandoned" for e in cuts)
            ended = {e["session"]: e["payload"] for e in events if e["type"] == "generation.failed"}
            assert set(ended) == leased
            assert all(p["error_code"] == "abandoned" for p in ended.values())
            for s, p in settled.items():
                charged = sum(
                    (
                        Decimal(str(e["payload"]["cost_usd"]))
                        for e in events
                        if e["session"] == s and e["type"] in ("llm.turn", "llm.cut_off")
                    ),
                    Decimal(0),
                )
                assert Decimal(str(p["actual_usd"])) == charged.quantize(Decimal("0.000001"))
            assert sum(greedy.billed, Decimal(0)) > 0 and len(greedy.billed) == 2
        finally:
            greedy.release()
            t.stop_all()
            shutil.rmtree(t.home, ignore_errors=True)
