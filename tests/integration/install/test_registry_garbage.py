"""A registry whose manifest is garbage is reported as such, naming the URL, and
``install`` does not fall through to (paid) discovery because of it."""

from __future__ import annotations

import json

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import events

_HTML = b"<!DOCTYPE html><html><body>Sign in to the hotel Wi-Fi</body></html>"


def test_garbage_manifest_is_a_typed_error_and_no_discovery(inst: Tsuku, world: FakeGitHub) -> None:
    good = json.dumps({"schema_version": 1, "recipes": [{"name": "x"}] * 50}).encode()
    answers = {
        "not JSON": (b"garbage", "not a tsuku recipe manifest"),
        "a web page": (_HTML, "it looks like a web page"),
        "the wrong shape": (b'{"schema_version": 1, "recipes": 5}', "not a tsuku recipe manifest"),
        "a list": (b"[]", "not a tsuku recipe manifest"),
        "truncated": (good[: len(good) // 2], "not a tsuku recipe manifest"),
        "a newer schema": (b'{"schema_version": 2, "recipes": []}', "schema_version 2"),
    }
    for what, (body, fragment) in answers.items():
        world.clear_overrides()
        world.override("recipes.json", body=body, headers={"content-type": "text/html"})
        cp = inst.ctl("install", "no-such-tool", "--yes")
        assert cp.returncode == 5, (what, cp.returncode, cp.stderr)
        assert world.manifest_url in cp.stderr and fragment in cp.stderr, (what, cp.stderr)
        assert "bug in tsuku" not in cp.stderr
    assert events(inst, "discovery.") == []
    assert world.requests_to("/registry/recipes/n/") == []  # no per-name guessing either
    world.clear_overrides()
    # The registry answers properly again: the unknown name is "no recipe" as before.
    cp = inst.ctl("install", "no-such-tool", "--no-discover")
    assert cp.returncode == 3 and "no recipe for no-such-tool" in cp.stderr


def test_discover_stops_at_a_garbage_manifest(inst: Tsuku, world: FakeGitHub) -> None:
    """`tsukuctl discover` too: a registry that answers garbage is reported, and nothing
    goes on to ecosystems or a (paid) web search as though the registry had said "no"."""
    world.override("recipes.json", body=b"garbage", headers={"content-type": "text/plain"})
    try:
        cp = inst.ctl("discover", "no-such-tool", "--yes")
    finally:
        world.clear_overrides()
    assert cp.returncode == 5, (cp.returncode, cp.stderr)
    assert world.manifest_url in cp.stderr and "bug in tsuku" not in cp.stderr
    # It started, and failed on the registry: no probe, no search, nothing paid.
    assert [e["type"] for e in events(inst, "discovery.")] == [
        "discovery.started",
        "discovery.failed",
    ]
