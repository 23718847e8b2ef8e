"""kill -9 the daemon in the middle of ``tsukuctl batch run``: the next daemon returns the
jobs the dead one held to the queue (``batch.requeued``, ``owner gone``), ``batch run``
resumes, every source ends once, no recipe is recorded twice, no reservation is left
open and the ledger verifies."""

from __future__ import annotations

import collections
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.integration.batch.conftest import GITHUB_TOOLS, ctl_json, events, sources_text
from tests.waiting import wait_until
from tsukud.errors import ExitCode

pytestmark = [pytest.mark.slow, pytest.mark.ctl_process]


@pytest.fixture
def slow_npm(eco: FakeEcosystems) -> Iterator[None]:
    """The npm registry answers after 3 s: jobs are still running when the kill comes."""
    eco.delay["npm"] = 3.0
    try:
        yield
    finally:
        eco.delay.pop("npm", None)


#: npm jobs first (priority), so a run has slow jobs running while the test acts on it.
SLOW = "".join(
    f'{{"tool": "{tool}", "source": "npm:{pkg}", "priority": 5}}\n'
    for tool, pkg in (("greet", "greet"), ("shout", "@fake/shout"))
)


def start_run(t: Tsuku, *flags: str) -> subprocess.Popen[str]:
    """A real ``tsukuctl batch run`` process, two workers (deterministic unless
    ``flags`` say otherwise), without validation."""
    mode = flags or ("--deterministic-only",)
    ctl = [sys.executable, "-m", "tsukuctl"]
    return subprocess.Popen(
        [*ctl, "batch", "run", *mode, "--skip-validation", "--jobs", "2"],
        env=t.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_kill_9_mid_run_then_run_again_resumes_and_nothing_is_done_twice(
    home: Tsuku, slow_npm: None, tmp_path: Path
) -> None:
    t = home
    daemon = t.start()
    cp = t.ctl("batch", "add", "-", input=SLOW + sources_text())
    assert cp.returncode == ExitCode.PARTIAL_FAILURE, cp.stderr
    run = start_run(t)
    try:

        def running_on_disk() -> bool:
            """A job runs and its lease is durable (an append not yet on disk dies
            with the daemon: that job was simply never leased)."""
            held = {(r["job"], r["fence"]) for r in ctl_json(t, "batch", "status")["running"]}
            durable = {
                (e["payload"]["job"], e["payload"]["fence"]) for e in events(t, "batch.leased")
            }
            return bool(held & durable)

        wait_until(running_on_disk, "a batch job running, its lease on disk")
        daemon.kill()  # SIGKILL: no requeue, no run_stopped, nothing orderly
        daemon.wait()
        _out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode != 0, err

    t.start()

    def owner_gone() -> list[dict[str, object]]:
        return [e for e in events(t, "batch.requeued") if e["payload"]["reason"] == "owner gone"]

    # Returned at start-up, right after daemon.started.
    wait_until(owner_gone, "the dead daemon's running jobs returned to the queue")
    requeued = owner_gone()
    status = ctl_json(t, "batch", "status")
    assert status["counts"]["running"] == 0
    assert status["remaining"] >= len(requeued)

    cp = t.ctl(
        "batch", "run", "--deterministic-only", "--skip-validation", "--jobs", "4", timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    status = ctl_json(t, "batch", "status")
    counts = status["counts"]
    assert counts["running"] == 0 and counts["queued"] == 0
    assert counts["done"] + counts["failed"] + counts["backoff"] == 21 == status["total"]

    # Exactly once: one batch.done per job, whatever ran before the kill.
    per_job = collections.Counter(e["payload"]["job"] for e in events(t, "batch.done"))
    assert per_job and max(per_job.values()) == 1
    expected = sorted([s.split()[0] for s in GITHUB_TOOLS] + ["greet", "hello", "shout"])
    assert counts["done"] == len(expected)
    out = tmp_path / "registry"
    export = ctl_json(t, "batch", "export", str(out), "--unvalidated")
    assert (
        sorted(p.stem for p in out.rglob("*.toml"))
        == expected
        == sorted(Path(w).stem for w in export["written"])
    )
    # Every lease the dead daemon held was given back before it was leased again.
    leases = collections.Counter(e["payload"]["job"] for e in events(t, "batch.leased"))
    for e in requeued:
        assert leases[e["payload"]["job"]] >= 2
    # No reservation left open; the ledger verifies.
    budget = t.call("status")["budget"]
    assert budget["reserved_usd"] == 0
    cp = t.ctl("events", "verify")
    assert cp.returncode == 0, cp.stderr
    stopped = [e["payload"]["reason"] for e in events(t, "batch.run_stopped")]
    assert stopped == ["finished"]  # the killed run never recorded its end
    assert json.loads(t.ctl("batch", "status", "--json").stdout)["stale_commits"] == 0


def test_ctrl_c_stops_the_run_and_gives_the_running_jobs_back(home: Tsuku, slow_npm: None) -> None:
    t = home
    t.start()
    cp = t.ctl("batch", "add", "-", input=SLOW + "stern github:stern/stern\n")
    assert cp.returncode == 0, cp.stderr
    run = start_run(t)
    try:
        wait_until(
            lambda: ctl_json(t, "batch", "status")["counts"]["running"] == 2,
            "both npm jobs running",
        )
        run.send_signal(signal.SIGINT)
        _out, err = run.communicate(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == ExitCode.CANCELLED, err
    status = ctl_json(t, "batch", "status")
    assert status["active_run"] is None
    assert status["counts"]["running"] == 0
    assert status["counts"]["queued"] == 3  # the two given back, and stern never leased
    given_back = [e["payload"] for e in events(t, "batch.requeued")]
    assert sorted(p["reason"] for p in given_back) == ["run stopped", "run stopped"]
    (stopped,) = [e["payload"] for e in events(t, "batch.run_stopped")]
    assert stopped["reason"] == "cancelled" and stopped["done"] == 0
    # The queue is consistent: the next run finishes every job.
    res = ctl_json(t, "batch", "run", "--deterministic-only", "--skip-validation")
    assert res["done"] == 3 and res["remaining"] == 0
