"""The fixtures' independent reading of recipes (tsukud.testing.asset_names).

Expected names are written out by hand from the recipes, so this reading is checked
against the format documentation, and the install tests check the renderer against it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tsukud.recipe import load_recipe, recipe_to_dict
from tsukud.testing.asset_names import expected_assets, format_of_name, when_selects


def _names(recipes_dir: Path, path: str, os: str, arch: str, libc: str | None = None) -> list[str]:
    data = recipe_to_dict(load_recipe(recipes_dir / path))
    return [a.name for a in expected_assets(data, "1.2.3", os, arch, libc)]


@pytest.mark.parametrize(
    ("path", "os", "arch", "libc", "want"),
    [
        ("s/stern.toml", "linux", "amd64", "glibc", ["stern_1.2.3_linux_amd64.tar.gz"]),
        ("s/stern.toml", "darwin", "arm64", None, ["stern_1.2.3_darwin_arm64.tar.gz"]),
        ("c/cosign.toml", "linux", "arm64", "glibc", ["cosign-linux-arm64"]),
        ("k/k9s.toml", "darwin", "amd64", None, ["k9s_Darwin_amd64.tar.gz"]),
        (
            "l/liberica.toml",
            "linux",
            "arm64",
            "glibc",
            ["bellsoft-jdk1.2.3-linux-aarch64-crac.tar.gz"],
        ),
        ("l/liberica.toml", "darwin", "arm64", None, []),  # supported_os = ["linux"]
    ],
)
def test_names_follow_the_documented_substitution(
    recipes_dir: Path, path: str, os: str, arch: str, libc: str | None, want: list[str]
) -> None:
    assert _names(recipes_dir, path, os, arch, libc) == want


def test_binaries_strip_dirs_and_directory_mode(recipes_dir: Path) -> None:
    data = recipe_to_dict(load_recipe(recipes_dir / "l/liberica.toml"))
    (asset,) = expected_assets(data, "21.0.5", "linux", "amd64", "glibc")
    assert asset.archive_format == "tar.gz"
    assert asset.strip_dirs == 1 and asset.directory
    assert asset.binaries == (("bin/java", "java"), ("bin/javac", "javac"), ("bin/jar", "jar"))


def test_file_step_names_its_command_from_dest() -> None:
    data = {
        "metadata": {"name": "t"},
        "steps": [
            {
                "action": "github_file",
                "repo": "o/t",
                "asset_pattern": "t-{os}-{arch}",
                "os_mapping": {"linux": "Linux"},
                "binaries": [{"src": "t-{os}-{arch}", "dest": "bin/t"}],
            }
        ],
    }
    (asset,) = expected_assets(data, "1", "linux", "amd64")
    assert (asset.name, asset.archive_format, asset.binaries) == (
        "t-Linux-amd64",
        "raw",
        (("t-linux-amd64", "t"),),
    )


@pytest.mark.parametrize(
    ("when", "selected"),
    [
        (None, True),
        ({"os": ["linux"]}, True),
        ({"os": ["darwin"]}, False),
        ({"platform": ["linux/arm64"]}, False),
        ({"arch": "amd64", "libc": ["musl"]}, False),
        ({"libc": ["glibc"]}, True),
        ({"package_manager": "apt"}, False),
    ],
)
def test_when(when: dict[str, object] | None, selected: bool) -> None:
    assert when_selects(when, "linux", "amd64", "glibc") is selected


def test_wildcards_and_unknown_actions_name_nothing() -> None:
    wild = {
        "steps": [{"action": "github_archive", "asset_pattern": "t-*.tar.gz", "binaries": ["t"]}]
    }
    assert expected_assets(wild, "1", "linux", "amd64") == []
    brew = {"steps": [{"action": "homebrew", "formula": "t"}]}
    assert expected_assets(brew, "1", "linux", "amd64") == []


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("a.tar.gz", "tar.gz"),
        ("a.TGZ", "tar.gz"),
        ("a.tbz", "tar.bz2"),
        ("a.zip", "zip"),
        ("a.xz", "xz"),
        ("a", "raw"),
    ],
)
def test_format_of_name(name: str, fmt: str) -> None:
    assert format_of_name(name) == fmt
