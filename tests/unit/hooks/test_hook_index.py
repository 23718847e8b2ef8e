"""The binary index: what goes in, in which order, and how the recipes are read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tsukud.hooks.index import (
    HEADER,
    build_index,
    command_name,
    index_path,
    lookup,
    parse_index,
    plan_index,
    render_index,
    write_index,
)
from tsukud.hooks.sources import (
    RecipeReader,
    installed_binaries,
    manifest_names,
    recipe_binaries,
)
from tsukud.recipe.toml_io import parse_recipe

STERN = """\
[metadata]
name = "stern"

[[steps]]
action = "github_archive"
when = { os = ["linux"] }
repo = "stern/stern"
asset_pattern = "stern_{version}_linux_{arch}.tar.gz"
binaries = ["stern"]

[[steps]]
action = "github_archive"
when = { os = ["darwin"] }
repo = "stern/stern"
asset_pattern = "stern_{version}_darwin_{arch}.tar.gz"
binaries = ["stern"]
"""

RIPGREP = """\
[metadata]
name = "ripgrep"

[[steps]]
action = "github_archive"
repo = "BurntSushi/ripgrep"
asset_pattern = "ripgrep-{version}-x86_64-unknown-linux-musl.tar.gz"
strip_dirs = 1
binaries = [{ src = "rg", dest = "bin/rg" }, "doc/rg.exe"]
"""

GH_FILE = """\
[metadata]
name = "jq"

[[steps]]
action = "github_file"
repo = "jqlang/jq"
asset_pattern = "jq-linux-{arch}"
binary = "jq"
"""

HOMEBREW = """\
[metadata]
name = "wget2"
binaries = ["bin/wget2-extra"]

