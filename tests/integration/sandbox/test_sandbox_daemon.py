"""The daemon's sandbox service through tsukuctl: status, prepare, a locked-down probe run."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Tsuku

pytestmark = pytest.mark.docker


def test_sandbox_status_prepare_and_check_through_the_daemon(daemon: Tsuku, image: str) -> None:
    st = json.loads(daemon.ctl("sandbox", "status", "--json", check=True).stdout)
    assert st["available"] is True and st["image"] == image and st["image_present"] is True

    prep = json.loads(daemon.ctl("sandbox", "prepare", "--json", check=True).stdout)
    assert prep == {"image": image, "imported": False}

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
    assert "sandbox.image_prepared" in types


def test_unreachable_runtime_is_a_clear_error(tsuku: Tsuku) -> None:
    tsuku.env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    tsuku.start()
    cp = tsuku.ctl("sandbox", "status")
    assert cp.returncode != 0
    assert "no container runtime" in cp.stdout and "hint:" in cp.stderr
    check = tsuku.ctl("sandbox", "check")
    assert check.returncode != 0 and "DOCKER_HOST" in check.stderr


def test_orphan_cleanup_spares_other_daemons_containers(tsuku: Tsuku, image: str) -> None:
    """One engine, several users or homes: a daemon removes only its own orphans."""
    import hashlib
    import os
    import subprocess

    ours = hashlib.sha256(f"{os.getuid()}:{tsuku.home.resolve()}".encode()).hexdigest()[:16]

    def create(owner: str) -> str:
        return subprocess.run(
            [
                "docker",
                "create",
                "--label",
                "dev.tsuku.role=validation",
                "--label",
                f"dev.tsuku.owner={owner}",
                image,
                "true",
            ],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()

    def exists(cid: str) -> bool:
        return subprocess.run(["docker", "inspect", cid], capture_output=True).returncode == 0

    mine, theirs = create(ours), create("someone-else-0000")
    try:
        tsuku.start()
        assert json.loads(tsuku.ctl("sandbox", "status", "--json", check=True).stdout)["available"]
        assert not exists(mine)
        assert exists(theirs)
        removed = [
            json.loads(x)["payload"]["count"]
            for x in tsuku.ctl(
                "events", "--type", "sandbox.orphans_removed", "--json"
            ).stdout.splitlines()
        ]
        assert removed == [1]
    finally:
        subprocess.run(["docker", "rm", "-f", mine, theirs], capture_output=True)
