"""``configure_make`` and ``setup_build_env``: read with tsuku's checks, planned as
tsuku plans a primitive it does not decompose, and rendered into one build over the
unpacked source.

Beside curl's golden (tests/unit/recipe/test_tsuku_plans_ecosystems.py), the plan
cases follow tsuku's plan generator for an action it does not decompose
(internal/executor/plan_generator.go ``resolveStep``): the step's parameters as
written with ``{version}``, ``{os}``, ``{arch}`` filled in, keys in sorted order,
``evaluable`` false (neither is in its ``ActionEvaluability`` table) and
``deterministic`` as each action's ``IsDeterministic`` says (configure_make false,
setup_build_env true); the plan is then not deterministic. The shape is tsuku's
libxml2-source test recipe (download + extract + configure_make + install_binaries in
directory mode), written here again.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from tsukud.recipe import (
    Platform,
    RecipeError,
    RecipeParseError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
    render_recipe,
    require_supported,
    unsupported_actions,
)
from tsukud.recipe.build import DEFAULT_MAKE_TARGETS, Build
from tsukud.recipe.build_deps import build_dependencies
from tsukud.recipe.plan import plan_recipe

LINUX = Platform("linux", "amd64", "glibc")
V = ResolvedVersion("2.15.1", "v2.15.1")
SHA = "b" * 64

LIBXML2 = f"""
[metadata]
name = "libxml2-source"

[version]
source = "github"
github_repo = "o/libxml2"

[[steps]]
action = "download_file"
url = "https://example.test/libxml2-{{version}}.tar.xz"
checksum = "{SHA}"

[[steps]]
action = "extract"
archive = "libxml2-{{version}}.tar.xz"
format = "tar.xz"

[[steps]]
action = "setup_build_env"

[[steps]]
action = "configure_make"
source_dir = "libxml2-{{version}}"
executables = ["xmllint"]
configure_args = ["--without-python", "--prefix-note={{version}}"]

[[steps]]
action = "install_binaries"
install_mode = "directory"
binaries = ["bin/xmllint"]

[verify]
command = "xmllint --version"
pattern = "{{version}}"
"""

GOLDEN_STEPS: list[dict[str, Any]] = [
    {
        "action": "download_file",
        "params": {
            "checksum": SHA,
            "dest": "libxml2-2.15.1.tar.xz",
            "url": "https://example.test/libxml2-2.15.1.tar.xz",
        },
        "evaluable": True,
        "deterministic": True,
    },
    {
        "action": "extract",
        "params": {"archive": "libxml2-2.15.1.tar.xz", "format": "tar.xz"},  # as written
        "evaluable": True,
        "deterministic": True,
    },
    {"action": "setup_build_env", "params": {}, "evaluable": False, "deterministic": True},
    {
        "action": "configure_make",
        "params": {
            "configure_args": ["--without-python", "--prefix-note=2.15.1"],
            "executables": ["xmllint"],
            "source_dir": "libxml2-2.15.1",
        },
        "evaluable": False,
        "deterministic": False,
    },
    {
        "action": "install_binaries",
        "params": {"binaries": ["bin/xmllint"], "install_mode": "directory"},
        "evaluable": True,
        "deterministic": True,
    },
]


def _plan(text: str) -> dict[str, Any]:
    plan = plan_recipe(parse_recipe(text), V, LINUX, install_dir="/t")
    data: dict[str, Any] = json.loads(msgspec.json.encode(plan))
    return data


def _with(line: str) -> str:
    """The recipe with ``line`` in its configure_make step, in place of the key's own."""
    key = line.split(" = ")[0]
    lines = [w for w in LIBXML2.splitlines() if not w.startswith(f"{key} = ")]
    at = lines.index('source_dir = "libxml2-{version}"')
    return "\n".join([*lines[: at + 1], line, *lines[at + 1 :]])


