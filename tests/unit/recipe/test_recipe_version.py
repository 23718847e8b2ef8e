"""Tag ↔ version rules (reference notes B5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tsukud.recipe import (
    RecipeError,
    ResolvedVersion,
    VersionNotFound,
    VersionSource,
    find_version,
    latest_version,
    load_recipe,
    normalize_version,
    parse_recipe,
    tag_to_version,
    version_source,
)
from tsukud.recipe.version import (
    candidate_tags,
    compare_versions,
    is_stable_version,
    nearest_versions,
)


@pytest.mark.parametrize(
    ("tag", "version"),
    [
        ("v1.2.3", "1.2.3"),
        ("1.2.3", "1.2.3"),
        ("kustomize/v5.7.1", "5.7.1"),
        ("api/v0.1.0", "0.1.0"),
        ("Release_1_15_0", "1.15.0"),
        ("go1.21.5", "1.21.5"),
        ("v2.0.0-alpha.3", "2.0.0-alpha.3"),
        ("24.07", "24.07"),
        ("vgo1.2", "1.2"),  # v stripped first, then go
    ],
)
def test_normalize_version(tag: str, version: str) -> None:
    assert normalize_version(tag) == version


def test_tag_prefix_is_stripped_without_normalising() -> None:
    assert tag_to_version("ruby-3.3.10", "ruby-") == "3.3.10"
    assert tag_to_version("cli/v1.2", "cli/") == "v1.2"  # as the reference does
    assert tag_to_version("other-1.0", "ruby-") is None
    assert tag_to_version("v1.0") == "1.0"


def test_candidate_tags() -> None:
    assert candidate_tags("1.2.3") == ["v1.2.3", "1.2.3"]
    assert candidate_tags("3.3.10", "ruby-") == ["ruby-3.3.10"]


def test_find_version_without_prefix() -> None:
    tags = ["v0.7.6", "0.7.2", "kustomize/v5.7.1"]
    assert find_version("0.7.6", tags) == ResolvedVersion("0.7.6", "v0.7.6")
    assert find_version("v0.7.6", tags) == ResolvedVersion("0.7.6", "v0.7.6")
    assert find_version("0.7.2", tags) == ResolvedVersion("0.7.2", "0.7.2")
    assert find_version("5.7.1", tags) == ResolvedVersion("5.7.1", "kustomize/v5.7.1")
    with pytest.raises(VersionNotFound, match=r"version 0\.7 not found for simeji/jid") as info:
        find_version("0.7", tags, repo="simeji/jid")  # no fuzzy match without a prefix
    assert info.value.exit_code == 4


def test_a_missing_version_hints_the_versions_that_exist_near_it() -> None:
    tags = ["v1.0.0", "v1.1.0", "v1.1.1", "v1.2.0", "v1.10.0", "v2.0.0-rc1", "nightly"]
    with pytest.raises(VersionNotFound) as info:
        find_version("9.9.9", tags, repo="FiloSottile/age")
    assert info.value.message == "version 9.9.9 not found for FiloSottile/age"
    assert info.value.hint == (
        "Versions that exist near 9.9.9: 2.0.0-rc1, 1.10.0, 1.2.0, 1.1.1, 1.1.0. "
        "Ask for one of them (tool@version), or leave the version out for the newest."
    )
    assert info.value.data["available"] == ["2.0.0-rc1", "1.10.0", "1.2.0", "1.1.1", "1.1.0"]
    assert nearest_versions("1.1.5", ["1.0.0", "1.1.1", "1.2.0", "1.10.0"], n=2) == [
        "1.2.0",
        "1.1.1",
    ]
    assert nearest_versions("0.1", ["1.0.0", "1.1.1", "1.2.0"], n=2) == ["1.1.1", "1.0.0"]
    with pytest.raises(VersionNotFound) as info:
        find_version("1.0", [], repo="o/r")
    assert "lists no versions" in info.value.hint


def test_find_version_with_prefix() -> None:
    tags = ["ruby-3.3.10", "ruby-3.3.9", "ruby-3.30.0", "ruby-3.4.0-preview1", "v9.9.9"]
    assert find_version("3.3.9", tags, tag_prefix="ruby-") == ResolvedVersion("3.3.9", "ruby-3.3.9")
    # Fuzzy: newest at a component boundary; "3.3" must not pick 3.30.0.
    assert find_version("3.3", tags, tag_prefix="ruby-") == ResolvedVersion("3.3.10", "ruby-3.3.10")
    assert find_version("3.4", tags, tag_prefix="ruby-") == ResolvedVersion(
        "3.4.0-preview1", "ruby-3.4.0-preview1"
    )
    with pytest.raises(VersionNotFound, match=r"version 9\.9\.9 not found \(tag prefix 'ruby-'\)"):
        find_version("9.9.9", tags, tag_prefix="ruby-")


def test_latest_version_skips_prereleases(releases_dir: Path) -> None:
    gotty = json.loads((releases_dir / "yudai__gotty.json").read_text())
    tags = [r["tag_name"] for r in gotty["releases"]]
    assert tags[0] == "v2.0.0-alpha.3"
    assert latest_version(tags) == ResolvedVersion("1.0.1", "v1.0.1")
    jid = json.loads((releases_dir / "simeji__jid.json").read_text())
    assert latest_version([r["tag_name"] for r in jid["releases"]]) == ResolvedVersion(
        "0.7.6", "v0.7.6"
    )


def test_latest_version_rules() -> None:
    assert latest_version(["v1.9.0", "v1.10.0", "v1.10.0-rc1"]).tag == "v1.10.0"
    assert latest_version(["weekly.2024-01-01", "v1.0"]).tag == "v1.0"
    assert latest_version(["nightly", "v1.0"]).tag == "v1.0"  # no digit: invalid
    assert latest_version(["v2.0-beta", "v2.0-rc1"]).tag == "v2.0-rc1"  # only prereleases
    assert (
        latest_version(["ruby-3.3.10", "ruby-3.4.0-preview1", "v9"], tag_prefix="ruby-").version
        == "3.3.10"
    )
    assert latest_version(["v1.0-lts", "v0.9"]).tag == "v1.0-lts"
    with pytest.raises(VersionNotFound, match="no valid version tags found for o/r"):
        latest_version(["latest", "main"], repo="o/r")


@pytest.mark.parametrize(
    ("version", "stable"),
    [
        ("1.2.3", True),
        ("1.2.3-rc1", False),
        ("1.2.3-beta.2", False),
        ("1.2.3-lts", True),
        ("1.2.3-GA", True),
        ("1.2.3-1", False),
        ("1.2.3rc1", False),
        ("2024.01.nightly", False),
    ],
)
def test_is_stable_version(version: str, stable: bool) -> None:
    assert is_stable_version(version) is stable


def test_compare_versions() -> None:
    assert compare_versions("1.10.0", "1.9.9") == 1
    assert compare_versions("1.2", "1.2.0") == 0
    assert compare_versions("1.2.3-rc1", "1.2.3") == -1
    assert compare_versions("1.2.3-rc2", "1.2.3-rc1") == 1


def test_version_source(recipes_dir: Path) -> None:
    stern = load_recipe(recipes_dir / "s/stern.toml")
    assert version_source(stern) == VersionSource("stern/stern")
    with_repo = parse_recipe(
        '[metadata]\nname = "r"\n[version]\ngithub_repo = "ruby/ruby"\ntag_prefix = "v"\n'
    )
    assert version_source(with_repo) == VersionSource("ruby/ruby", "v")
    # tag_prefix without github_repo is ignored, as in the reference (kustomize).
    kustomize = parse_recipe(
        '[metadata]\nname = "kustomize"\n[version]\ntag_prefix = "kustomize/"\n'
        '[[steps]]\naction = "github_archive"\nrepo = "kubernetes-sigs/kustomize"\n'
        'asset_pattern = "kustomize_v{version}_{os}_{arch}.tar.gz"\nbinaries = ["kustomize"]\n'
    )
    assert version_source(kustomize) == VersionSource("kubernetes-sigs/kustomize")
    with pytest.raises(RecipeError, match="no GitHub repository"):
        version_source(parse_recipe('[metadata]\nname = "x"\n'))
