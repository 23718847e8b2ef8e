"""``install_libraries`` and ``link_dependencies``: read with tsuku's checks, planned
as tsuku plans these primitives (parameters as written, evaluable and deterministic:
both are in its ActionEvaluability table and its primitives' deterministic set), and
rendered onto the download they act on."""

from __future__ import annotations

import re

import pytest

from tsukud.install.homebrew.deps import runtime_dependencies
from tsukud.recipe import (
    Platform,
    RecipeParseError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
    render_recipe,
    unsupported_actions,
)
from tsukud.recipe.plan import plan_recipe

LINUX = Platform("linux", "amd64", "glibc")
DARWIN = Platform("darwin", "arm64")
V = ResolvedVersion("0.2.5", "v0.2.5")
SHA = "c" * 64

# tsuku's libyaml recipe's shape, from a plain download, and a tool linking it.
LIBYAML = """
[metadata]
name = "libyaml"
type = "library"

[[steps]]
action = "download_archive"
url = "https://example.test/libyaml-{version}.tar.gz"
strip_dirs = 1

[[steps]]
action = "install_libraries"
patterns = ["lib/*.so*", "lib/libyaml-{version}.a"]
"""
RUBY = f"""
[metadata]
name = "ruby"
runtime_dependencies = ["zlib"]

[[steps]]
action = "download_file"
url = "https://example.test/ruby-{{version}}.tar.gz"
checksum = "{SHA}"

[[steps]]
action = "extract"
archive = "ruby-{{version}}.tar.gz"

[[steps]]
action = "install_binaries"
binaries = ["bin/ruby"]

[[steps]]
action = "link_dependencies"
library = "libyaml"
when = {{ os = ["linux"] }}
"""


def test_a_library_recipe_installs_its_files_and_no_command() -> None:
    recipe = parse_recipe(LIBYAML)
    assert unsupported_actions(recipe) == []
    (rendered,) = render_recipe(recipe, V, LINUX)
    assert rendered.libraries == ("lib/*.so*", "lib/libyaml-0.2.5.a")
    assert rendered.binaries == ()
    plan = plan_recipe(recipe, V, LINUX, install_dir="/t")
    step = plan.steps[-1]
    assert (step.action, step.params) == (
        "install_libraries",
        {"patterns": ["lib/*.so*", "lib/libyaml-0.2.5.a"]},
    )
    assert step.evaluable and step.deterministic
    assert parse_recipe(dump_recipe(recipe)) == recipe


def test_link_dependencies_names_a_runtime_dependency_and_is_planned_as_written() -> None:
    recipe = parse_recipe(RUBY)
    assert unsupported_actions(recipe) == []
    # Linked into the tool: needed while it is installed, where the step applies.
    assert runtime_dependencies(recipe, LINUX) == ("zlib", "libyaml")
    assert runtime_dependencies(recipe, DARWIN) == ("zlib",)
    (rendered,) = render_recipe(recipe, V, LINUX)  # acts on the tool, not a download
    assert rendered.binaries[0].dest == "bin/ruby"
    plan = plan_recipe(recipe, V, LINUX, install_dir="/t")
    link = plan.steps[-1]
    assert (link.action, link.params) == ("link_dependencies", {"library": "libyaml"})
    assert link.evaluable and link.deterministic
    pinned = parse_recipe(
        RUBY.replace('library = "libyaml"', 'library = "libyaml"\nversion = "0.2.5"')
    )
    assert plan_recipe(pinned, V, LINUX, install_dir="/t").steps[-1].params == {
        "library": "libyaml",
        "version": "0.2.5",
    }


@pytest.mark.parametrize(
    ("line", "where"),
    [
        ('action = "install_libraries"\npatterns = []', "patterns"),
        ('action = "install_libraries"\npatterns = ["/usr/lib/*.so"]', "patterns[0]"),
        ('action = "install_libraries"\npatterns = ["lib/../../x*"]', "patterns[0]"),
        ('action = "install_libraries"', "patterns"),
        ('action = "link_dependencies"\nlibrary = "../libyaml"', "library"),
        ('action = "link_dependencies"\nlibrary = "a/b"', "library"),
        ('action = "link_dependencies"\nlibrary = "x"\nversion = "../1"', "version"),
    ],
)
def test_what_tsuku_refuses_is_refused_when_read(line: str, where: str) -> None:
    text = f'[metadata]\nname = "t"\n[[steps]]\n{line}\n'
    with pytest.raises(RecipeParseError, match=re.escape(f"steps[0].{where}")):
        parse_recipe(text)
