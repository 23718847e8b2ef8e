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
