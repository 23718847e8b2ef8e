"""matcher_accuracy: does the deterministic matcher's recipe name the right asset, per
platform (linux/darwin x amd64/arm64) and per release, against a peer in the same run.

Three tiers, each printed for all releases and for the newest release only (what
``install <tool>`` gets):

* ``aqua-dev``: the shared development set (aqua-registry naming rendered at three
  neighbouring releases; ``truth[platform][tag]`` is aqua's asset);
* ``real``: recorded GitHub release lists whose ``labels`` name the asset per platform
  (at the version a label spells, carried to every release that has the same naming);
* ``tsuku``: the fixture recipes, their releases synthesised by the independent reader
  (``tsukud.testing.asset_names``) at three versions with decoys beside them.

A case counts for the matcher only when the pipeline would write the recipe under
``--deterministic-only``: the best candidate is confident and passes the static checks.
The peer is dotbins (PyPI), whose detector sees one release at a time; without it the
peer prints NOT MEASURED with the reason.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import goal, not_measured  # noqa: E402

from tsukud.create.assets import release_from_api  # noqa: E402
from tsukud.create.matcher import candidate_to_recipe, match_releases  # noqa: E402
from tsukud.create.static_checks import check_recipe  # noqa: E402
from tsukud.recipe import (  # noqa: E402  # noqa: E402
    STANDARD_PLATFORMS,
    Platform,
    Recipe,
    RecipeError,
    ResolvedVersion,
    dump_recipe,
    parse_recipe,
    render_recipe,
    tag_to_version,
    version_source,
)
from tsukud.recipe.release import Release  # noqa: E402
from tsukud.testing.asset_names import expected_assets  # noqa: E402

SHARED = REPO.parent / "shared" / "fixtures"
NAME = "matcher_accuracy"
SYNTH_VERSIONS = ("2.4.1", "2.4.0", "2.3.7")

# truth[platform][tag] = asset
Truth = dict[str, dict[str, str]]


@dataclass
class Case:
    id: str
    repo: str
    tool: str
    releases: list[Release]
    truth: Truth


@dataclass
class Score:
    hits: int = 0
    total: int = 0
    newest_hits: int = 0
    newest_total: int = 0
    misses: list[str] = field(default_factory=list)

    def add(self, hit: bool, newest: bool, what: str) -> None:
        self.total += 1
        self.hits += hit
        if newest:
            self.newest_total += 1
            self.newest_hits += hit
        if not hit:
            self.misses.append(what)


# ------------------------------------------------------------------------------ tiers


def aqua_cases() -> Iterator[Case]:
    base = SHARED / "aqua-dev"
    for case in json.loads((base / "cases.json").read_text()):
        owner, _, name = case["repo"].partition("/")
        data = json.loads((base / "repos" / f"{owner}__{name}.json").read_text())
        releases = [release_from_api(r) for r in data["releases"]]
        yield Case(case["id"], case["repo"], case["tool"], releases, case["truth"])


def real_cases() -> Iterator[Case]:
    for path in sorted((SHARED / "releases").glob("*.json")):
        data = json.loads(path.read_text())
        releases = [release_from_api(r) for r in data["releases"]]
        truth: Truth = {}
        for key, label in data.get("labels", {}).items():
            if key not in {p.key for p in STANDARD_PLATFORMS}:
                continue
            at = next((r for r in releases if r.version in label), None)
            template = label.replace(at.version, "{version}") if at else label
            truth[key] = {
                r.tag: template.replace("{version}", r.version)
                for r in releases
                if template.replace("{version}", r.version) in r.assets
            }
        if truth:
            tool = data["repo"].rpartition("/")[2]
            yield Case(f"real:{data['repo']}", data["repo"], tool, releases, truth)


def tsuku_cases() -> Iterator[Case]:
    for path in sorted((SHARED / "tsuku-recipes").glob("*/*.toml")):
        data = tomllib.loads(path.read_text())
        steps = [s for s in data.get("steps", []) if s.get("action") == "github_archive"]
        steps += [s for s in data.get("steps", []) if s.get("action") == "github_file"]
        if not steps:
            continue
        repo, tool = steps[0]["repo"], data["metadata"]["name"]
        truth: Truth = {}
        releases = []
        for version in SYNTH_VERSIONS:
            names = {"checksums.txt", f"{tool}_{version}_windows_amd64.zip"}
            for p in STANDARD_PLATFORMS:
                found = expected_assets(data, version, p.os, p.arch)
                if found:
                    names.add(found[0].name)
                    truth.setdefault(p.key, {})[f"v{version}"] = found[0].name
            releases.append(Release(tag=f"v{version}", assets=tuple(sorted(names))))
        if truth:
            yield Case(f"tsuku:{tool}", repo, tool, releases, truth)


# ---------------------------------------------------------------------------- scoring


def newest_tag(case: Case) -> dict[str, str]:
    """Per platform, the newest tag the truth has (the releases are newest first)."""
    order = {r.tag: i for i, r in enumerate(case.releases)}
    return {
        key: min(tags, key=lambda t: order.get(t, len(order))) for key, tags in case.truth.items()
    }


def ours(case: Case) -> Callable[[Platform, Release], str | None]:
    """What the recipe the matcher would write installs, or nothing when it would not
    write one."""
    result = match_releases(case.releases, repo=case.repo, tool=case.tool)
    best = result.best
    recipe: Recipe | None = None
    if best is not None and result.confident:
        recipe = candidate_to_recipe(best, repo=case.repo, name=case.tool, releases=case.releases)
        if any(
            f.severity == "error"
            for f in check_recipe(recipe, case.releases, expected=best.expected)
        ):
            recipe = None
        else:  # what a user gets: the text create saves, read back
            recipe = parse_recipe(dump_recipe(recipe), f"{case.tool}.toml")

    def pick(target: Platform, release: Release) -> str | None:
        if recipe is None:
            return None
        prefix = version_source(recipe).tag_prefix
        version = tag_to_version(release.tag, prefix)
        if version is None:
            return None
        try:
            steps = render_recipe(
                recipe, ResolvedVersion(version, release.tag), target, assets=release.assets
            )
        except RecipeError:
            return None
        return steps[0].asset_name if steps else None

    return pick


def dotbins_picker() -> tuple[
    Callable[[Case], Callable[[Platform, Release], str | None]] | None, str
]:
    try:
        from dotbins.config import DEFAULTS, _auto_detect_asset
    except ImportError as exc:  # pragma: no cover - depends on the environment
        return None, f"dotbins is not installed ({exc}); pip install -e '.[bench]'"

    def for_case(case: Case) -> Callable[[Platform, Release], str | None]:
        def pick(target: Platform, release: Release) -> str | None:
            assets = [{"name": n, "browser_download_url": ""} for n in release.assets]
            with (
                contextlib.redirect_stdout(io.StringIO()),
                contextlib.redirect_stderr(io.StringIO()),
            ):
                try:
                    found = _auto_detect_asset(
                        target.os,
                        target.arch,
                        assets,  # type: ignore[arg-type]
                        DEFAULTS.copy(),
                        case.tool,
                        case.repo.rpartition("/")[2],
                    )
                except Exception:
                    return None
            return str(found["name"]) if found else None

        return pick

    return for_case, ""


def score(
    cases: Sequence[Case], make: Callable[[Case], Callable[[Platform, Release], str | None]]
) -> Score:
    total = Score()
    platforms = {p.key: p for p in STANDARD_PLATFORMS}
    for case in cases:
        pick = make(case)
        by_tag = {r.tag: r for r in case.releases}
        newest = newest_tag(case)
        for key, tags in case.truth.items():
            for tag, want in tags.items():
                release = by_tag.get(tag)
                got = pick(platforms[key], release) if release is not None else None
                latest = newest[key] == tag
                mark = " (newest)" if latest else ""
                total.add(got == want, latest, f"{case.id} {key} {tag}{mark}: {got} != {want}")
    return total


def pct(hits: int, total: int) -> str:
    return f"{100 * hits / total:.1f} %" if total else "n/a"


def main(argv: Sequence[str] = ()) -> int:
    verbose = "--misses" in argv
    tiers: Mapping[str, list[Case]] = {
        "aqua-dev": list(aqua_cases()),
        "real": list(real_cases()),
        "tsuku": list(tsuku_cases()),
    }
    peer, why = dotbins_picker()
    print(f"{NAME}: cases " + ", ".join(f"{k}={len(v)}" for k, v in tiers.items()))
    scores: dict[str, tuple[Score, Score | None]] = {}
    for tier, cases in tiers.items():
        mine = score(cases, ours)
        line = (
            f"{NAME}: {tier}: matcher all {pct(mine.hits, mine.total)} "
            f"newest {pct(mine.newest_hits, mine.newest_total)} ({mine.total} platform-releases)"
        )
        theirs = score(cases, peer) if peer is not None else None
        scores[tier] = (mine, theirs)
        if theirs is not None:
            line += (
                f" | dotbins all {pct(theirs.hits, theirs.total)} "
                f"newest {pct(theirs.newest_hits, theirs.newest_total)}"
            )
        else:
            line += f" | dotbins NOT MEASURED: {why}"
        print(line)
        if verbose:
            for miss in mine.misses:
                print(f"  miss {miss}")
    mine, theirs = scores["aqua-dev"]
    newest = ratio(mine.newest_hits, mine.newest_total)
    goal(f"{NAME}.newest", newest >= 0.99, f"aqua-dev newest release {newest:.1%} >= 99 %")
    if theirs is None:
        not_measured(f"{NAME}.all", "all releases >= dotbins'", f"dotbins: {why}")
    else:
        ours_all, peer_all = ratio(mine.hits, mine.total), ratio(theirs.hits, theirs.total)
        goal(
            f"{NAME}.all",
            ours_all >= peer_all,
            f"aqua-dev all releases {ours_all:.1%} >= dotbins {peer_all:.1%} in this run",
        )
    return 0


def ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
