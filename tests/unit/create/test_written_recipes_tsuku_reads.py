"""Every recipe the matcher writes for the fixtures installs the same asset when tsuku
(Go) reads it as when this project does.

tsuku has no ``when.version``: it drops the key and runs *every* ``[[steps]]`` entry
whose ``when`` matches. Recipes that carried older namings as version-ranged steps made
it download every naming of a release (issue 30: 109 of 1,803 held-out recipes). The
older namings now live in ``[[version_overrides]]``, which tsuku ignores whole. This test
writes each recipe to TOML, as ``create`` saves it, and reads the text both ways with
the independent reader (``tsukud.testing.asset_names``): tsuku's reading
(``tsuku_assets``) and this project's (``expected_assets``), and the renderer's
answer, at the newest release on each platform the case has a truth for.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from tests.shared import RELEASES, SHARED, require
from tsukud.create.assets import release_from_api
from tsukud.create.matcher import candidate_to_recipe, match_releases
from tsukud.create.static_checks import check_recipe
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    RecipeError,
    ResolvedVersion,
    dump_recipe,
    render_recipe,
    tag_to_version,
    version_source,
)
from tsukud.recipe.release import Release
from tsukud.testing.asset_names import expected_assets, tsuku_assets
from tsukud.validation.findings import errors

AQUA = SHARED / "fixtures" / "aqua-dev"
SHARDS = 6


@dataclass(frozen=True)
class Case:
    id: str
    repo: str
    tool: str
    releases: list[Release]
    platforms: tuple[str, ...]


def _cases() -> Iterator[Case]:
    for case in json.loads((require(AQUA) / "cases.json").read_text()):
        owner, _, name = case["repo"].partition("/")
        data = json.loads((AQUA / "repos" / f"{owner}__{name}.json").read_text())
        releases = [release_from_api(r) for r in data["releases"]]
        yield Case(case["id"], case["repo"], case["tool"], releases, tuple(case["truth"]))
    for path in sorted(require(RELEASES).glob("*.json")):
        data = json.loads(path.read_text())
        repo = data["repo"]
        releases = [release_from_api(r) for r in data["releases"]]
        platforms = tuple(p.key for p in STANDARD_PLATFORMS)
        yield Case(f"real:{repo}", repo, repo.rpartition("/")[2], releases, platforms)


@dataclass
class Tally:
    written: int = 0
    with_overrides: int = 0
    compared: int = 0


def _check(case: Case, tally: Tally) -> list[str]:
    """What differs between the readings of ``case``'s written recipe (empty: none)."""
    result = match_releases(case.releases, repo=case.repo, tool=case.tool)
    best = result.best
    if best is None or not result.confident:
        return []
    recipe = candidate_to_recipe(best, repo=case.repo, name=case.tool, releases=case.releases)
    if errors(check_recipe(recipe, case.releases, expected=best.expected)):
        return []  # not written under --deterministic-only
    tally.written += 1
    data = tomllib.loads(dump_recipe(recipe))
    tally.with_overrides += "version_overrides" in data
    assert all("version" not in (s.get("when") or {}) for s in data.get("steps", [])), case.id
    prefix = version_source(recipe).tag_prefix
    newest = next(
        (r for r in case.releases if tag_to_version(r.tag, prefix) is not None and r.assets),
        None,
    )
    if newest is None:
        return []
    version = tag_to_version(newest.tag, prefix)
    assert version is not None
    problems = []
    for target in STANDARD_PLATFORMS:
        if target.key not in case.platforms:
            continue
        try:
            steps = render_recipe(
                recipe, ResolvedVersion(version, newest.tag), target, assets=newest.assets
            )
            rendered = [s.asset_name for s in steps]
        except RecipeError:
            rendered = []
        tsuku = [a.name for a in tsuku_assets(data, version, target.os, target.arch)]
        ours = [a.name for a in expected_assets(data, version, target.os, target.arch)]
        if not rendered:
            continue
        tally.compared += 1
        if len(tsuku) > 1:
            problems.append(f"{case.id} {target.key}: tsuku downloads {tsuku}")
        # A wildcard pattern names no asset for the independent reader; the renderer
        # resolved it against the release, and tsuku matches the same pattern.
        if ours and (tsuku != ours or ours != rendered):
            problems.append(f"{case.id} {target.key}: tsuku {tsuku}, ours {ours}, {rendered}")
    return problems


@pytest.mark.parametrize("shard", range(SHARDS))
def test_tsuku_and_this_project_read_every_written_recipe_alike(shard: int) -> None:
    tally = Tally()
    problems: list[str] = []
    for index, case in enumerate(_cases()):
        if index % SHARDS == shard:
            problems += _check(case, tally)
    assert problems == []
    # Not vacuous: most cases are written and compared, and some carry overrides.
    assert tally.written >= 130 and tally.compared >= 4 * 100, tally
    assert tally.with_overrides >= 4, tally
