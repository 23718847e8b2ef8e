"""System package actions, ``require_command`` and ``download``'s
``skip_verification_reason``: read as tsuku reads them, planned as tsuku plans them.

The plan cases are tsuku's ground-truth recipe ``testdata/recipes/build-tools-system.toml``
(written here again, not copied) and its golden plans for linux/amd64 on the debian and
alpine families (``testdata/golden/plans/b/build-tools-system/``), transcribed by hand
in the current format (``format_version`` 5, ``storage_version`` 1, as the other
goldens of tests/unit/recipe/test_tsuku_plans.py). This project's own keys
(``unsupported``, ``warnings``, a step's ``command``) are compared apart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tsukud.recipe import (
    Platform,
    RecipeParseError,
    RequireCommandStep,
    ResolvedVersion,
    SystemPackagesStep,
    dump_recipe,
    matching_steps,
    parse_recipe,
    require_supported,
    unsupported_actions,
)
from tsukud.recipe.plan import plan_recipe
from tsukud.recipe.platform import make_platform
from tsukud.recipe.system import (
    family_from_os_release,
    install_argv,
    installed_from_query,
    meets_minimum,
    version_from_output,
)

BUILD_TOOLS = """
[metadata]
name = "build-tools-system"
description = "Essential build tools from system package managers"
version_format = "semver"

[[steps]]
action = "apt_install"
packages = ["build-essential", "pkg-config"]

[[steps]]
action = "dnf_install"
packages = ["gcc", "gcc-c++", "make", "pkgconfig"]

[[steps]]
action = "pacman_install"
packages = ["base-devel"]

[[steps]]
action = "apk_install"
packages = ["build-base", "pkgconfig"]

[[steps]]
action = "zypper_install"
packages = ["gcc", "gcc-c++", "make", "pkg-config"]

[[steps]]
action = "manual"
text = "Install Xcode Command Line Tools: xcode-select --install"
when = { os = "darwin" }

[[steps]]
action = "require_command"
command = "pkg-config"

[verify]
command = "pkg-config --version"
pattern = "."
"""
DEV = ResolvedVersion(version="dev", tag="dev")
HEAD = '[metadata]\nname = "x"\n[[steps]]\n'


def _linux(family: str | None, libc: str = "glibc") -> Platform:
    return Platform("linux", "amd64", libc, linux_family=family)


def _golden(family: str, action: str, packages: list[str]) -> dict[str, Any]:
    return {
        "format_version": 5,
        "storage_version": 1,
        "tool": "build-tools-system",
        "version": "dev",
        "platform": {"os": "linux", "arch": "amd64", "linux_family": family},
        "deterministic": False,
        "steps": [
            {
                "action": action,
                "params": {"packages": packages},
                "evaluable": False,
                "deterministic": False,
            },
            {
                "action": "require_command",
                "params": {"command": "pkg-config"},
                "evaluable": False,
                "deterministic": True,
            },
        ],
        "verify": {"command": "pkg-config --version", "pattern": "."},
    }


def _plan_json(family: str) -> tuple[dict[str, Any], list[str | None]]:
    recipe = parse_recipe(BUILD_TOOLS)
    plan = plan_recipe(recipe, DEV, _linux(family), install_dir="/t")
    data: dict[str, Any] = json.loads(msgspec.json.encode(plan))
    assert data.pop("unsupported") == []
    commands = [step.pop("command", None) for step in data["steps"]]
    return data, commands


@pytest.mark.parametrize(
    ("family", "action", "packages", "command"),
    [
        (
            "debian",
            "apt_install",
            ["build-essential", "pkg-config"],
            "sudo apt-get install -y build-essential pkg-config",
        ),
        ("alpine", "apk_install", ["build-base", "pkgconfig"], "sudo apk add build-base pkgconfig"),
    ],
)
def test_plan_matches_tsukus_golden_for_the_family(
    family: str, action: str, packages: list[str], command: str
) -> None:
    ours, commands = _plan_json(family)
    assert json.dumps(ours, indent=2) == json.dumps(_golden(family, action, packages), indent=2)
    assert commands == [command, None]


@pytest.mark.parametrize(
    ("family", "action", "command"),
    [
        ("rhel", "dnf_install", "sudo dnf install -y gcc gcc-c++ make pkgconfig"),
        ("arch", "pacman_install", "sudo pacman -S --noconfirm base-devel"),
        ("suse", "zypper_install", "sudo zypper install -y gcc gcc-c++ make pkg-config"),
    ],
)
def test_each_family_takes_only_its_own_manager(family: str, action: str, command: str) -> None:
    ours, commands = _plan_json(family)
    assert [s["action"] for s in ours["steps"]] == [action, "require_command"]
    assert commands[0] == command


def test_no_family_no_system_step_and_darwin_says_what_it_cannot_plan() -> None:
    recipe = parse_recipe(BUILD_TOOLS)
    assert [s.action for _, s in matching_steps(recipe, _linux(None))] == ["require_command"]
    darwin = plan_recipe(recipe, DEV, Platform("darwin", "arm64"), install_dir="/t")
    assert [s.action for s in darwin.steps] == ["require_command"]
    assert [u.action for u in darwin.unsupported] == ["manual"]


def test_the_actions_count_as_supported_and_install_selects_them() -> None:
    recipe = parse_recipe(BUILD_TOOLS)
    assert unsupported_actions(recipe) == ["manual"]
    steps = [
        s for _, s in require_supported(parse_recipe(_with_source(BUILD_TOOLS)), _linux("debian"))
    ]
    assert isinstance(steps[0], SystemPackagesStep) and steps[0].action == "apt_install"
    assert isinstance(steps[1], RequireCommandStep)


def _with_source(text: str) -> str:
    return text.replace(
        'version_format = "semver"\n',
        'version_format = "semver"\n\n[version]\nsource = "github_releases"\ngithub_repo = "o/r"\n',
        1,
    )


def test_when_package_manager_is_the_familys_manager() -> None:
    text = """
