"""The caller's environment reaches a running daemon, for that request only.

The daemon is started without a token; the user then exports one in their shell (as the
rate-limit hint says) and runs tsukuctl: GitHub must see that token on that request,
and a request from a shell without it must stay anonymous.
"""

from __future__ import annotations

import secrets

import pytest

from tests.conftest import Tsuku
from tests.fakes.proxy import ForwardingProxy
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


def test_a_proxy_exported_after_the_daemon_started_carries_that_request(
    world: FakeGitHub, inst: Tsuku
) -> None:
    """``HTTP_PROXY=… tsukuctl install`` through a daemon started without it: every
    request of that install passes the proxy (the fakes speak plain http, so the http
    variable is the one that applies; the https one is the same path, tests/unit/net)."""
    assert not any(k.lower().endswith("_proxy") for k in inst.env)
    with ForwardingProxy() as proxy:
        before = len(world.requests_to("/repos/", role="api"))
        cp = inst.ctl("install", "kind", shell_env={"HTTP_PROXY": proxy.url})
        assert cp.returncode == 0, cp.stderr
        api = world.requests_to("/repos/", role="api")[before:]
        assets = world.requests_to("kind", role="assets")
        assert api and assets
        through = proxy.urls()
        assert all(any(u.endswith(r.path) for u in through) for r in [*api, *assets])
        assert all(u.startswith("http://127.0.0.1:") for u in through)

        cp = inst.ctl("status", check=True, shell_env={"http_proxy": proxy.url})
        line = next(x for x in cp.stdout.splitlines() if x.split()[:1] == ["net.http_proxy"])
        assert "($http_proxy)" in line and proxy.url in line

        # The next shell without it goes direct; NO_PROXY sends a listed host direct.
        seen = len(proxy.requests)
        cp = inst.ctl("install", "age@1.1.1")
        assert cp.returncode == 0, cp.stderr
        cp = inst.ctl(
            "install",
            "atlantis",
            shell_env={"HTTP_PROXY": proxy.url, "NO_PROXY": "localhost,127.0.0.1"},
        )
        assert cp.returncode == 0, cp.stderr
        assert len(proxy.requests) == seen


# Among the slowest tests (issue 26): the unreachable proxy is retried with the product's
# own backoff before the install fails (real time; the retry policy is the product's).
@pytest.mark.slow  # waits out proxy connection failures in real time
def test_a_proxy_that_cannot_be_reached_or_used_is_named(inst: Tsuku) -> None:
    from tests.conftest import CLOSED_PORT

    cp = inst.ctl("install", "kind", shell_env={"HTTP_PROXY": CLOSED_PORT})
    assert cp.returncode != 0
    assert f"through the proxy {CLOSED_PORT}" in cp.stderr, cp.stderr
    cp = inst.ctl("install", "kind", shell_env={"HTTPS_PROXY": "socks5://127.0.0.1:1080"})
    assert cp.returncode != 0
    assert "HTTPS_PROXY: 'socks5://127.0.0.1:1080' is not a proxy tsuku can use" in cp.stderr
