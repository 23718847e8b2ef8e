"""``set_rpath`` naming a build dependency's library directory, as tsuku's registry
writes it (its curl recipe: ``{libs_dir}/openssl-{deps.openssl.version}/lib``).

tsuku fills ``{libs_dir}`` with ``$TSUKU_HOME/libs`` and ``{deps.<name>.version}`` with
the dependency's version, then accepts an absolute rpath part only inside that libs
directory (internal/actions/set_rpath.go ``validateRpath``). Here the dependency is
installed first as its own tool (``recipe/build_deps.py``), so the part becomes that
tool's directory when the build runs (``recipe/build.py`` ``fill_rpath``); a part that
names anything else (another recipe, a path outside the dependency, a literal absolute
path) is refused, never guessed. The recipe below is this project's own, shaped like
curl's: a library dependency, a configure_make build, then set_rpath.
"""

from __future__ import annotations

import pytest

from tsukud.recipe import (
    Platform,
    RecipeError,
    ResolvedVersion,
    parse_recipe,
    render_recipe,
    unsupported_actions,
)
from tsukud.recipe.build import fill_rpath, rpath_dependencies, rpath_problem

LINUX = Platform("linux", "amd64", "glibc")
V = ResolvedVersion("1.4.0", "v1.4.0")
DEP_PART = "{libs_dir}/libgreet-{deps.libgreet.version}/lib"
RPATH = f"$ORIGIN/../lib:{DEP_PART}"


def greeter(rpath: str = RPATH, dependencies: str = '["libgreet"]') -> str:
    return f"""
[metadata]
name = "greeter"
dependencies = {dependencies}

[version]
source = "github"
github_repo = "o/greeter"

[[steps]]
action = "download_file"
url = "https://example.test/greeter-{{version}}.tar.gz"
checksum = "{"c" * 64}"

[[steps]]
action = "extract"
archive = "greeter-{{version}}.tar.gz"
format = "tar.gz"

[[steps]]
action = "configure_make"
source_dir = "greeter-{{version}}"
executables = ["greeter"]

[[steps]]
action = "set_rpath"
binaries = [".install/bin/greeter"]
rpath = "{rpath}"

[[steps]]
action = "install_binaries"
install_mode = "directory"
outputs = ["bin/greeter"]
"""


def test_a_build_dependencys_directory_is_kept_for_the_build_to_fill() -> None:
    recipe = parse_recipe(greeter())
    assert unsupported_actions(recipe) == []
    (rendered,) = render_recipe(recipe, V, LINUX)
    assert rendered.build is not None
    # As written: only the build knows where libgreet was installed.
    assert rendered.build.rpaths == (("bin/greeter", RPATH),)
    assert rpath_dependencies(RPATH) == ("libgreet",)
    tools = {"libgreet": "/home/me/.tsuku/tools/libgreet-2.1"}
    assert fill_rpath(RPATH, tools) == "$ORIGIN/../lib:/home/me/.tsuku/tools/libgreet-2.1/lib"


def test_a_dependency_the_install_did_not_install_is_never_guessed() -> None:
    with pytest.raises(KeyError, match="libgreet"):
        fill_rpath(RPATH, {"zlib": "/home/me/.tsuku/tools/zlib-1.3"})


@pytest.mark.parametrize(
    ("rpath", "dependencies", "why"),
    [
        # a recipe the build does not install first
        ("{libs_dir}/other-{deps.other.version}/lib", '["libgreet"]', "other is not a build"),
        # the build image's toolchain is never installed, so it has no directory
        ("{libs_dir}/make-{deps.make.version}/lib", '["libgreet", "make"]', "make is not"),
        # one name for the directory, another for the version
        ("{libs_dir}/libgreet-{deps.other.version}/lib", '["libgreet"]', "a dependency's dir"),
        # out of the dependency's directory
        ("{libs_dir}/libgreet-{deps.libgreet.version}/../../etc", '["libgreet"]', "dependency's"),
        ("{libs_dir}/libgreet-{deps.libgreet.version}/lib/..", '["libgreet"]', "dependency's"),
        # the libs directory itself, or another placeholder inside the path
        ("{libs_dir}", '["libgreet"]', "a dependency's dir"),
        ("{libs_dir}/libgreet-{deps.libgreet.version}/{work_dir}", '["libgreet"]', "dependency's"),
        # a literal absolute path stays refused
        ("$ORIGIN/../lib:/usr/lib", '["libgreet"]', "absolute rpath part"),
    ],
)
def test_an_rpath_part_naming_anything_else_is_refused(
    rpath: str, dependencies: str, why: str
) -> None:
    recipe = parse_recipe(greeter(rpath, dependencies))
    with pytest.raises(RecipeError, match=why):
        render_recipe(recipe, V, LINUX)
    kind = "an absolute" if why.startswith("absolute") else "a refused"
    assert unsupported_actions(recipe) == [f"set_rpath with {kind} rpath"]


def test_the_dependency_may_be_named_by_the_build_step_or_extra_dependencies() -> None:
    on_step = greeter(dependencies="[]").replace(
        'executables = ["greeter"]', 'executables = ["greeter"]\ndependencies = ["libgreet"]'
    )
    extra = greeter(dependencies='[]\nextra_dependencies = ["libgreet"]')
    for text in (on_step, extra):
        recipe = parse_recipe(text)
        assert unsupported_actions(recipe) == []
        (rendered,) = render_recipe(recipe, V, LINUX)
        assert rendered.build is not None and rendered.build.rpaths[0][1] == RPATH


def test_rpath_problem_reads_each_part_on_its_own() -> None:
    assert rpath_problem(RPATH, ("libgreet",)) is None
    assert rpath_problem(RPATH) is not None  # no dependencies: nothing to name
    two = f"{RPATH}:{{libs_dir}}/zlib-{{deps.zlib.version}}/lib"
    assert rpath_problem(two, ("libgreet", "zlib")) is None
    assert rpath_dependencies(two) == ("libgreet", "zlib")