def test_the_plan_is_tsukus_for_a_source_build() -> None:
    plan = _plan(LIBXML2)
    assert plan["unsupported"] == []
    assert json.dumps(plan["steps"], indent=2) == json.dumps(GOLDEN_STEPS, indent=2)
    assert plan["deterministic"] is False  # one non-deterministic step makes the plan so
    assert plan["verify"] == {"command": "xmllint --version", "pattern": "{version}"}


def test_make_targets_are_planned_as_written() -> None:
    text = _with('make_targets = ["all", "install-strip"]')
    (step,) = [s for s in _plan(text)["steps"] if s["action"] == "configure_make"]
    assert step["params"]["make_targets"] == ["all", "install-strip"]


def test_the_build_is_supported_and_rendered_over_the_unpacked_source() -> None:
    recipe = parse_recipe(LIBXML2)
    assert unsupported_actions(recipe) == []
    assert [s.action for _, s in require_supported(recipe, LINUX)][2:4] == [
        "setup_build_env",
        "configure_make",
    ]
    (step,) = render_recipe(recipe, V, LINUX)
    assert step.asset_name == "libxml2-2.15.1.tar.xz" and step.checksum == SHA
    assert step.build == Build(
        index=3,
        source_dir="libxml2-2.15.1",
        args=("--without-python", "--prefix-note=2.15.1"),
        make_targets=DEFAULT_MAKE_TARGETS,
        executables=("xmllint",),
    )
    assert step.install_mode == "directory"
    assert [b.src for b in step.binaries] == ["bin/xmllint"]


def test_without_install_binaries_the_executables_are_the_commands() -> None:
    text = (
        LIBXML2.split('[[steps]]\naction = "install_binaries"')[0] + "\n[verify]\ncommand = 'x'\n"
    )
    (step,) = render_recipe(parse_recipe(text), V, LINUX)
    assert step.install_mode == "directory"
    assert [(b.src, b.dest) for b in step.binaries] == [("bin/xmllint", "bin/xmllint")]


def test_a_recipe_round_trips() -> None:
    recipe = parse_recipe(LIBXML2)
    assert parse_recipe(dump_recipe(recipe)) == recipe


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('configure_args = ["--with-x; rm -rf ~"]', r"configure_args\[0\]"),
        ('configure_args = ["$(id)"]', r"configure_args\[0\]"),
        ('configure_args = [""]', r"configure_args\[0\]"),
        (f'configure_args = ["{"x" * 501}"]', r"configure_args\[0\]"),
        ('make_targets = ["-f/etc/passwd"]', r"make_targets\[0\]"),
        ('make_targets = ["all`id`"]', r"make_targets\[0\]"),
        ('executables = ["../bin/sh"]', r"executables\[0\]"),
        ('executables = ["bin/xmllint"]', r"executables\[0\]"),
    ],
)
def test_what_tsuku_refuses_is_refused_when_read(line: str, where: str) -> None:
    text = _with(line)
    with pytest.raises(RecipeParseError, match=where):
        parse_recipe(text)


def test_the_source_directory_stays_inside_the_work_directory() -> None:
    for bad in ("/usr/src", "../up", "a/../../b"):
        with pytest.raises(RecipeParseError, match="source_dir"):
            parse_recipe(
                LIBXML2.replace('source_dir = "libxml2-{version}"', f'source_dir = "{bad}"')
            )


def test_a_prefix_elsewhere_is_refused_not_ignored() -> None:
    """tsuku's ``prefix`` installs outside the tool's directory: not honoured, so the
    step is unsupported rather than built somewhere else than it says."""
    recipe = parse_recipe(_with('prefix = "/usr/local"'))
    assert unsupported_actions(recipe) == ["configure_make parameter prefix"]
    (missing,) = _plan(dump_recipe(recipe))["unsupported"]
    assert missing["action"] == "configure_make" and "prefix" in missing["reason"]


