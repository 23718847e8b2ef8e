"""Discovery on the injected clock: the registry cache's TTL and the chain's deadline
and timings follow a MockClock, so a test jumps an hour in microseconds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from tsukud.clock import TrioClock
from tsukud.discover.chain import Deps, Request, discover
from tsukud.discover.ecosystem import ProbeReport
from tsukud.discover.errors import DiscoveryTimeout
from tsukud.discover.model import RepoMeta
from tsukud.discover.registry_lookup import DiscoveryRegistry

ENTRY = json.dumps({"builder": "github", "source": "sharkdp/bat"}).encode()


class Registry:
    """The remote side of the discovery registry: answers and counts the requests."""

    def __init__(self) -> None:
        self.answers: dict[str, tuple[int, bytes]] = {}
        self.asked: list[str] = []

    async def __call__(self, url: str) -> tuple[int, bytes]:
        self.asked.append(url)
        return self.answers.get(url.rsplit("/", 1)[-1], (404, b""))


async def test_entries_and_misses_are_refetched_exactly_when_the_ttl_passes(
    tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    remote = Registry()
    remote.answers["bat.json"] = (200, ENTRY)
    reg = DiscoveryRegistry(
        tmp_path, remote, lambda: "https://registry.example", ttl=3600, clock=TrioClock()
    )
    assert (await reg.lookup("bat")).origin == "network"
    assert (await reg.lookup("nope")).origin == "network"  # a 404 is cached too
    mock_clock.jump(3599)
    hit, miss = await reg.lookup("bat"), await reg.lookup("nope")
    assert (hit.origin, miss.origin) == ("cache", "missing_cache")
    assert hit.entry is not None and hit.entry.source == "sharkdp/bat"
    assert len(remote.asked) == 2
    mock_clock.jump(1)
    assert (await reg.lookup("bat")).origin == "network"
    assert (await reg.lookup("nope")).origin == "network"
    assert len(remote.asked) == 4


async def _no_meta(repo: str) -> RepoMeta:
    raise AssertionError(f"not reached: {repo}")


async def test_the_deadline_and_the_timings_follow_the_clock(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events: list[tuple[str, dict[str, Any]]] = []

    async def emit(type_: str, payload: dict[str, Any]) -> None:
        events.append((type_, payload))

    async def hanging_probe(tool: str) -> ProbeReport:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    deps = Deps(
        probe=hanging_probe, github_meta=_no_meta, emit=emit, timeout_s=15, clock=TrioClock()
    )
    start = trio.current_time()
    with pytest.raises(DiscoveryTimeout) as err:
        await discover(Request(tool="sometool", session="s1", llm=False), deps)
    assert trio.current_time() - start == 15
    assert err.value.data["stage"] == "ecosystem"
    failed = [p for t, p in events if t == "discovery.failed"]
    assert failed and failed[0]["ms"] == 15_000 and failed[0]["error_code"] == "discovery_timeout"
