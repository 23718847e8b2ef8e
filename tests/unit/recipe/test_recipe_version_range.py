"""Version-ranged steps (``when = { version = ... }``): parsed, written back, rendered
by the installer's renderer and by the independent fixture reader alike."""

from __future__ import annotations

import tomllib

import pytest

from tests.unit.create.named_recipes import CHARM
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    NoMatchingStep,
    RecipeParseError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
    render_recipe,
    require_supported,
)
from tsukud.recipe.version_range import in_range, parse_range
from tsukud.testing.asset_names import expected_assets, tsuku_assets, version_in

LINUX_AMD, LINUX_ARM, MAC_AMD, MAC_ARM = STANDARD_PLATFORMS


@pytest.mark.parametrize(
    ("version", "condition", "inside"),
    [
        ("0.12.6", ">=0.12.5", True),
        ("0.12.5", ">=0.12.5", True),
        ("0.12.4", ">=0.12.5", False),
        ("0.12.10", ">0.12.9", True),  # numbers, not strings
        ("1.2", "==1.2.0", True),  # trailing zeros do not count
        ("1.5.0", ">=1.0, <2.0", True),
        ("2.0.0", ">=1.0, <2.0", False),
        ("1.4.0", "1.4.0", True),  # a bare version means ==
        ("1.4.1", "!=1.4.0", True),
    ],
)
def test_range_membership_agrees_with_the_independent_reader(
    version: str, condition: str, inside: bool
) -> None:
    assert in_range(version, condition) is inside
    assert version_in(version, condition) is inside


def test_ranges_parse_into_clauses() -> None:
    assert parse_range(">=0.12.5, <1.0") == ((">=", "0.12.5"), ("<", "1.0"))
    with pytest.raises(ValueError, match="not a version condition"):
        parse_range(">=")


def test_parse_write_round_trip_keeps_the_range() -> None:
    recipe = parse_recipe(CHARM, "charm.toml")
    assert recipe.steps[0].when is not None and recipe.steps[0].when.version == ">=0.12.5"
    text = dump_recipe(recipe)
    assert parse_recipe(text, "charm.toml") == recipe
    # Written as overrides (never as when.version on [[steps]], which tsuku cannot read).
    data = tomllib.loads(text)
    assert "steps" not in data
    overrides = data["version_overrides"]
    assert [o["version"] for o in overrides] == [">=0.12.5", "<0.12.5"]
    assert overrides[1]["steps"][0]["when"] == {"os": ["linux"]}
    assert "when" not in overrides[0]["steps"][0]


NEWEST_PLUS_OVERRIDE = """
[metadata]
name = "charm"

[[steps]]
action = "github_archive"
repo = "charmbracelet/charm"
asset_pattern = "charm_{version}_{os}_{arch}.tar.gz"
binaries = ["charm"]
os_mapping = { linux = "Linux", darwin = "Darwin" }
arch_mapping = { amd64 = "x86_64" }

[verify]
command = "charm --version"

[[version_overrides]]
version = "<0.12.5"

[[version_overrides.steps]]
action = "github_archive"
when = { os = ["linux"] }
repo = "charmbracelet/charm"
asset_pattern = "charm_{version}_{os}_{arch}.tar.gz"
binaries = ["charm"]
arch_mapping = { amd64 = "x86_64" }
"""


def test_an_override_replaces_the_newest_naming_in_its_range_only() -> None:
    recipe = parse_recipe(NEWEST_PLUS_OVERRIDE, "charm.toml")
    assert dump_recipe(recipe) == NEWEST_PLUS_OVERRIDE.lstrip("\n")
    new = render_recipe(recipe, ResolvedVersion("0.12.6", "v0.12.6"), LINUX_AMD)
    old = render_recipe(recipe, ResolvedVersion("0.12.4", "v0.12.4"), LINUX_AMD)
    assert [s.asset_name for s in new] == ["charm_0.12.6_Linux_x86_64.tar.gz"]
    assert [s.asset_name for s in old] == ["charm_0.12.4_linux_x86_64.tar.gz"]
    # The override has no darwin step: at its versions darwin is not installable,
    # rather than falling back to the newest naming.
    with pytest.raises(NoMatchingStep, match=r"at version 0\.12\.4"):
        render_recipe(recipe, ResolvedVersion("0.12.4", "v0.12.4"), MAC_ARM)
    data = tomllib.loads(NEWEST_PLUS_OVERRIDE)
    for version in ("0.12.6", "0.12.4"):
        ours = render_recipe(recipe, ResolvedVersion(version, f"v{version}"), LINUX_AMD)
        assert [a.name for a in expected_assets(data, version, "linux", "amd64")] == [
            s.asset_name for s in ours
        ]


