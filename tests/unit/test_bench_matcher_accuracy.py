"""bench/matcher_accuracy.py scores what a user gets: the recipe ``create
--deterministic-only`` writes, read back from its text, a refusal counting as a miss on
every platform; tsuku's reading of the same text is scored beside it; without dotbins
the peer's goal is NOT MEASURED with the command that installs it."""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType

import pytest

from tests.conftest import REPO
from tsukud.recipe import STANDARD_PLATFORMS
from tsukud.recipe.release import Release

PLATFORMS = {p.key: p for p in STANDARD_PLATFORMS}


def _load() -> ModuleType:
    bench = str(REPO / "bench")
    if bench not in sys.path:  # the benchmark imports its sibling _common, as a script does
        sys.path.append(bench)
    spec = importlib.util.spec_from_file_location(
        "bench_matcher_accuracy", REPO / "bench" / "matcher_accuracy.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load()


def _case(name: str, releases: list[Release], truth: dict[str, dict[str, str]]) -> object:
    # The benchmark remembers each case's recipe by id: one id per made-up case.
    return bench.Case(f"made-up:{name}", "acme/orbit", "orbit", releases, truth)


def _named(version: str, template: str) -> Release:
    """One build per platform, in :data:`PLATFORMS`' order."""
    return Release(
        tag=f"v{version}",
        assets=tuple(template.format(v=version, os=p.os, arch=p.arch) for p in PLATFORMS.values()),
    )


def test_a_refusal_is_a_miss_on_every_platform_not_a_guess() -> None:
    # A release beside a name with no platform in it: the matcher doubts, so
    # --deterministic-only writes nothing, whatever its best candidate would install.
    releases = [
        Release(tag=f"v1.{i}.0", assets=(f"orbit_1.{i}.0_linux_amd64.tar.gz", f"extra-1.{i}.0.zip"))
        for i in (3, 2, 1)
    ]
    truth = {"linux/amd64": {r.tag: r.assets[0] for r in releases}}
    case = _case("refused", releases, truth)
    assert bench.written(case).refused.startswith("not confident")
    pick = bench.ours(case)
    assert [pick(PLATFORMS["linux/amd64"], r) for r in releases] == [None, None, None]
    score = bench.score([case], bench.ours)
    assert (score.hits, score.total, score.newest_hits, score.newest_total) == (0, 3, 0, 1)
    assert bench.why_missed(case) == "refused: not confident"


def test_an_older_naming_is_right_as_we_read_it_and_wrong_as_tsuku_reads_it() -> None:
    new = "orbit_{v}_{os}_{arch}.tar.gz"
    old = "orbit-{os}-{arch}-{v}.tar.gz"
    releases = [_named("2.1.0", new), _named("2.0.0", new), _named("1.9.0", old)]
    truth = {key: {r.tag: r.assets[n] for r in releases} for n, key in enumerate(PLATFORMS)}
    case = _case("renamed", releases, truth)
    assert bench.written(case).recipe is not None
    ours, tsuku = bench.score([case], bench.ours), bench.score([case], bench.as_tsuku)
    assert (ours.hits, ours.total) == (12, 12)
    # tsuku reads [[steps]] alone: the newest naming, at 1.9.0 an asset that is not there.
    assert (tsuku.hits, tsuku.newest_hits, tsuku.newest_total) == (8, 4, 4)
    assert all("v1.9.0" in miss for miss in tsuku.misses)


def test_without_dotbins_the_peer_goal_is_not_measured_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "dotbins", None)
    monkeypatch.setitem(sys.modules, "dotbins.config", None)
    peer, why = bench.dotbins_picker()
    assert peer is None and "pip install -e '.[bench]'" in why
    releases = [_named(v, "orbit_{v}_{os}_{arch}.tar.gz") for v in ("1.2.0", "1.1.0", "1.0.0")]
    one = [_case("no-peer", releases, {"linux/amd64": {r.tag: r.assets[0] for r in releases}})]
    for tier in ("aqua_cases", "real_cases", "tsuku_cases"):
        monkeypatch.setattr(bench, tier, lambda one=one: iter(one))
    assert bench.main([]) == 0
    printed = capsys.readouterr().out
    assert "matcher_accuracy.all.goal: NOT MEASURED" in printed
    assert "pip install -e '.[bench]'" in printed
    assert "matcher_accuracy.newest.goal: met" in printed
