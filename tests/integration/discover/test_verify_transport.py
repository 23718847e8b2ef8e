"""Discovery's GitHub verification step when the transport fails: GitHub unreachable,
an answer that never comes, a 200 whose body is garbage.

A candidate that could not be checked is never approved: it stays "unverified" with a
loud warning saying why, and the run ends in a retryable ``DiscoveryUnverified``. The
chain runs in a real in-process daemon against the fake world; the timeout is exercised
on ``fetch_meta`` with a real client whose timeouts are short.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CLOSED_PORT
from tests.integration.discover.helpers import World, claude_finds, events, in_daemon
from tests.integration.discover.test_discover_chain import run
from tsukud.discover.errors import DiscoveryNotFound, DiscoveryUnverified
from tsukud.discover.verify import fetch_meta
from tsukud.github.client import GitHub
from tsukud.net.http import Http, HttpError, Settings
from tsukud.net.retry import RetryPolicy


def _verified(d: Any) -> dict[str, Any]:
    (payload,) = [p for _t, p, _s in events(d, "discovery.verified")]
    return payload


async def test_github_unreachable_leaves_the_candidate_unverified(world: World, home: Path) -> None:
    claude_finds(world.claude)
    env = world.env(home, "claude")
    env["TSUKU_GITHUB_API_URL"] = CLOSED_PORT
    async with in_daemon(env) as d:
        with pytest.raises(DiscoveryUnverified) as exc:
            await run(d, yes=True)
        assert exc.value.retryable
        assert "never approved automatically" in exc.value.hint
        (warning,) = [w for w in _verified(d)["warnings"] if "SKIPPED" in w]
        assert "GitHub API verification was SKIPPED" in warning and "cannot connect" in warning
    assert world.github.requests_to("/repos/", role="api") == []  # nothing got through


async def test_github_garbage_answer_rejects_the_candidate_and_says_why(
    world: World, home: Path
) -> None:
    """A 200 that is not JSON is not a transient failure the way a timeout is: the
    candidate is rejected (never approved), and the error quotes what GitHub sent."""
    world.github.clear_overrides()  # the world's own answer for the repository goes first
    world.github.override(
        r"^/repos/stripe/stripe-cli$",
        body=b"<html>\x00 upstream proxy error {{{",
        headers={"content-type": "application/json"},
    )
    claude_finds(world.claude)
    async with in_daemon(world.env(home, "claude")) as d:
        with pytest.raises(DiscoveryNotFound) as exc:
            await run(d, yes=True)
        verified = _verified(d)
    assert verified["source"] == "stripe/stripe-cli"
    assert exc.value.message == (
        "web search suggested sources for stripe-cli, but none passed verification "
        "(github:stripe/stripe-cli: GitHub verification failed: repository "
        "stripe/stripe-cli: unexpected response from GitHub (JSON is malformed: invalid "
        "character (byte 0)))"
    )


async def test_github_answer_that_never_comes_times_out(world: World) -> None:
    world.github.clear_overrides()
    world.github.override(r"^/repos/stripe/stripe-cli$", json_body={}, delay=5)
    fast = Settings(
        connect_timeout=0.5,
        read_timeout=0.5,
        total_timeout=1.0,
        retry=RetryPolicy(max_tries=1),  # the timeout itself is under test
    )
    http = Http(settings=fast, allowed_hosts=lambda: ["127.0.0.1"])
    try:
        github = GitHub(http, world.github.api_url)
        with pytest.raises(HttpError) as exc:
            await fetch_meta(github, "stripe/stripe-cli")
    finally:
        await http.aclose()
    assert "timed out" in exc.value.message
    assert exc.value.retryable  # so verification reports it as skipped, not as a rejection