[[steps]]
action = "homebrew"
formula = "wget2"
binaries = ["bin/wget2", { src = "x", dest = "bin/wget2-noinstall" }]
"""


def test_header_first_then_sorted_by_binary_and_source_rank() -> None:
    text = build_index(
        [
            ("stern", "registry", ["stern"]),
            ("ripgrep", "registry", ["rg"]),
            ("rg-fork", "local", ["rg"]),
            ("age", "local", ["age", "age-keygen"]),
        ],
        {"ripgrep": ["rg"]},
    )
    lines = text.splitlines()
    assert lines[0] == HEADER
    assert lines[1:] == [
        "age\tage\tlocal",
        "age-keygen\tage\tlocal",
        "rg\tripgrep\tinstalled",
        "rg\trg-fork\tlocal",
        "stern\tstern\tregistry",
    ]
    # The first line for a binary is the best: installed, then local, then registry.
    assert lookup(text, "rg") == ("ripgrep", "installed")
    assert lookup(text, "age-keygen") == ("age", "local")
    assert lookup(text, "ag") is None


def test_a_pair_seen_twice_keeps_its_best_source() -> None:
    text = build_index([("k9s", "registry", ["k9s"]), ("k9s", "local", ["k9s"])], {})
    assert parse_index(text) == [("k9s", "k9s", "local")]


def test_no_binaries_means_the_tool_name() -> None:
    text = build_index([("kind", "registry", [])], {"gotop": []})
    assert parse_index(text) == [("gotop", "gotop", "installed"), ("kind", "kind", "registry")]


def test_names_the_hooks_cannot_look_up_are_dropped() -> None:
    text = build_index(
        [("ok", "local", ["good", "with space", "tab\there", "new\nline", "-dash", ".dot", "c++"])],
        {"bad tool": ["x"]},
    )
    assert [r[0] for r in parse_index(text)] == ["c++", "good"]


def test_installed_is_not_a_recipe_source() -> None:
    with pytest.raises(ValueError, match="local"):
        build_index([("x", "installed", ["x"])], {})


def test_command_name() -> None:
    assert command_name("bin/rg") == "rg"
    assert command_name("rg.exe") == "rg"
    assert command_name("dir\\tool.EXE") == "tool"
    assert command_name("stern") == "stern"


def test_write_is_atomic_and_readable_by_all(tmp_path: Path) -> None:
    path = write_index(str(tmp_path), HEADER + "\nstern\tstern\tregistry\n")
    assert path == index_path(str(tmp_path))
    assert Path(path).read_text().endswith("stern\tstern\tregistry\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    write_index(str(tmp_path), HEADER + "\n")
    assert [p.name for p in Path(path).parent.iterdir()] == ["binary-index.tsv"]  # no temp left


def test_recipe_binaries_from_each_step_kind() -> None:
    assert recipe_binaries(parse_recipe(STERN)) == ["stern"]  # two platforms, one command
    assert recipe_binaries(parse_recipe(RIPGREP)) == ["rg"]  # dest's basename, .exe dropped
    assert recipe_binaries(parse_recipe(GH_FILE)) == ["jq"]
    assert recipe_binaries(parse_recipe(HOMEBREW)) == [
        "wget2",
        "wget2-noinstall",
        "wget2-extra",  # [metadata] binaries
    ]


def test_reader_scans_local_registry_and_manifest(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "stern.toml").write_text(STERN)
    (tmp_path / "recipes" / ".stern.toml.tmp").write_text("half written")
    (tmp_path / "registry" / "r").mkdir(parents=True)
    (tmp_path / "registry" / "r" / "ripgrep.toml").write_text(RIPGREP)
    (tmp_path / "registry" / "manifest.json").write_text(
        '{"schema_version": 1, "recipes": [{"name": "ripgrep"}, {"name": "K9s"}, {"x": 1}]}'
    )
    reader = RecipeReader()
    found = reader.scan(tmp_path)
    assert sorted(found) == [
        ("k9s", "registry", [], []),  # only in the manifest: indexed under its name
        ("ripgrep", "registry", ["rg"], []),  # cached recipe: its real command, not "ripgrep"
        ("stern", "local", ["stern"], []),
    ]
    text = build_index(found, {})
    assert lookup(text, "rg") == ("ripgrep", "registry")
    assert lookup(text, "ripgrep") is None


def test_reader_falls_back_to_raw_toml_and_skips_garbage(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    # The typed model refuses this (github_archive without repo), the raw TOML still names it.
    (tmp_path / "recipes" / "odd.toml").write_text(
        '[metadata]\nname = "odd"\n[[steps]]\naction = "github_archive"\nbinaries = ["bin/oddc"]\n'
    )
    (tmp_path / "recipes" / "broken.toml").write_text("this is [ not toml")
    reader = RecipeReader()
    assert reader.scan(tmp_path) == [("odd", "local", ["oddc"], [])]
    assert set(reader.errors) == {
        str(tmp_path / "recipes" / "broken.toml"),
        str(tmp_path / "recipes" / "odd.toml"),
    }


def test_reader_rereads_only_changed_files(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    f = tmp_path / "recipes" / "stern.toml"
    f.write_text(STERN)
    reader = RecipeReader()
    assert reader.scan(tmp_path) == [("stern", "local", ["stern"], [])]
    f.write_text(STERN.replace('binaries = ["stern"]', 'binaries = ["stern2"]', 1))
    assert reader.scan(tmp_path) == [("stern", "local", ["stern2", "stern"], [])]
    f.unlink()
    assert reader.scan(tmp_path) == []
    assert reader._cache == {}


def test_names_a_recipe_satisfies_are_its_commands(tmp_path: Path) -> None:
    """`hx` → helix: from the manifest (recipe not cached) and from a cached recipe's
    [metadata] satisfies; the tool's own command stays indexed."""
    (tmp_path / "registry" / "b").mkdir(parents=True)
    (tmp_path / "registry" / "b" / "bat.toml").write_text(
        STERN.replace('name = "stern"', 'name = "bat"\nsatisfies = { aliases = ["batcat"] }')
        .replace("stern/stern", "sharkdp/bat")
        .replace('binaries = ["stern"]', 'binaries = ["bat"]')
    )
    (tmp_path / "registry" / "manifest.json").write_text(
        '{"schema_version": 1, "recipes": ['
        '{"name": "helix", "satisfies": {"aliases": ["hx"]}},'
        '{"name": "bat", "satisfies": {"homebrew": ["bat-extras"]}},'
        '{"name": "jq", "satisfies": "not a table"}]}'
    )
    found = sorted(RecipeReader().scan(tmp_path))
    assert found == [
        ("bat", "registry", ["bat"], ["batcat", "bat-extras"]),
        ("helix", "registry", [], ["hx"]),
        ("jq", "registry", [], []),
    ]
    text = build_index(found, {})
    assert lookup(text, "hx") == ("helix", "registry")
    assert lookup(text, "helix") == ("helix", "registry")
    assert lookup(text, "batcat") == ("bat", "registry")


