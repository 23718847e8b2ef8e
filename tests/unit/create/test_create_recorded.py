"""The matcher on real recorded GitHub release lists (the shared data, tests/shared.py).

``labels`` in each file is one peer's pick (jpillora/installer) per os/arch. For the
four platforms tsuku targets we assert our pick, and where it differs from the label
the reason is written next to it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.create.releases import RELEASES, require_shared
from tsukud.create.assets import release_from_api
from tsukud.create.matcher import candidate_to_recipe, match_releases
from tsukud.create.static_checks import check_recipe
from tsukud.recipe import STANDARD_PLATFORMS, ResolvedVersion, render_recipe
from tsukud.recipe.release import Release
from tsukud.validation.findings import errors

MAC_INTEL = STANDARD_PLATFORMS[2]

TARGETS = [p.key for p in STANDARD_PLATFORMS]


def _load(name: str) -> tuple[dict[str, Any], list[Release]]:
    require_shared()
    data = json.loads((RELEASES / name).read_text())
    return data, [release_from_api(r) for r in data["releases"]]


def _picks(releases: list[Release], repo: str) -> tuple[Any, dict[str, str]]:
    result = match_releases(releases, repo=repo)
    assert result.best is not None
    return result, {c.platform: c.asset for c in result.best.choices}


def _replays_cleanly(result: Any, releases: list[Release], repo: str) -> list[Any]:
    recipe = candidate_to_recipe(result.best, repo=repo, name=repo.split("/")[1], releases=releases)
    return errors(check_recipe(recipe, releases, expected=result.best.expected))


def test_buf_bare_binaries_like_the_label() -> None:
    data, releases = _load("bufbuild__buf.json")
    result, picks = _picks(releases, data["repo"])
    # Same as the label on all four: the bare executable beats the .tar.gz of the same
    # build (no guessing the path inside), and buf-* beats protoc-gen-buf-* (tool name).
    assert picks == {k: data["labels"][k] for k in TARGETS}
    assert result.confident
    # Linux says aarch64, macOS says arm64: one mapping cannot do both, so darwin/arm64
    # gets an override, and the recipe still replays over the recorded releases.
    assert [o.os for o in result.best.answer.overrides] == ["darwin"]
    assert _replays_cleanly(result, releases, data["repo"]) == []
    recipe = candidate_to_recipe(result.best, repo=data["repo"], name="buf")
    for release in releases[:10]:
        for target in STANDARD_PLATFORMS:
            (step,) = render_recipe(
                recipe,
                ResolvedVersion(release.version, release.tag),
                target,
                assets=release.assets,
            )
            assert step.asset_name in release.assets


def test_gitleaks_x64_like_the_label() -> None:
    data, releases = _load("gitleaks__gitleaks.json")
    result, picks = _picks(releases, data["repo"])
    newest = releases[0].version
    expected = {k: v.replace("8.28.0", newest) for k, v in data["labels"].items()}
    assert picks == {k: expected[k] for k in TARGETS}
    assert result.best.answer.asset_pattern == "gitleaks_{version}_{os}_{arch}.tar.gz"
    assert result.best.answer.arch_mapping == {"amd64": "x64", "arm64": "arm64"}
    assert result.confident
    assert _replays_cleanly(result, releases, data["repo"]) == []


def test_jid_rosetta_for_missing_darwin_arm64() -> None:
    data, releases = _load("simeji__jid.json")
    result, picks = _picks(releases, data["repo"])
    for key in ("linux/amd64", "linux/arm64", "darwin/amd64"):
        assert picks[key] == data["labels"][key]
    # No label (the peer has no darwin/arm64 build to offer); we install the amd64
    # build, which runs under Rosetta 2, and say so in the recipe.
    assert picks["darwin/arm64"] == "jid_darwin_amd64.zip"
    assert any("Rosetta" in r for r in result.best.reasons)
    assert result.confident
    recipe = candidate_to_recipe(result.best, repo=data["repo"], name="jid")
    assert any(step.note and "Rosetta" in step.note for step in recipe.steps)
    assert _replays_cleanly(result, releases, data["repo"]) == []


def test_gotty_skips_the_prerelease_and_has_no_linux_arm64() -> None:
    data, releases = _load("yudai__gotty.json")
    assert releases[0].prerelease
    result, picks = _picks(releases, data["repo"])
    assert result.tag == "v1.0.1"
    assert picks == {
        "linux/amd64": "gotty_linux_amd64.tar.gz",
        "darwin/amd64": "gotty_darwin_amd64.tar.gz",
        "darwin/arm64": "gotty_darwin_amd64.tar.gz",  # Rosetta 2
    }
    # linux_arm is 32-bit ARM: never offered to arm64.
    assert result.unsupported == ("linux/arm64",)
    recipe = candidate_to_recipe(result.best, repo=data["repo"], name="gotty")
    assert recipe.metadata.unsupported_platforms == ("linux/arm64",)
    assert _replays_cleanly(result, releases, data["repo"]) == []


def test_piknik_disagrees_with_the_label_on_purpose() -> None:
    data, releases = _load("jedisct1__piknik.json")
    result, picks = _picks(releases, data["repo"])
    assert picks["linux/amd64"] == data["labels"]["linux/amd64"]
    assert "linux/arm64" in result.unsupported  # only linux_arm (32-bit) exists
    # The label gives darwin/amd64 'piknik-macos-0.10.2.tar.gz'. In 0.10.2 (Dec 2024)
    # that file sits next to 'piknik-macos-intel-0.10.2.tar.gz' of the same size, so it
    # is the Apple Silicon build and would not run on an Intel Mac. We install -intel on
    # darwin/amd64 and the unlabelled macOS build on darwin/arm64.
    assert picks["darwin/amd64"] == "piknik-macos-intel-0.10.2.tar.gz"
    assert picks["darwin/arm64"] == "piknik-macos-0.10.2.tar.gz"
    # '-intel' exists only in the newest release: older releases get a version-ranged
    # step with their own naming (the unlabelled macOS build, then the only one), so the
    # recipe replays cleanly and is confident.
    assert result.confident
    recipe = candidate_to_recipe(result.best, repo=data["repo"], name="piknik", releases=releases)
    assert errors(check_recipe(recipe, releases, expected=result.best.expected)) == []
    older = releases[1]
    (step,) = render_recipe(
        recipe, ResolvedVersion(older.version, older.tag), MAC_INTEL, assets=older.assets
    )
    assert step.asset_name == f"piknik-macos-{older.version}.tar.gz"


@pytest.mark.parametrize(
    "name",
    [
        "bufbuild__buf.json",
        "gitleaks__gitleaks.json",
        "jedisct1__piknik.json",
        "simeji__jid.json",
        "yudai__gotty.json",
    ],
)
def test_never_installs_another_platforms_build(name: str) -> None:
    data, releases = _load(name)
    result = match_releases(releases, repo=data["repo"])
    assert result.best is not None
    for choice in result.best.choices:
        os_name, arch = choice.platform.split("/")
        lowered = choice.asset.lower()
        assert "windows" not in lowered and not lowered.endswith((".exe", ".deb", ".rpm"))
        if os_name == "linux":
            assert "darwin" not in lowered and "mac" not in lowered
        if arch == "arm64" and os_name == "linux":
            assert "x86_64" not in lowered and "amd64" not in lowered