@pytest.mark.parametrize(
    ("steps", "why"),
    [
        ('[[steps]]\naction = "configure_make"\nsource_dir = "."\n', "without an earlier download"),
        (
            '[[steps]]\naction = "download_file"\nurl = "https://e.test/x"\n'
            f'checksum = "{SHA}"\n'
            '[[steps]]\naction = "configure_make"\nsource_dir = "."\n',
            "not unpacked",
        ),
        (
            '[[steps]]\naction = "download_archive"\nurl = "https://e.test/x.tar.gz"\n'
            '[[steps]]\naction = "run_command"\ncommand = "sed -i s/a/b/ x.c"\n'
            '[[steps]]\naction = "configure_make"\nsource_dir = "."\n',
            "beside run_command",
        ),
    ],
)
def test_a_build_with_nothing_it_can_build_from_is_refused(steps: str, why: str) -> None:
    recipe = parse_recipe(f'[metadata]\nname = "x"\n\n{steps}')
    with pytest.raises(RecipeError, match=why):
        render_recipe(recipe, V, LINUX)


# tsuku's curl recipe's shape: the build, then set_rpath on what it installed (named
# under tsuku's ``.install/``), then directory-mode binaries.
RPATH_STEP = """
[[steps]]
action = "set_rpath"
binaries = [".install/bin/xmllint"]
rpath = "$ORIGIN/../lib"
"""


def _with_rpath(step: str = RPATH_STEP) -> str:
    head, tail = LIBXML2.split('[[steps]]\naction = "install_binaries"')
    return f'{head}{step}\n[[steps]]\naction = "install_binaries"{tail}'


def test_set_rpath_is_planned_as_written_and_runs_after_the_build() -> None:
    (step,) = [s for s in _plan(_with_rpath())["steps"] if s["action"] == "set_rpath"]
    assert step == {
        "action": "set_rpath",
        "params": {"binaries": [".install/bin/xmllint"], "rpath": "$ORIGIN/../lib"},
        "evaluable": True,
        "deterministic": True,
    }
    (rendered,) = render_recipe(parse_recipe(_with_rpath()), V, LINUX)
    assert rendered.build is not None
    assert rendered.build.rpaths == (("bin/xmllint", "$ORIGIN/../lib"),)
    default = _with_rpath(RPATH_STEP.replace('rpath = "$ORIGIN/../lib"\n', ""))
    (rendered,) = render_recipe(parse_recipe(default), V, LINUX)
    assert rendered.build is not None and rendered.build.rpaths[0][1] == "$ORIGIN/../lib"


@pytest.mark.parametrize(
    ("rpath", "why"),
    [
        ("/usr/lib", "absolute rpath part"),
        # tsuku's spelling of a dependency's directory is {libs_dir}/<name>-{deps.<name>.version}
        ("$ORIGIN/../lib:{libs_dir}/openssl-3.6.0/lib", "a dependency's directory is"),
        ("lib", "must start with \\$ORIGIN"),
    ],
)
def test_an_rpath_tsuku_refuses_or_that_needs_dependencies_is_refused(rpath: str, why: str) -> None:
    text = _with_rpath(RPATH_STEP.replace("$ORIGIN/../lib", rpath))
    with pytest.raises(RecipeError, match=why):
        render_recipe(parse_recipe(text), V, LINUX)
    # What install refuses, a registry's coverage counts as unsupported.
    kind = "an absolute" if "absolute" in why else "a refused"
    assert unsupported_actions(parse_recipe(text)) == [f"set_rpath with {kind} rpath"]
    assert unsupported_actions(parse_recipe(_with_rpath(RPATH_STEP))) == []


def test_set_rpath_without_a_build_is_not_run_on_the_host() -> None:
    text = LIBXML2.replace('[[steps]]\naction = "setup_build_env"\n', RPATH_STEP)
    text = text.split('[[steps]]\naction = "configure_make"')[0]
    text += '[[steps]]\naction = "install_binaries"\ninstall_mode = "directory"\n'
    with pytest.raises(RecipeError, match="set_rpath without a configure_make"):
        render_recipe(parse_recipe(text), V, LINUX)