def test_manifest_missing_or_malformed(tmp_path: Path) -> None:
    assert manifest_names(tmp_path / "nope.json") == []
    (tmp_path / "m.json").write_text("[1, 2]")
    assert manifest_names(tmp_path / "m.json") == []
    (tmp_path / "m.json").write_text("{not json")
    assert manifest_names(tmp_path / "m.json") == []


def test_installed_payload_shapes() -> None:
    assert installed_binaries(
        {
            "ripgrep": {"binaries": {"rg": {"path": "bin/rg", "sha256": "0" * 64}}},
            "old": {"binaries": ["bin/oldtool"]},
            "none": {},
            # A toolchain installed for another tool: nothing of it in bin/.
            "nodejs": {"binaries": {"node": {"path": "bin/node"}}, "hidden": True},
        }
    ) == {"ripgrep": ["rg"], "old": ["oldtool"], "none": []}


def test_an_alias_claim_never_displaces_the_recipe_named_after_the_command() -> None:
    """Issue 33: a registry entry `a-kube` satisfying `k9s` beside the real k9s recipe
    sorted first by name; now the claim is dropped and listed, whatever the sources."""
    plan = plan_index(
        [
            ("a-kube", "registry", [], ["k9s", "kube-a"]),
            ("k9s", "registry", []),
            ("0-local", "local", ["x"], ["k9s"]),  # a better source does not help either
        ],
        {},
    )
    text = render_index(plan)
    assert lookup(text, "k9s") == ("k9s", "registry")
    assert [r for r in parse_index(text) if r[0] == "k9s"] == [("k9s", "k9s", "registry")]
    assert plan.ignored == [("k9s", "0-local", "local"), ("k9s", "a-kube", "registry")]
    assert "#ignored\tk9s\ta-kube\tregistry\n" in text
    assert lookup(text, "kube-a") == ("a-kube", "registry")  # an unclaimed alias still works
    # A tool that provides the command as a real binary is no alias claim: kept, but the
    # recipe named after the command comes first at the same source.
    text = build_index([("aa", "registry", ["k9s"]), ("k9s", "registry", [])], {})
    assert parse_index(text) == [("k9s", "k9s", "registry"), ("k9s", "aa", "registry")]


def test_several_claimants_none_named_after_the_command_are_marked_ambiguous() -> None:
    text = build_index([("a-kube", "registry", [], ["kx"]), ("b-kube", "registry", [], ["kx"])], {})
    assert "kx\ta-kube\tregistry\tb-kube\n" in text  # the hooks list them, install none
    assert lookup(text, "kx") == ("a-kube", "registry")
    # One claimant, the recipe named after it, or an installed tool: one clear answer.
    for recipes, installed in (
        ([("a-kube", "registry", [], ["kx"])], {}),
        ([("a-kube", "registry", [], ["kx"]), ("kx", "registry", [])], {}),
        ([("a-kube", "registry", [], ["kx"])], {"b-kube": ["kx"]}),
    ):
        rows = [x for x in build_index(recipes, installed).splitlines() if x[0] != "#"]
        assert all(len(x.split("\t")) == 3 for x in rows), (recipes, rows)