def test_tsuku_reads_the_newest_naming_once_where_when_version_made_it_download_two() -> None:
    """tsuku runs every [[steps]] entry whose ``when`` matches and drops ``version``
    from ``when``: the old inline form is two downloads for it, the override form one."""
    inline = tomllib.loads(CHARM)
    assert len(tsuku_assets(inline, "0.12.6", "linux", "amd64")) == 2
    written = tomllib.loads(dump_recipe(parse_recipe(NEWEST_PLUS_OVERRIDE, "charm.toml")))
    assert [a.name for a in tsuku_assets(written, "0.12.6", "linux", "amd64")] == [
        "charm_0.12.6_Linux_x86_64.tar.gz"
    ]


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('version = "soon"', r"version_overrides\[0\]\.version"),
        ('version = "<1.0"\nextra_key = 1', r"version_overrides\[0\]\.extra_key"),
    ],
)
def test_a_malformed_override_is_a_parse_error_naming_the_field(text: str, field: str) -> None:
    bad = NEWEST_PLUS_OVERRIDE.replace('version = "<0.12.5"', text)
    with pytest.raises(RecipeParseError, match=field):
        parse_recipe(bad, "charm.toml")


def test_an_overrides_step_has_no_range_of_its_own() -> None:
    bad = NEWEST_PLUS_OVERRIDE.replace('when = { os = ["linux"] }', 'when = { version = "<1" }')
    with pytest.raises(RecipeParseError, match=r"version_overrides\[0\]\.steps\[0\]\.when"):
        parse_recipe(bad, "charm.toml")


def test_a_malformed_range_is_a_parse_error_naming_the_field() -> None:
    with pytest.raises(RecipeParseError, match=r"steps\[0\]\.when\.version"):
        parse_recipe(CHARM.replace('">=0.12.5"', '"newer than 0.12"'), "charm.toml")


def test_render_picks_the_naming_of_the_resolved_release() -> None:
    recipe = parse_recipe(CHARM, "charm.toml")
    new = render_recipe(recipe, ResolvedVersion("0.12.6", "v0.12.6"), LINUX_AMD)
    old = render_recipe(recipe, ResolvedVersion("0.12.4", "v0.12.4"), LINUX_AMD)
    assert [s.asset_name for s in new] == ["charm_0.12.6_Linux_x86_64.tar.gz"]
    assert [s.asset_name for s in old] == ["charm_0.12.4_linux_x86_64.tar.gz"]
    assert [s.index for s in old] == [1]


def test_a_platform_older_naming_lacks_has_no_step_there_only() -> None:
    recipe = parse_recipe(CHARM, "charm.toml")
    assert render_recipe(recipe, ResolvedVersion("0.12.6", "v0.12.6"), MAC_ARM)
    with pytest.raises(NoMatchingStep, match=r"at version 0\.12\.4"):
        render_recipe(recipe, ResolvedVersion("0.12.4", "v0.12.4"), MAC_ARM)
    # Before a version is resolved, the ranged steps are all candidates.
    assert [i for i, _ in require_supported(recipe, LINUX_AMD)] == [0, 1]


def test_the_independent_reader_selects_by_version_too() -> None:
    data = tomllib.loads(CHARM)
    assert [a.name for a in expected_assets(data, "0.12.6", "linux", "amd64")] == [
        "charm_0.12.6_Linux_x86_64.tar.gz"
    ]
    assert [a.name for a in expected_assets(data, "0.12.4", "linux", "amd64")] == [
        "charm_0.12.4_linux_x86_64.tar.gz"
    ]
    assert expected_assets(data, "0.12.4", "darwin", "arm64") == []
