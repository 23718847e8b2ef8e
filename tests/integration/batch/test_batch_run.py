"""``tsukuctl batch`` against a real tsukud and the fakes: add ~20 mixed sources (some
broken on purpose), run them deterministically, and hold the invariants: every source
ends done, failed with a reason, or deferred; none is left running; export writes each
tool once, byte-stable; the ledger verifies; a second run redoes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.batch.conftest import GITHUB_TOOLS, ctl_json, events, sources_text
from tests.integration.create.helpers import CLAUDE_KEY
from tsukud.errors import ExitCode
from tsukud.testing.download_host import FakeDownloadHost
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.mark.slow
def test_a_deterministic_batch_ends_every_source_and_a_rerun_redoes_nothing(
    home: Tsuku, tmp_path: Path
) -> None:
    t = home
    t.start()
    listing = tmp_path / "sources.txt"
    listing.write_text(sources_text())
    cp = t.ctl("batch", "add", str(listing))
    assert cp.returncode == ExitCode.PARTIAL_FAILURE, cp.stderr  # one bad line
    assert "line 23: unknown source 'http://acme.example/tool'" in cp.stderr
    assert "queued 21 source(s)" in cp.stdout
    # The same list again queues nothing twice.
    again = ctl_json(t, "batch", "add", "-", input=sources_text(), rc=ExitCode.PARTIAL_FAILURE)
    assert again["added"] == 0 and len(again["already_queued"]) == 21

    cp = t.ctl(
        "batch", "run", "--deterministic-only", "--skip-validation", "--jobs", "4", timeout=300
    )
    assert cp.returncode == 0, cp.stderr
    assert "left;" in cp.stderr and "/min" in cp.stderr  # progress: counts and rate
    status = ctl_json(t, "batch", "status")
    counts = status["counts"]
    # None left running or queued; none in backoff either: every broken source here is
    # the source's fault (batch/outcome.py), final until `batch retry`, and no
    # registry's breaker counted it.
    assert counts["running"] == 0 and counts["queued"] == 0, json.dumps(status, indent=1)
    assert counts["backoff"] == 0, json.dumps(status, indent=1)
    failed = counts["failed"]
    assert counts["done"] + failed + counts["deferred"] == 21 == status["total"]
    done_events = events(t, "batch.done")
    done_tools = sorted(
        {e["payload"]["recipe"].split('name = "')[1].split('"')[0] for e in done_events}
    )
    # Every tool that can be generated was; every broken one failed with its reason.
    expected_done = sorted([s.split()[0] for s in GITHUB_TOOLS] + ["greet", "hello", "shout"])
    assert done_tools == expected_done, (done_tools, status["failures"])
    assert len(done_events) == len(expected_done) == counts["done"]
    full = ctl_json(t, "batch", "status", "--examples", "50")["failures"]
    assert sum(g["count"] for g in full) == failed == 5
    reasons = {ex["tool"]: (g["category"], ex["message"]) for g in full for ex in g["examples"]}
    assert set(reasons) == {"nosuch", "docs-only", "unreleased", "ghost", "nobrew"}
    assert all(category and message for category, message in reasons.values()), reasons
    assert {tool: category for tool, (category, _) in reasons.items()} == {
        "nosuch": "not_found",
        "docs-only": "no_build",
        "unreleased": "no_build",
        "ghost": "not_found",
        "nobrew": "not_found",
    }, reasons
    assert not [b for b in t.call("status")["breakers"] if b["state"] != "closed"]
    assert reasons["nobrew"][1] == "Homebrew has no formula named no-such-formula"
    # Each job ran in its own ledger session: per-job cost in events summary --by session.
    leased = events(t, "batch.leased")
    assert len(leased) == 21 and len({e["session"] for e in leased}) == 21
    created = events(t, "create.started")
    assert {e["session"] for e in created} <= {e["session"] for e in leased}
    assert not (t.home / "recipes").exists() or not any((t.home / "recipes").iterdir())

    out = tmp_path / "registry"
    export = ctl_json(t, "batch", "export", str(out), "--unvalidated")
    assert export["recipes"] == len(expected_done) and export["unchanged"] == 0
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.toml"))
    assert files == sorted(f"recipes/{tool[0]}/{tool}.toml" for tool in expected_done)
    before = {p: p.read_bytes() for p in out.rglob("*.toml")}
    # Without --unvalidated nothing made with --skip-validation is exported.
    assert ctl_json(t, "batch", "export", str(tmp_path / "v"))["recipes"] == 0

    cp = t.ctl("events", "verify")
    assert cp.returncode == 0, cp.stderr

    # A second run finds nothing to do: done jobs are not redone, final failures wait
    # for `batch retry`.
    second = ctl_json(t, "batch", "run", "--deterministic-only", "--skip-validation")
    assert (second["done"], second["failed"], second["deferred"]) == (0, 0, 0)
    assert len(events(t, "batch.leased")) == 21 and len(events(t, "create.started")) == 21
    again_export = ctl_json(t, "batch", "export", str(out), "--unvalidated")
    assert again_export["written"] == [] and again_export["unchanged"] == len(expected_done)
    assert {p: p.read_bytes() for p in out.rglob("*.toml")} == before

    # A restarted daemon folds the same queue from the ledger.
    t.stop_all()
    t.start()
    assert ctl_json(t, "batch", "status")["counts"] == counts
    retried = ctl_json(t, "batch", "retry", "--failed")
    assert retried["retried"] == 5  # final failures and the one in backoff
    third = ctl_json(t, "batch", "run", "--deterministic-only", "--skip-validation")
    assert (third["done"], third["failed"]) == (0, 5)
    assert ctl_json(t, "batch", "clear")["cleared"] == 21
    assert ctl_json(t, "batch", "status")["total"] == 0


def test_jobs_the_cap_cannot_hold_are_deferred_not_failed(
    home: Tsuku, anthropic: FakeAnthropic
) -> None:
    """``--llm --max-usd``: a model run's worst case must fit under the cap before it
    starts; one that cannot is deferred (``budget``), nothing is sent to the model, and
    ``batch retry --deferred`` queues it again."""
    t = home
    t.env.update(
        {
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "ANTHROPIC_BASE_URL": anthropic.url,
            "TSUKU_LLM_CONFIRM_THRESHOLD": "0.0001",  # every model run needs a yes
        }
    )
    t.start()
    ctl_json(t, "batch", "add", "-", input="stern github:stern/stern\nk9s github:derailed/k9s\n")
    res = ctl_json(t, "batch", "run", "--llm", "--max-usd", "0.001", "--skip-validation", "--yes")
    assert (res["done"], res["failed"], res["deferred"], res["spent_usd"]) == (0, 0, 2, 0.0)
    status = ctl_json(t, "batch", "status")
    assert status["deferred"] == [{"reason": "budget", "count": 2}]
    assert anthropic.requests == []
    deferred = [e["payload"] for e in events(t, "batch.deferred")]
    assert all("cap of $0.00" in (p["message"] or "") for p in deferred), deferred
    assert ctl_json(t, "batch", "retry", "--deferred")["retried"] == 2
    assert ctl_json(t, "batch", "status")["counts"]["queued"] == 2
    # Without --yes, a model run above the confirmation threshold cannot be asked
    # about during a batch: deferred too, nothing sent. (--yes above accepted it.)
    res = ctl_json(t, "batch", "run", "--llm", "--skip-validation")
    assert (res["failed"], res["deferred"]) == (0, 2), ctl_json(t, "batch", "status")
    assert ctl_json(t, "batch", "status")["deferred"] == [{"reason": "confirmation", "count": 2}]
    assert anthropic.requests == []


def test_a_repository_without_builds_fails_and_its_install_page_is_never_read(
    home: Tsuku, world: FakeGitHub, anthropic: FakeAnthropic
) -> None:
    """``create`` would read such a repository's homepage with a model; a recipe from a
    page may name hosts its repository does not, which a person must see first, and a
    batch job has no one to show them to. So the job fails (``no_build``), the
    page is not fetched and no model is asked, ``--llm --yes`` or not."""
    with FakeDownloadHost() as vendor:
        page = vendor.add("/foo/", b"<h1>foo</h1><p>curl the installer</p>", sha256_file=False)
        zip_only = FakeAsset("foo-1.4.2-windows-amd64.zip", b"PK\x05\x06" + b"\0" * 18)
        world.add_repo(
            FakeRepo("acme/pageonly", [FakeRelease("v1.4.2", [zip_only])], homepage=page)
        )
        try:
            t = home
            t.env.update({"ANTHROPIC_API_KEY": CLAUDE_KEY, "ANTHROPIC_BASE_URL": anthropic.url})
            t.start()
            ctl_json(t, "batch", "add", "-", input="foo github:acme/pageonly\n")
            res = ctl_json(t, "batch", "run", "--llm", "--yes", timeout=120)
            assert (res["done"], res["failed"]) == (0, 1), res
            (group,) = ctl_json(t, "batch", "status")["failures"]
            assert group["category"] == "no_build", group
            assert vendor.fetched() == [] and anthropic.requests == []
        finally:
            world.repos.pop("acme/pageonly", None)


@pytest.mark.slow
def test_a_list_larger_than_a_frame_is_queued_whole(home: Tsuku, tmp_path: Path) -> None:
    """40,000 sources (1.3 MB, past the 1 MiB frame limit): sent in parts, queued
    whole, bad lines numbered in the file; the queue folds the same after a restart."""
    t = home
    t.start()
    listing = tmp_path / "big.txt"
    lines = [f"tool{i} npm:package-number-{i}" for i in range(40_000)]
    lines[31_999] = "broken"
    listing.write_text("\n".join(lines) + "\n")
    assert listing.stat().st_size > 1 << 20
    res = ctl_json(t, "batch", "add", str(listing), rc=ExitCode.PARTIAL_FAILURE, timeout=120)
    assert res["added"] == 39_999 and res["queued"] == 39_999
    assert [b["line"] for b in res["bad"]] == [32_000]
    t.stop_all()
    t.start()
    assert ctl_json(t, "batch", "status")["counts"]["queued"] == 39_999
