"""Container validations run side by side up to ``sandbox.max_concurrent``, and one at
a time when it is 1: two creates through a real daemon, validated in the real container
runtime, their slot holds read from the ledger. Also: the derived default is what
``config get`` and ``status`` show, with where it came from."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz
from tsukud.config import derive_max_concurrent, host_cpus, host_memory_bytes


def slow_repo(name: str) -> FakeRepo:
    """A tool whose ``--version`` takes a second: a validation that holds its slot."""
    script = f'#!/bin/sh\nsleep 1\necho "{name} 1.0.0"\n'.encode()
    asset = FakeAsset(f"{name}_1.0.0_linux_amd64.tar.gz", tar_gz({name: (script, 0o755)}))
    return FakeRepo(f"acme/{name}", [FakeRelease("v1.0.0", [asset])])


@pytest.fixture(scope="module")
def world() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        for name in ("slowa", "slowb"):
            fake.add_repo(slow_repo(name))
        yield fake


def holds(t: Tsuku) -> dict[str, tuple[str, str]]:
    """Each create session's slot hold: (acquired, released) timestamps."""
    rows = [
        json.loads(x)
        for x in t.ctl(
            "events", "--json", "--limit", "0", "--type", "sandbox.*", check=True
        ).stdout.splitlines()
    ]
    out: dict[str, tuple[str, str]] = {}
    for session in {r["session"] for r in rows}:
        (acquired,) = [
            r["ts"] for r in rows if r["session"] == session and r["type"].endswith("acquired")
        ]
        (released,) = [
            r["ts"] for r in rows if r["session"] == session and r["type"].endswith("released")
        ]
        out[session] = (acquired, released)
    return out


def create_both(t: Tsuku) -> dict[str, tuple[str, str]]:
    results: dict[str, Any] = {}

    def create(name: str) -> None:
        results[name] = t.ctl(
            "create",
            name,
            "--from",
            f"github:acme/{name}",
            "--deterministic-only",
            "--yes",
            spawn=True,
            timeout=120,
        )

    threads = [threading.Thread(target=create, args=(n,)) for n in ("slowa", "slowb")]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for name, cp in results.items():
        assert cp.returncode == 0, (name, cp.stderr)
        assert "Validation: passed on linux/amd64" in cp.stdout
    found = holds(t)
    assert len(found) == 2, found
    return found


def overlap(a: tuple[str, str], b: tuple[str, str]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


@pytest.mark.slow
@pytest.mark.parametrize("limit", [2, 1])
def test_validations_overlap_up_to_the_limit(
    tsuku: Tsuku, world: FakeGitHub, docker_endpoint: str, image: str, limit: int
) -> None:
    tsuku.env.update(world.env())
    tsuku.env.update({"TSUKU_SANDBOX_MAX_CONCURRENT": str(limit), "TSUKU_SANDBOX_IMAGE": image})
    tsuku.start()
    st = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
    assert st["sandbox"]["slots"] == limit
    a, b = create_both(tsuku).values()
    assert overlap(a, b) is (limit == 2), (a, b)


def test_the_derived_default_is_shown_with_its_source(tsuku: Tsuku) -> None:
    value, source = derive_max_concurrent(host_cpus(), host_memory_bytes())
    cp = tsuku.ctl("config", "get", "sandbox.max_concurrent", check=True)
    assert cp.stdout.strip() == str(value)
    assert source in cp.stderr
    shown = json.loads(
        tsuku.ctl("config", "get", "sandbox.max_concurrent", "--json", check=True).stdout
    )
    assert (shown["value"], shown["source"]) == (value, source)
    tsuku.start()
    st = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
    assert st["sandbox"]["slots"] == value
    (row,) = [s for s in st["settings"] if s["key"] == "sandbox.max_concurrent"]
    assert (row["value"], row["source"]) == (value, source)
    human = tsuku.ctl("status", check=True).stdout
    (line,) = [x for x in human.splitlines() if "sandbox.max_concurrent" in x]
    assert line.split() == ["sandbox.max_concurrent", str(value), "from", *source.split()]
