"""kill -9 in the middle of a download: the restarted daemon shows no partial install,
and running the install again succeeds and leaves no staging behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import events, installed, tree

pytestmark = pytest.mark.ctl_process  # kill -9 during a download: real processes


def wait_for(pred: object, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():  # type: ignore[operator]
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_kill_9_during_download(inst: Tsuku, world: FakeGitHub) -> None:
    inst.ctl("install", "age@1.1.1", check=True)
    world.stall_after = 64  # the CDN sends 64 bytes, then hangs
    pid = inst.daemon_pid()
    client = subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", "install", "fly"],
        env=inst.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: world.requests_to("/cdn/superfly/flyctl/"))
        wait_for(lambda: any(p.startswith("tools/.staging-fly-") for p in tree(inst.home)))
        time.sleep(0.2)  # bytes are flowing into the staging file
        os.kill(pid, signal.SIGKILL)
        client.wait(timeout=10)
    finally:
        if client.poll() is None:
            client.kill()
        client.communicate()
    assert client.returncode != 0
    world.stall_after = None

    # Only the staging directory is left: no tool directory, no link.
    assert [p for p in tree(inst.home) if "fly" in p and "staging" not in p] == []

    inst.procs.clear()  # the killed one
    inst.start()
    assert set(installed(inst)) == {"age"}
    assert "install.completed" not in [
        e["type"] for e in events(inst) if e["payload"].get("tool") == "fly"
    ]
    cp = inst.ctl("install", "fly")
    assert cp.returncode == 0, cp.stderr
    assert tree(inst.home) == [
        "tools/age-1.1.1",
        "tools/fly-2.5.0",
        "bin/age",
        "bin/age-keygen",
        "bin/fly",
    ]
    assert inst.ctl("verify", "fly").returncode == 0
    assert inst.ctl("verify", "age").returncode == 0
    # The ledger says how the killed install ended.
    fly = [
        (e["type"], e["payload"].get("stage"))
        for e in events(inst)
        if e["payload"].get("tool") == "fly"
    ]
    assert fly == [
        ("install.started", None),
        ("install.failed", "interrupted"),
        ("install.started", None),
        ("install.completed", None),
        ("install.verified", None),
    ]
