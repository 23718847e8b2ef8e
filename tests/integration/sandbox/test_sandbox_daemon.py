"""The daemon's sandbox service through tsukuctl: status, prepare, a locked-down probe run."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time

import pytest

from tests.conftest import Tsuku

pytestmark = pytest.mark.docker


def test_sandbox_status_prepare_and_check_through_the_daemon(
    daemon: Tsuku, image: str, busybox_image: str
) -> None:
    st = json.loads(daemon.ctl("sandbox", "status", "--json", check=True).stdout)
    assert st["available"] is True and st["image"] == image and st["image_present"] is True
    assert image == "tsuku/validate-debian:local"  # the default: a glibc userland
    # It says which runtime it chose and why (Podman's sockets are tried first).
    assert st["chosen_by"] in (
        "the first of Podman's, then Docker's sockets that answers",
        "the sandbox.docker_host setting (DOCKER_HOST)",
    )
    human = daemon.ctl("sandbox", "status", check=True).stdout
    assert f"at {st['endpoint']}\n" in human and f"chosen   by {st['chosen_by']}\n" in human

    prep = json.loads(daemon.ctl("sandbox", "prepare", "--json", check=True).stdout)
    assert prep == {"image": image, "imported": False}
    fallback = daemon.ctl("sandbox", "prepare", "--busybox", check=True).stdout
    assert fallback == f"{busybox_image}: already present\n"

    res = json.loads(daemon.ctl("sandbox", "check", "--json", check=True).stdout)
    assert res["ok"] is True
    assert res["uid"] == "65534"
    assert res["network_interfaces"] == ["lo"]
    assert res["rootfs_read_only"] is True
    human = daemon.ctl("sandbox", "check", check=True).stdout
    assert "uid 65534" in human and "read-only" in human

    types = [
        json.loads(x)["type"]
        for x in daemon.ctl("events", "--type", "sandbox.*", "--json").stdout.splitlines()
    ]
    assert types.count("sandbox.lock_acquired") == 2
    assert types.count("sandbox.image_prepared") == 2


def test_unreachable_runtime_is_a_clear_error(tsuku: Tsuku) -> None:
    tsuku.env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    tsuku.start()
    cp = tsuku.ctl("sandbox", "status")
    assert cp.returncode != 0
    assert "no container runtime" in cp.stdout and "hint:" in cp.stderr
    check = tsuku.ctl("sandbox", "check")
    assert check.returncode != 0 and "DOCKER_HOST" in check.stderr


def _owner(t: Tsuku) -> str:
    return hashlib.sha256(f"{os.getuid()}:{t.home.resolve()}".encode()).hexdigest()[:16]


def _run_labelled(image: str, owner: str) -> str:
    """A running container as a validation leaves it when its daemon is killed."""
    labels = ["--label", "dev.tsuku.role=validation", "--label", f"dev.tsuku.owner={owner}"]
    return subprocess.run(
        ["docker", "run", "-d", *labels, image, "sleep", "600"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def _exists(cid: str) -> bool:
    return subprocess.run(["docker", "inspect", cid], capture_output=True).returncode == 0


def _gone_within(cid: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _exists(cid):
            return True
        time.sleep(0.1)
    return False


def _loaded_aiohttp(pid: int) -> bool:
    """Whether tsukud has imported aiohttp (aiodocker's transport): its C extensions
    show in the process's memory map."""
    with open(f"/proc/{pid}/maps") as f:
        return "/aiohttp/" in f.read()


def test_orphans_are_removed_at_start_without_a_request(tsuku: Tsuku, image: str) -> None:
    """One engine, several users or homes: a daemon removes only its own orphans, and
    does so at start, not at its first validation."""
    mine, theirs = _run_labelled(image, _owner(tsuku)), _run_labelled(image, "someone-else-0000")
    try:
        tsuku.start()
        assert _gone_within(mine, 10), "this daemon's orphan survived its start"
        assert _exists(theirs)
        removed = [
            json.loads(x)["payload"]["count"]
            for x in tsuku.ctl(
                "events", "--type", "sandbox.orphans_removed", "--json"
            ).stdout.splitlines()
        ]
        assert removed == [1]
    finally:
        subprocess.run(["docker", "rm", "-f", mine, theirs], capture_output=True)


def test_containers_are_removed_at_a_clean_stop(tsuku: Tsuku, image: str) -> None:
    proc = tsuku.start()
    assert json.loads(tsuku.ctl("sandbox", "status", "--json", check=True).stdout)["available"]
    # A container of this daemon's that outlived its request (as a kill -9 of a
    # validation's cleanup would leave it), and another owner's.
    mine, theirs = _run_labelled(image, _owner(tsuku)), _run_labelled(image, "someone-else-0000")
    try:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert not _exists(mine)
        assert _exists(theirs)
    finally:
        subprocess.run(["docker", "rm", "-f", mine, theirs], capture_output=True)


@pytest.mark.slow  # two daemon starts, each waited on 1.5 s for its check; siblings stay
def test_start_imports_no_container_client_unless_there_are_orphans(
    tsuku: Tsuku, image: str
) -> None:
    # A runtime that answers and holds nothing of ours: one plain request, no aiodocker.
    tsuku.start()
    pid = tsuku.daemon_pid()
    time.sleep(1.5)  # the background check has run by now (it gives up after 1 s)
    assert not _loaded_aiohttp(pid)
    tsuku.stop_all()
    # No runtime at all (a socket path nobody serves): nothing either.
    tsuku.env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    tsuku.procs.clear()
    tsuku.start()
    pid = tsuku.daemon_pid()
    time.sleep(1.5)
    assert not _loaded_aiohttp(pid)
    assert tsuku.ctl("status").returncode == 0
