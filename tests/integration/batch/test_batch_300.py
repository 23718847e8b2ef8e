"""Issue 24's first acceptance item at its size: 300 sources from the fakes (GitHub
releases, npm, PyPI, Homebrew bottles, one in twelve broken on purpose) through
``batch add`` and ``batch run --deterministic-only``: every source ends done or failed
with a reason as the world says it should, none is left running, export writes each
tool's recipe exactly once, and the ledger verifies. (Validation is skipped here: 300
containers are bench/batch.py's; test_batch_validated.py validates for real.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.fakes.batch_world import BatchWorld, batch_world
from tests.integration.batch.conftest import ctl_json, events

N = 300


@pytest.fixture
def world() -> Iterator[BatchWorld]:
    with batch_world(N) as w:
        yield w


@pytest.fixture
def maintainer(world: BatchWorld) -> Iterator[Tsuku]:
    path = short_home()
    t = Tsuku(path, {**base_env(path), **world.env()})
    try:
        yield t
    finally:
        RETIRING.retire(t)


def test_300_sources_each_end_as_they_should_and_export_once(
    maintainer: Tsuku, world: BatchWorld, tmp_path: Path
) -> None:
    t = maintainer
    t.start()
    added = ctl_json(t, "batch", "add", "-", input=world.queue_text())
    assert added["added"] == N
    run = ctl_json(t, "batch", "run", "--deterministic-only", "--skip-validation", timeout=600)
    status = ctl_json(t, "batch", "status", "--examples", "100")
    counts = status["counts"]
    assert counts["running"] == 0 and counts["queued"] == 0 and counts["backoff"] == 0, counts
    assert counts["done"] + counts["failed"] + counts["deferred"] == N, counts
    done = {
        e["payload"]["recipe"].split('name = "')[1].split('"')[0] for e in events(t, "batch.done")
    }
    assert done == world.expected("done"), sorted(done ^ world.expected("done"))[:10]
    assert len(events(t, "batch.done")) == len(done)  # one recipe per job
    failed = {ex["tool"]: g["category"] for g in status["failures"] for ex in g["examples"]}
    assert set(failed) == world.expected("failed"), json.dumps(status["failures"])[:2000]
    assert set(failed.values()) <= {"not_found", "no_build"}, failed
    assert run["stale_commits"] == 0 and run["waiting_on_breakers"] == {}
    assert not [b for b in t.call("status")["breakers"] if b["state"] != "closed"]

    out = tmp_path / "registry"
    first = ctl_json(t, "batch", "export", str(out), "--unvalidated")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.toml"))
    assert first["recipes"] == len(files) == len(done)
    assert files == sorted(f"recipes/{tool[0]}/{tool}.toml" for tool in done)
    again = ctl_json(t, "batch", "export", str(out), "--unvalidated")
    assert again["written"] == [] and again["unchanged"] == len(done)  # byte-stable
    assert t.ctl("events", "verify").returncode == 0
