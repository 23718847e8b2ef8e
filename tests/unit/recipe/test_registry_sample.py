"""Recipes written the way tsuku's registry writes them are read and planned. The
human-written recipes in ``../shared/fixtures/tsuku-recipes`` must every one parse,
write back as read, and plan for linux/amd64 (or name what they cannot). Each quirk a
sample of the real registry showed (docs/install.md "Coverage of tsuku's registry") is
held here in a recipe written in that style (not a copy of one): libc-qualified
platforms, ``when.arch`` as an array, the batch generator's ``= ""`` for every unset key,
``install_binaries`` spelled with ``outputs``, a directory-mode ``download_archive``
without ``binaries``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared import RECIPES, require
from tests.unit.recipe.test_registry_quirks import _bench
from tsukud.recipe import (
    Binary,
    DownloadArchiveStep,
    HomebrewStep,
    InstallBinariesStep,
    Platform,
    Recipe,
    RecipeParseError,
    ResolvedVersion,
    UnsupportedPlatform,
    check_platform,
    dump_recipe,
    load_recipe,
    matching_steps,
    parse_recipe,
    unknown_keys,
    unsupported_actions,
)
from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.plan import Plan, plan_recipe

LINUX = Platform("linux", "amd64", "glibc")
V = ResolvedVersion("1.2.3", "v1.2.3")

# A release-archive recipe whose musl/arm64 build does not exist (ripgrep's shape).
LIBC_QUALIFIED = """
[metadata]
name = "rgish"
description = "Search tool"
unsupported_platforms = ["linux/arm64/musl"]

[version]
source = "github_releases"
github_repo = "example/rgish"

[[steps]]
action = "github_archive"
repo = "example/rgish"
asset_pattern = "rgish-{version}-{arch}-unknown-{os}-gnu.tar.gz"
archive_format = "tar.gz"
strip_dirs = 1
binaries = ["rgish"]
os_mapping = { linux = "linux", darwin = "darwin" }
arch_mapping = { amd64 = "x86_64", arm64 = "aarch64" }

[verify]
command = "rgish --version"
"""

# A library bottle for Apple silicon only, installed as files, not commands (mlx-c's shape).
ARCH_ARRAY = """
[metadata]
name = "libmx"
description = "C bindings"
supported_os = ["darwin"]

[[steps]]
action = "homebrew"
formula = "libmx"
when = { os = ["darwin"], arch = ["arm64"] }

[[steps]]
action = "install_binaries"
install_mode = "directory"
outputs = ["lib/libmx.dylib", "include/mx.h"]
when = { os = ["darwin"], arch = ["arm64"] }
"""

# The batch generator spells every unset key as an empty string (helm's shape).
BATCH = """
[metadata]
name = "helmish"
description = "Package manager"
homepage = "https://example.test"
version_format = ""
tier = 3

[version]
source = "homebrew"
formula = "helmish"
github_repo = ""
tag_prefix = ""
module = ""
cask = ""
timeline_tag = ""

[[steps]]
action = "homebrew"
formula = "helmish"

[[steps]]
action = "install_binaries"
binaries = ["bin/helmish"]

[verify]
command = "helmish version"
"""

# install_binaries spelled with outputs: the bin/ entries are the commands (tmux's shape).
OUTPUTS = """
[metadata]
name = "muxish"
description = "Terminal multiplexer"
runtime_dependencies = ["libevent", "ncurses"]

[[steps]]
action = "homebrew"
formula = "muxish"

[[steps]]
action = "install_binaries"
outputs = ["bin/muxish"]

[verify]
command = "muxish -V"
"""

# A directory-mode download_archive with no binaries, then shell set-up (nvm's shape).
DIRECTORY = """
[metadata]
name = "nvmish"
description = "Version manager"

[version]
source = "github_releases"
github_repo = "example/nvmish"

[[steps]]
action = "download_archive"
url = "https://github.com/example/nvmish/archive/refs/tags/v{version}.tar.gz"
archive_format = "tar.gz"
strip_dirs = 1
install_mode = "directory"

[[steps]]
action = "set_env"
vars = { NVMISH_DIR = "{install_dir}" }