# tsuku's ninja recipe's shape (cmake_build), written here again.
NINJA = f"""
[metadata]
name = "ninja"

[[steps]]
action = "download_file"
url = "https://example.test/ninja-{{version}}.tar.gz"
checksum = "{SHA}"

[[steps]]
action = "extract"
archive = "ninja-{{version}}.tar.gz"

[[steps]]
action = "cmake_build"
source_dir = "ninja-{{version}}"
executables = ["ninja"]
cmake_args = ["-DBUILD_TESTING=OFF", "-DX=$<CONFIG>-{{version}}"]

[verify]
command = "ninja --version"
"""


def test_cmake_build_is_planned_as_tsuku_plans_it() -> None:
    (step,) = [s for s in _plan(NINJA.replace("$<CONFIG>-", ""))["steps"][2:]]
    assert step == {
        "action": "cmake_build",
        "params": {
            "cmake_args": ["-DBUILD_TESTING=OFF", "-DX=2.15.1"],
            "executables": ["ninja"],
            "source_dir": "ninja-2.15.1",
        },
        "evaluable": False,
        "deterministic": False,
    }
    (rendered,) = render_recipe(parse_recipe(NINJA.replace("$<CONFIG>-", "")), V, LINUX)
    assert rendered.build == Build(
        index=2,
        source_dir="ninja-2.15.1",
        kind="cmake_build",
        args=("-DBUILD_TESTING=OFF", "-DX=2.15.1"),
        build_type="Release",
        executables=("ninja",),
    )
    assert [b.src for b in rendered.binaries] == ["bin/ninja"]


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('cmake_args = ["-DX=$<CONFIG>"]', r"cmake_args\[0\]"),  # tsuku refuses $ too
        ('cmake_args = ["-DX=1; id"]', r"cmake_args\[0\]"),
        ('build_type = "Release; id"', "build_type"),
    ],
)
def test_what_tsuku_refuses_in_a_cmake_build_is_refused(line: str, where: str) -> None:
    text = NINJA.replace('cmake_args = ["-DBUILD_TESTING=OFF", "-DX=$<CONFIG>-{version}"]', line)
    with pytest.raises(RecipeParseError, match=where):
        parse_recipe(text)


BUILT_AGAINST = """
[metadata]
name = "curl"
dependencies = ["openssl", "make", "pkg-config"]
extra_dependencies = ["zlib", "openssl"]

[[steps]]
action = "download"
url = "https://curl.se/download/curl-{version}.tar.gz"
checksum = "SHA"

[[steps]]
action = "extract"
archive = "curl-{version}.tar.gz"

[[steps]]
action = "setup_build_env"

[[steps]]
action = "configure_make"
when = { os = ["linux"] }
source_dir = "curl-{version}"
executables = ["curl"]
dependencies = ["nghttp2"]

[[steps]]
action = "install_binaries"
install_mode = "directory"
binaries = ["bin/curl"]
""".replace("SHA", SHA)


def test_build_dependencies_are_tsukus_install_time_dependencies_less_the_toolchain() -> None:
    recipe = parse_recipe(BUILT_AGAINST)
    # dependencies, extra_dependencies and the build step's own, each once, in order;
    # make and pkg-config are the build image's (tsuku installs them as recipes).
    assert build_dependencies(recipe, LINUX) == ("openssl", "zlib", "nghttp2")
    # Where nothing is built there is nothing to build against.
    assert build_dependencies(recipe, Platform("darwin", "arm64")) == ()
    binary = parse_recipe(BUILT_AGAINST.split("[[steps]]")[0] + BUILD_FREE_STEPS)
    assert binary.metadata.dependencies == ("openssl", "make", "pkg-config")
    assert build_dependencies(binary, LINUX) == ()


BUILD_FREE_STEPS = """
[[steps]]
action = "download_archive"
url = "https://example.com/curl-{version}.tar.gz"
binaries = ["curl"]
"""