[metadata]
name = "x"
[[steps]]
action = "require_command"
command = "git"
when = { package_manager = "apt" }
[[steps]]
action = "require_command"
command = "brew"
when = { package_manager = "brew" }
"""
    recipe = parse_recipe(text)
    assert [s.command for _, s in matching_steps(recipe, _linux("debian"))] == ["git"]  # type: ignore[union-attr]
    assert matching_steps(recipe, _linux("rhel")) == []
    assert matching_steps(recipe, Platform("darwin", "arm64")) == []


def test_an_explicit_when_cannot_widen_the_implicit_family() -> None:
    recipe = parse_recipe(
        '[metadata]\nname = "x"\n[[steps]]\naction = "apt_install"\npackages = ["jq"]\n'
        'when = { os = ["linux"], libc = ["musl"] }\n'
    )
    assert matching_steps(recipe, _linux("alpine", "musl")) == []
    assert matching_steps(recipe, _linux("debian", "glibc")) == []  # libc says musl


@pytest.mark.parametrize(
    "bad",
    ["-oAPT::Get::AllowUnauthenticated=1", "--allow-unauthenticated", "jq;rm", "a b", "../x", ""],
)
def test_a_package_that_could_read_as_an_option_or_shell_is_refused(bad: str) -> None:
    """Each name becomes an argument of a command run as root."""
    text = HEAD + f'action = "apt_install"\npackages = ["jq", {json.dumps(bad)}]\n'
    with pytest.raises(RecipeParseError, match=r"steps\[0\]\.packages"):
        parse_recipe(text)


@pytest.mark.parametrize("bad", ["/usr/bin/git", "-v", "git;id", "$(id)"])
def test_require_command_names_a_command_not_a_path_or_shell(bad: str) -> None:
    text = HEAD + f'action = "require_command"\ncommand = {json.dumps(bad)}\n'
    with pytest.raises(RecipeParseError, match=r"steps\[0\]\.command"):
        parse_recipe(text)


def test_require_command_min_version_needs_flag_and_regex_with_a_group() -> None:
    base = '[metadata]\nname = "x"\n[[steps]]\naction = "require_command"\ncommand = "docker"\n'
    with pytest.raises(RecipeParseError, match="version_flag"):
        parse_recipe(base + 'min_version = "20"\n')
    with pytest.raises(RecipeParseError, match="version_regex"):
        parse_recipe(
            base + 'min_version = "20"\nversion_flag = "--version"\nversion_regex = "Docker"\n'
        )
    recipe = parse_recipe(
        base + 'min_version = "20.10"\nversion_flag = "--version"\n'
        'version_regex = "Docker version ([0-9.]+)"\n'
    )
    plan = plan_recipe(recipe, DEV, _linux(None), install_dir="/t")
    assert plan.steps[0].params == {
        "command": "docker",
        "min_version": "20.10",
        "version_flag": "--version",
        "version_regex": "Docker version ([0-9.]+)",
    }


@pytest.mark.parametrize(
    "bad", ["-cimport os; os.system('id')", "-mensurepip", "-e", "--exec=id", "-c", " --version"]
)
def test_require_command_runs_only_a_version_flag(bad: str) -> None:
    """The check runs ``command version_flag`` on the host before anything is approved:
    any other argument would let a recipe run code through an interpreter on PATH."""
    text = HEAD + (
        'action = "require_command"\ncommand = "python3"\nmin_version = "3"\n'
        f'version_flag = {json.dumps(bad)}\nversion_regex = "Python ([0-9.]+)"\n'
    )
    with pytest.raises(RecipeParseError, match=r"steps\[0\]\.version_flag: one of --version"):
        parse_recipe(text)


def test_round_trip_keeps_the_steps_as_written() -> None:
    recipe = parse_recipe(BUILD_TOOLS)
    assert parse_recipe(dump_recipe(recipe)) == recipe


def test_download_with_skip_verification_reason_is_planned_with_the_reason() -> None:
    text = """
