"""``DOCKER_HOST`` in the caller's shell picks the engine for that request only."""

from __future__ import annotations

import json

import pytest

from tests.conftest import Tsuku

pytestmark = pytest.mark.docker

NOWHERE = "unix:///nonexistent/docker.sock"


def sandbox_status(t: Tsuku, shell_env: dict[str, str]) -> dict:  # type: ignore[type-arg]
    cp = t.ctl("sandbox", "status", "--json", shell_env=shell_env)
    return json.loads(cp.stdout)  # type: ignore[no-any-return]


def test_the_callers_docker_host_is_used_for_its_request(
    tsuku: Tsuku, docker_endpoint: str
) -> None:
    tsuku.env["DOCKER_HOST"] = NOWHERE  # the daemon starts pointed at no engine
    tsuku.start()
    del tsuku.env["DOCKER_HOST"]
    assert sandbox_status(tsuku, {})["available"] is False

    st = sandbox_status(tsuku, {"DOCKER_HOST": docker_endpoint})
    assert st["available"] is True and st["endpoint"] == docker_endpoint

    st = sandbox_status(tsuku, {})  # the next shell without it: the daemon's again
    assert st["available"] is False and "nonexistent" in st["error"]
    status = tsuku.ctl("status", check=True).stdout
    assert "sandbox.docker_host" in status and "tsukud's environment ($DOCKER_HOST)" in status