[[steps]]
action = "install_shell_init"
source_file = "nvmish.sh"
target = "nvmish"
"""


def _bottles(recipe: Recipe) -> dict[int, BottleRef]:
    """The bottle an install would look up for each homebrew step (the planner is pure;
    the daemon passes what ghcr.io's manifest says)."""
    return {
        i: BottleRef(
            formula=step.formula,
            pkg_version=V.version,
            platform_tag="x86_64_linux",
            url=f"https://ghcr.io/v2/homebrew/core/{step.formula}/blobs/sha256:{'0' * 64}",
            sha256="0" * 64,
        )
        for i, step in enumerate(recipe.steps)
        if isinstance(step, HomebrewStep)
    }


def _plan(recipe: Recipe) -> Plan:
    return plan_recipe(recipe, V, LINUX, install_dir="/h/tools/x-1.2.3", bottles=_bottles(recipe))


def _shared() -> list[Path]:
    return sorted(require(RECIPES).rglob("*.toml"))


def test_every_shared_recipe_parses_and_writes_back_as_it_reads() -> None:
    paths = _shared()
    assert len(paths) >= 20
    for path in paths:
        try:
            recipe = load_recipe(path)
        except RecipeParseError as exc:  # pragma: no cover - the failure message is the point
            pytest.fail(f"{path.name}: {exc.message}")
        assert recipe.metadata.name == path.stem
        assert parse_recipe(dump_recipe(recipe)) == recipe, path.name


def test_every_shared_recipe_plans_for_linux_amd64_or_names_what_it_cannot() -> None:
    for path in _shared():
        recipe = load_recipe(path)
        plan = _plan(recipe)  # never raises: a gap is a line of the plan
        assert plan.tool == path.stem and plan.version == V.version
        for gap in plan.unsupported:
            assert gap.platform == str(LINUX) and gap.action and gap.reason, path.name
            if gap.index is not None:  # a step: the plan names that step's own action
                assert gap.action == recipe.steps[gap.index].action, (path.name, gap)
        if not plan.unsupported:
            assert plan.steps, path.name
            assert not unsupported_actions(recipe) or _excluded_elsewhere(recipe), path.name


def _excluded_elsewhere(recipe: Recipe) -> bool:
    """A recipe can plan fully here while another platform's step is unsupported
    (``apk_install`` for musl): the gap is then in steps linux/amd64 never runs."""
    here = {i for i, _ in matching_steps(recipe, LINUX, V.version)}
    return all(i not in here for i, s in enumerate(recipe.steps) if s.action == "apk_install")


def test_the_coverage_bench_over_the_shared_recipes() -> None:
    paths = _shared()
    report = _bench().measure(paths)
    assert report.total == len(paths) and report.parsed == len(paths)
    assert report.parse_failures == {}
    assert report.lines()[-1].startswith(f"parsed {len(paths)}/{len(paths)}, supported ")


def test_a_libc_qualified_platform_excludes_only_musl_arm64() -> None:
    recipe = parse_recipe(LIBC_QUALIFIED)
    assert recipe.metadata.unsupported_platforms == ("linux/arm64/musl",)
    check_platform(recipe, Platform("linux", "arm64", "glibc"))
    with pytest.raises(UnsupportedPlatform, match="linux/arm64"):
        check_platform(recipe, Platform("linux", "arm64", "musl"))
    assert [i for i, _ in matching_steps(recipe, LINUX)] == [0]
    assert [s.action for s in _plan(recipe).steps] == [
        "download_file",
        "extract",
        "chmod",
        "install_binaries",
    ]


def test_when_arch_as_an_array_matches_only_apple_silicon() -> None:
    recipe = parse_recipe(ARCH_ARRAY)
    assert recipe.steps[0].when is not None and recipe.steps[0].when.arch == ("arm64",)
    assert len(matching_steps(recipe, Platform("darwin", "arm64"))) == 2
    assert matching_steps(recipe, Platform("darwin", "amd64")) == []
    # Its outputs are a library and headers: no command to link.
    step = recipe.steps[1]
    assert isinstance(step, InstallBinariesStep) and step.binaries == ()
    assert step.outputs is not None and Binary("lib/libmx.dylib") in step.outputs
    assert [g.action for g in _plan(recipe).unsupported] == ["*"]  # linux/amd64 excluded


def test_a_batch_generated_recipe_reads_its_empty_strings_as_unset() -> None:
    recipe = parse_recipe(BATCH)
    assert recipe.version is not None
    assert recipe.version.github_repo is None and recipe.version.tag_prefix == ""
    # The ten `= ""` keys the format does not model are kept but are not news.
    assert recipe.version.module == "" and recipe.version.cask == ""
    # version.formula (the Homebrew formula a homebrew source looks up) is modelled.
    assert unknown_keys(recipe) == []
    assert recipe.version.formula
    assert 'timeline_tag = ""' in dump_recipe(recipe)


def test_outputs_name_the_commands_under_bin_and_write_back_as_outputs() -> None:
    recipe = parse_recipe(OUTPUTS)
    step = recipe.steps[1]
    assert isinstance(step, InstallBinariesStep)
    assert step.binaries == (Binary("bin/muxish"),) and step.outputs == (Binary("bin/muxish"),)
    text = dump_recipe(recipe)
    assert 'outputs = ["bin/muxish"]' in text and "binaries =" not in text
    plan = _plan(recipe)
    assert plan.unsupported == ()
    install = plan.steps[-1]
    assert install.params == {"outputs": ["bin/muxish"]}  # as written, as tsuku plans it


def test_install_binaries_needs_binaries_or_outputs() -> None:
    base = '[metadata]\nname = "t"\n\n[[steps]]\naction = "install_binaries"\n'
    with pytest.raises(RecipeParseError, match=r"steps\[0\]\.binaries: required \(or outputs, or"):
        parse_recipe(base)
    # Directory mode with neither installs the whole tree, as tsuku reads it (libcap).
    whole = parse_recipe(base + 'install_mode = "directory"\n')
    assert isinstance(whole.steps[0], InstallBinariesStep) and whole.steps[0].binaries == ()
    assert parse_recipe(dump_recipe(whole)) == whole
    with pytest.raises(RecipeParseError, match=r"steps\[0\]\.outputs: expected a non-empty array"):
        parse_recipe(base + "outputs = []\n")
    with pytest.raises(RecipeParseError, match=r"outputs\[0\]: expected a relative path"):
        parse_recipe(base + 'outputs = ["../etc/passwd"]\n')
    both = parse_recipe(base + 'binaries = ["tool"]\noutputs = ["bin/tool", "lib/x.so"]\n')
    step = both.steps[0]
    assert isinstance(step, InstallBinariesStep) and step.binaries == (Binary("tool"),)
    assert parse_recipe(dump_recipe(both)) == both


def test_download_archive_without_binaries_reads_as_tsuku_reads_it() -> None:
    nvm = parse_recipe(DIRECTORY)
    step = nvm.steps[0]
    assert isinstance(step, DownloadArchiveStep) and step.binaries == ()
    assert "binaries =" not in dump_recipe(nvm)
    plan = _plan(nvm)
    assert plan.unsupported == ()  # install_shell_init too (after a person's yes)
    assert plan.steps[-1].action == "install_shell_init"
    # Without binaries outside directory mode it downloads and unpacks only; a later
    # install_binaries takes the tree (cuda-runtime), as tsuku reads it.
    text = '[metadata]\nname = "t"\n\n[[steps]]\naction = "download_archive"\nurl = "https://x/t"\n'
    bare = parse_recipe(text)
    assert isinstance(bare.steps[0], DownloadArchiveStep) and bare.steps[0].binaries == ()
    dir_mode = parse_recipe(text + 'install_mode = "directory"\n')
    assert parse_recipe(dump_recipe(dir_mode)) == dir_mode


def test_an_unknown_step_key_written_empty_is_unset_not_unsupported() -> None:
    text = (
        '[metadata]\nname = "t"\n\n[[steps]]\naction = "download"\n'
        'url = "https://x/t"\nmirror = ""\n'
    )
    recipe = parse_recipe(text)
    assert unsupported_actions(recipe) == []
    assert unknown_keys(recipe) == []
    assert 'mirror = ""' in dump_recipe(recipe)  # kept as written
    named = parse_recipe(text.replace('mirror = ""', 'mirror = "https://y/t"'))
    assert "download parameter mirror" in unsupported_actions(named)
    assert unknown_keys(named) == ["steps[0].mirror"]