[metadata]
name = "x"
[version]
source = "github_releases"
github_repo = "o/r"
[[steps]]
action = "download"
url = "https://example.com/x-{version}-{os}"
skip_verification_reason = "upstream publishes no checksums"
[[steps]]
action = "install_binaries"
binaries = ["x-{version}-{os}"]
"""
    recipe = parse_recipe(text)
    assert unsupported_actions(recipe) == []
    plan = plan_recipe(recipe, ResolvedVersion("1.0", "v1.0"), _linux(None), install_dir="/t")
    step = plan.steps[0]
    assert step.skip_verification_reason == "upstream publishes no checksums"
    assert "skip_verification_reason" not in step.params  # tsuku's params leave it out
    without = plan_recipe(
        parse_recipe(
            text.replace('skip_verification_reason = "upstream publishes no checksums"\n', "")
        ),
        ResolvedVersion("1.0", "v1.0"),
        _linux(None),
        install_dir="/t",
    )
    assert without.steps[0].skip_verification_reason is None


# ----------------------------------------------------------------- the pure helpers


def test_install_argv_is_tsukus_command_with_sudo_unless_root() -> None:
    assert install_argv("apt_install", ("libfoo",), as_root=False) == (
        "sudo",
        "apt-get",
        "install",
        "-y",
        "libfoo",
    )
    assert install_argv("apk_install", ("a", "b"), as_root=True) == ("apk", "add", "a", "b")


def test_a_removed_debian_package_is_not_installed() -> None:
    assert installed_from_query("apt_install", 0, "install ok installed")
    assert not installed_from_query("apt_install", 0, "deinstall ok config-files")
    assert not installed_from_query("apt_install", 1, "")
    assert installed_from_query("apk_install", 0, "")


def test_version_reading_and_comparison() -> None:
    assert (
        version_from_output("Docker version 24.0.7, build", r"Docker version ([0-9.]+)") == "24.0.7"
    )
    assert version_from_output("nothing", r"v([0-9.]+)") is None
    assert meets_minimum("1.10", "1.9")
    assert meets_minimum("2", "2.0.0")
    assert not meets_minimum("1.9.9", "1.10")


@pytest.mark.parametrize(
    ("text", "family"),
    [
        ('ID=debian\nVERSION_ID="12"\n', "debian"),
        ("ID=ubuntu\nID_LIKE=debian\n", "debian"),
        ('ID="rocky"\nID_LIKE="rhel centos fedora"\n', "rhel"),
        ('ID=mycorp\nID_LIKE="arch"\n', "arch"),
        ("ID=alpine\n", "alpine"),
        ('ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n', "suse"),
        ("ID=nixos\n", None),
        ("", None),
    ],
)
def test_linux_family_from_os_release(text: str, family: str | None) -> None:
    assert family_from_os_release(text) == family


def test_host_detection_names_the_family_on_linux_only() -> None:
    linux = make_platform(
        "linux", "x86_64", python_libc="glibc", musl_loader=False, os_release="ID=debian\n"
    )
    assert linux.linux_family == "debian"
    mac = make_platform(
        "darwin", "arm64", python_libc="", musl_loader=False, os_release="ID=debian\n"
    )
    assert mac.linux_family is None


def test_the_coverage_bench_counts_and_plans_them_on_their_families(tmp_path: Path) -> None:
    from tests.unit.recipe.test_registry_quirks import _bench

    manual = (
        '[[steps]]\naction = "manual"\n'
        'text = "Install Xcode Command Line Tools: xcode-select --install"\n'
        'when = { os = "darwin" }\n\n'
    )
    assert manual in BUILD_TOOLS
    (tmp_path / "build-tools-system.toml").write_text(BUILD_TOOLS.replace(manual, ""))
    bench = _bench()
    report = bench.measure([tmp_path / "build-tools-system.toml"])
    assert report.lines()[-1] == "parsed 1/1, supported 1/1"
    planned = bench.planned_actions(parse_recipe(BUILD_TOOLS))
    assert all(
        planned[a]
        for a in (
            "apt_install",
            "apk_install",
            "dnf_install",
            "pacman_install",
            "zypper_install",
            "require_command",
        )
    )
