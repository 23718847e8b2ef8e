"""The caller's environment reaches a running daemon, for that request only.

The daemon is started without a token; the user then exports one in their shell (as the
rate-limit hint says) and runs tsukuctl: GitHub must see that token on that request,
and a request from a shell without it must stay anonymous.
"""

from __future__ import annotations

import secrets

from tests.conftest import Tsuku
from tsukud.testing.github import FakeGitHub


def test_github_token_exported_after_the_daemon_started_is_sent(
    world: FakeGitHub, inst: Tsuku
) -> None:
    assert "GITHUB_TOKEN" not in inst.env and "GH_TOKEN" not in inst.env
    token = world.add_token("ghp_callerEnv" + secrets.token_hex(12))
    before = len(world.requests_to("/repos/", role="api"))

    cp = inst.ctl("install", "kind", shell_env={"GITHUB_TOKEN": token})
    assert cp.returncode == 0, cp.stderr

    api = world.requests_to("/repos/", role="api")[before:]
    assert api, "the install asked GitHub's API nothing"
    assert all(r.headers.get("authorization") == f"Bearer {token}" for r in api)
    assert all("authorization" not in r.headers for r in world.requests_to("kind", role="assets"))

    # The token was this request's only: the next shell without it is anonymous again.
    before = len(world.requests_to("/repos/", role="api"))
    cp = inst.ctl("install", "age@1.1.1")
    assert cp.returncode == 0, cp.stderr
    api = world.requests_to("/repos/", role="api")[before:]
    assert api and all("authorization" not in r.headers for r in api)


def test_gh_token_counts_as_well_and_status_says_where_it_came_from(
    world: FakeGitHub, inst: Tsuku
) -> None:
    token = world.add_token("ghp_callerGh" + secrets.token_hex(12))
    cp = inst.ctl("status", shell_env={"GH_TOKEN": token})
    assert cp.returncode == 0, cp.stderr
    line = next(x for x in cp.stdout.splitlines() if "secrets.github_token" in x)
    assert line.split()[1:] == ["set", "from", "your", "environment", "($GH_TOKEN)"]
    assert token not in cp.stdout + cp.stderr
    # Without it: not set, and no source to name.
    cp = inst.ctl("status", check=True)
    line = next(x for x in cp.stdout.splitlines() if "secrets.github_token" in x)
    assert line.split()[1:] == ["not", "set"]


def test_the_rate_limit_hint_works_on_a_running_daemon(world: FakeGitHub, inst: Tsuku) -> None:
    """The issue's story: the anonymous quota runs out, the hint says to export a token,
    the user does, and the very next command gets through (the anonymous block does not
    hold back the token's requests)."""
    world.rate_limit_remaining = 0  # every identity known so far: anonymous
    cp = inst.ctl("install", "atlantis")
    assert cp.returncode == 5 and "GITHUB_TOKEN" in cp.stderr, cp.stderr
    token = world.add_token("ghp_exportedLater" + secrets.token_hex(12))
    assert world.quota_used(token) == 0
    cp = inst.ctl("install", "atlantis", shell_env={"GITHUB_TOKEN": token})
    assert cp.returncode == 0, cp.stderr
    assert world.quota_used(token) > 0
    # Without the token, the anonymous limit still holds (refused locally or by GitHub).
    cp = inst.ctl("install", "kind")
    assert cp.returncode == 5 and "rate limit" in cp.stderr, cp.stderr
