"""When-clause matching and require_supported: what we can install where."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsukud.errors import ExitCode, exit_code_for
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    GenericStep,
    NoMatchingStep,
    Platform,
    UnsupportedAction,
    UnsupportedFeature,
    UnsupportedPlatform,
    When,
    load_recipe,
    matching_steps,
    parse_recipe,
    require_supported,
)

LINUX = Platform("linux", "amd64", "glibc")
LINUX_ARM = Platform("linux", "arm64", "glibc")
MUSL = Platform("linux", "amd64", "musl")
MAC = Platform("darwin", "arm64")
MAC_INTEL = Platform("darwin", "amd64")


@pytest.mark.parametrize(
    ("when", "target", "expected"),
    [
        (When(), LINUX, True),
        (When(os=("linux",)), LINUX, True),
        (When(os=("linux",)), MAC, False),
        (When(os=("linux", "darwin")), MAC, True),
        (When(platform=("darwin/arm64",)), MAC, True),
        (When(platform=("darwin/arm64",)), MAC_INTEL, False),
        (When(platform=("linux/amd64",), arch=("arm64",)), LINUX, False),
        (When(arch=("arm64",)), LINUX_ARM, True),
        (When(arch=("arm64",)), LINUX, False),
        (When(os=("linux",), libc=("glibc",)), MUSL, False),
        (When(os=("linux",), libc=("glibc", "musl")), MUSL, True),
        (When(libc=("musl",)), MAC, True),  # libc only matters on Linux
        (When(libc=("musl",)), Platform("linux", "amd64"), True),  # unknown libc
        (When(linux_family="debian"), LINUX, False),
        (When(linux_family="debian"), Platform("linux", "amd64", "glibc", "debian"), True),
        (When(package_manager="brew"), MAC, False),  # cannot be evaluated: skipped
        (When(gpu=("nvidia",)), LINUX, False),
        (When(os=("linux",), extra={"distro": ["ubuntu"]}), LINUX, False),
    ],
)
def test_when_matches(when: When, target: Platform, expected: bool) -> None:
    assert when.matches(target) is expected


MIXED = """\
[metadata]
name = "mixed"

[[steps]]
action = "pkgsrc_install"
formula = "mixed"
when = { os = ["darwin"] }

[[steps]]
action = "github_archive"
when = { os = ["linux"] }
repo = "o/mixed"
asset_pattern = "mixed-{version}-linux-{arch}.tar.gz"
binaries = ["mixed"]
"""


def test_unsupported_action_only_where_selected() -> None:
    recipe = parse_recipe(MIXED, "mixed.toml")
    assert [i for i, _ in require_supported(recipe, LINUX)] == [1]
    with pytest.raises(UnsupportedAction) as info:
        require_supported(recipe, MAC)
    assert info.value.message == "mixed: steps[0]: action pkgsrc_install is not supported yet"
    assert info.value.data["recipe"] == "mixed"
    assert exit_code_for(info.value.code) == ExitCode.INSTALL_FAILED
    assert isinstance(recipe.steps[0], GenericStep)


def test_no_matching_step() -> None:
    recipe = parse_recipe(MIXED.replace('action = "pkgsrc_install"', 'action = "nix_install"'))
    with pytest.raises(NoMatchingStep, match="mixed: no step installs on freebsd/amd64"):
        require_supported(recipe, Platform("freebsd", "amd64"))
    with pytest.raises(NoMatchingStep):
        require_supported(parse_recipe('[metadata]\nname = "empty"\n'), LINUX)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            'install_subpath = "x"',
            "mixed: steps[1]: github_archive parameter install_subpath is not supported yet",
        ),
        (
            'install_mode = "directory_wrapped"',
            "mixed: steps[1]: install_mode directory_wrapped is not supported yet",
        ),
        (
            'archive_format = "tar.lz"',
            "mixed: steps[1]: archive_format tar.lz is not supported yet",
        ),
    ],
)
def test_unsupported_features(extra: str, message: str) -> None:
    recipe = parse_recipe(MIXED + extra + "\n")
    with pytest.raises(UnsupportedFeature) as info:
        require_supported(recipe, LINUX)
    assert info.value.message == message


def test_unsupported_version_source() -> None:
    recipe = parse_recipe(MIXED + '\n[version]\nsource = "repology"\n')
    with pytest.raises(UnsupportedFeature, match="version source 'repology' is not supported yet"):
        require_supported(recipe, LINUX)
    npm_source = parse_recipe(MIXED + '\n[version]\nsource = "npm"\n')
    with pytest.raises(UnsupportedFeature, match="version source npm needs an ecosystem install"):
        require_supported(npm_source, LINUX)
    ok = parse_recipe(MIXED + '\n[version]\nsource = "github_releases"\ngithub_repo = "o/r"\n')
    assert require_supported(ok, LINUX)


def test_platform_metadata_from_fixtures(recipes_dir: Path) -> None:
    btop = load_recipe(recipes_dir / "b/btop.toml")
    with pytest.raises(
        UnsupportedPlatform, match="btop is not available for darwin/arm64: supported_os is linux"
    ):
        require_supported(btop, MAC)
    gotop = load_recipe(recipes_dir / "g/gotop.toml")
    with pytest.raises(
        UnsupportedPlatform, match="darwin/amd64 is listed in unsupported_platforms"
    ):
        require_supported(gotop, MAC_INTEL)
    assert require_supported(gotop, MAC)
    ast_grep = load_recipe(recipes_dir / "a/ast-grep.toml")
    with pytest.raises(UnsupportedPlatform, match="supported_libc is glibc"):
        require_supported(ast_grep, MUSL)
    assert require_supported(ast_grep, MAC)  # libc rules do not apply off Linux
    liberica = load_recipe(recipes_dir / "l/liberica.toml")
    with pytest.raises(UnsupportedPlatform):
        require_supported(liberica, MAC)


def test_unsupported_reason_becomes_the_hint() -> None:
    recipe = parse_recipe(
        MIXED.replace(
            'name = "mixed"',
            'name = "mixed"\nsupported_os = ["linux"]\n'
            'unsupported_reason = "No macOS builds upstream"',
        )
    )
    with pytest.raises(UnsupportedPlatform) as info:
        require_supported(recipe, MAC)
    assert info.value.hint == "No macOS builds upstream"


def test_every_fixture_recipe_is_supported_somewhere(
    recipes_dir: Path, fixture_recipe: str
) -> None:
    """All 20 human-written fixtures use only github_archive/github_file."""
    recipe = load_recipe(recipes_dir / fixture_recipe)
    supported = []
    for target in (*STANDARD_PLATFORMS, MUSL):
        try:
            require_supported(recipe, target)
            supported.append(target)
        except UnsupportedPlatform:
            continue
    assert supported, f"{fixture_recipe} installs nowhere"
    assert all(not isinstance(s, GenericStep) for s in recipe.steps)


def test_matching_steps_keeps_indices(recipes_dir: Path) -> None:
    stern = load_recipe(recipes_dir / "s/stern.toml")
    assert [i for i, _ in matching_steps(stern, LINUX)] == [0]
    assert [i for i, _ in matching_steps(stern, MAC)] == [1]
