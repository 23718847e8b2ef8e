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

What is scored is what a user gets: the recipe ``create --deterministic-only`` writes
(the same draft as the pipeline, :func:`tsukud.create.deterministic.draft_recipe`, from
the releases a run reads, after the payload check of names without an OS, answered
here from the truth), saved as text and read back, rendered per platform and release.
A refusal (no confident candidate, a static check failing) is a miss on every
platform. Each tier is scored twice: as this project reads the recipe (the renderer the
installer uses) and as tsuku (Go) reads it (``[[steps]]`` only, unknown ``when`` keys
dropped, every matching step run: two downloads are a miss).

The peer is dotbins (PyPI), whose detector sees one release at a time; without it the
peer prints NOT MEASURED with the reason. Install it with ``pip install -e '.[bench]'``.

``--misses`` lists the misses grouped by cause; ``--split`` adds aqua-dev's two halves
by package name hash (rules tuned on one half, scored on the other).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import goal, not_measured  # noqa: E402

from tsukud.binfmt import BinaryInfo, Kind  # noqa: E402
from tsukud.create.assets import release_from_api  # noqa: E402
from tsukud.create.context import RepoContext, latest_of, release_window  # noqa: E402
from tsukud.create.deterministic import draft_recipe  # noqa: E402
from tsukud.create.matcher import match_releases  # noqa: E402
from tsukud.create.payload_check import Probe, confirm_guesses, guessed_choices  # noqa: E402
from tsukud.create.tools import Payload  # noqa: E402
from tsukud.recipe import (  # noqa: E402
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
from tsukud.testing.asset_names import expected_assets, tsuku_assets  # noqa: E402

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


@dataclass
class Written:
    """The recipe ``create --deterministic-only`` writes for a case, as saved and read
    back both ways, or why it writes none (``refused``: a miss on every platform)."""

    recipe: Recipe | None = None
    data: dict[str, Any] = field(default_factory=dict)
    refused: str = ""


def _probe(case: Case) -> Probe:
    """The pipeline's look inside an asset whose name left its platform to a guess,
    answered from the truth: an asset aqua installs on linux/ARCH is an ELF for ARCH
    (on both Linux arches: a script, as an ELF has one CPU), a darwin one a Mach-O with
    a slice for each darwin arch aqua installs it on (both: a universal binary); any
    other is read as nothing executable, which refuses the guess. The benchmark
    downloads nothing; a real run reads the bytes."""
    where: dict[str, set[str]] = {}
    for key, tags in case.truth.items():
        for asset in tags.values():
            where.setdefault(asset, set()).add(key)

    async def probe(asset: str, binary: str | None) -> Payload:
        keys = where.get(asset, set())
        oses = {k.partition("/")[0] for k in keys}
        os = oses.pop() if len(oses) == 1 else ""
        kind: Kind = {"linux": "elf", "darwin": "macho"}.get(os, "unknown")  # type: ignore[assignment]
        archs = tuple(sorted(k.partition("/")[2] for k in keys)) if os else ()
        if kind == "elf" and len(archs) > 1:
            kind = "script"  # an ELF has one CPU: what runs on both is a script
        info = BinaryInfo(kind=kind, os=os or None, archs=archs, executable=True)
        return Payload(info=info, path=binary or asset)

    return probe


_WRITTEN: dict[str, Written] = {}


def written(case: Case) -> Written:
    """Once per case: :func:`write`."""
    if case.id not in _WRITTEN:
        _WRITTEN[case.id] = write(case)
    return _WRITTEN[case.id]


def write(case: Case) -> Written:
    """What a create run writes: the releases it reads (the newest five published),
    the matcher, the payload check of names without an OS, the same draft as the
    pipeline (confident, static checks passed), the text it saves, parsed back."""
    published = [r for r in case.releases if not r.draft and r.tag]
    tag = latest_of(published, None)
    if tag is None:
        return Written(refused="no release whose tag is a version")
    window = tuple(release_window(published, tag, lambda r: r.tag))
    ctx = RepoContext(
        repo=case.repo,
        description=None,
        homepage=None,
        releases=window,
        api_releases={},
        tag=tag,
    )
    match = match_releases(window, repo=case.repo, tool=case.tool)
    if match.best is None:
        return Written(refused="no candidate")
    ctx = ctx.for_tag_prefix(match.tag_prefix)
    if any(guessed_choices(c, ctx.version) for c in match.candidates):
        match = trio.run(confirm_guesses, match, ctx.version, _probe(case))
    draft = draft_recipe(ctx, case.tool, match)
    if not draft.passes:
        first = draft.findings[0].message if draft.findings else "the answer cannot be written"
        return Written(refused=f"static check: {first}")
    if draft.written is None:
        best = match.best
        doubt = next((r for r in best.reasons if "binary path" not in r), "") if best else ""
        return Written(refused=f"not confident: {doubt}")
    text = dump_recipe(draft.written)
    return Written(recipe=parse_recipe(text, f"{case.tool}.toml"), data=tomllib.loads(text))


Picker = Callable[[Platform, Release], str | None]


def _version_of(recipe: Recipe | None, release: Release) -> str | None:
    """The version a written recipe reads from ``release``'s tag (None: no recipe, or
    a tag it does not read)."""
    if recipe is None:
        return None
    return tag_to_version(release.tag, version_source(recipe).tag_prefix)


def ours(case: Case) -> Picker:
    """What the written recipe installs, read as this project reads it (the renderer
    the installer uses), or nothing when create writes none."""
    recipe = written(case).recipe

    def pick(target: Platform, release: Release) -> str | None:
        version = _version_of(recipe, release)
        if recipe is None or version is None:
            return None
        try:
            steps = render_recipe(
                recipe, ResolvedVersion(version, release.tag), target, assets=release.assets
            )
        except RecipeError:
            return None
        return steps[0].asset_name if steps else None

    return pick


def as_tsuku(case: Case) -> Picker:
    """What tsuku (Go) downloads from the same text: ``[[steps]]`` only, unknown
    ``when`` keys dropped, every matching step run (two downloads are a miss)."""
    found = written(case)
    recipe, data = found.recipe, found.data

    def pick(target: Platform, release: Release) -> str | None:
        version = _version_of(recipe, release)
        if recipe is None or version is None:
            return None
        names = [a.name for a in tsuku_assets(data, version, target.os, target.arch)]
        return names[0] if len(names) == 1 else None

    return pick


def why_missed(case: Case) -> str:
    """The cause of a miss, for grouping: create's refusal, or the recipe's answer."""
    found = written(case)
    if found.recipe is None:
        return "refused: " + found.refused.split(":")[0]
    return "wrong or no asset"


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


def score(cases: Sequence[Case], make: Callable[[Case], Picker]) -> Score:
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


def half(case: Case) -> str:
    """``A`` or ``B``: a fixed 50/50 split by the package's name hash, so rules tuned
    on one half can be scored on the other (the generality check)."""
    return "AB"[hashlib.sha256(case.repo.encode()).digest()[0] & 1]


def figures(label: str, mine: Score) -> str:
    return (
        f"{label} all {pct(mine.hits, mine.total)} "
        f"newest {pct(mine.newest_hits, mine.newest_total)}"
    )


def print_misses(cases: Sequence[Case], mine: Score) -> None:
    """The misses grouped by cause (create refused, or its recipe named another asset)."""
    by_id = {c.id: c for c in cases}
    groups: dict[str, list[str]] = {}
    for miss in mine.misses:
        groups.setdefault(why_missed(by_id[miss.split(" ")[0]]), []).append(miss)
    for cause, misses in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"  {len(misses)} missed, {cause}")
        for miss in misses:
            refusal = written(by_id[miss.split(" ")[0]]).refused
            print(f"    {miss}" + (f" [{refusal}]" if refusal else ""))


def main(argv: Sequence[str] = ()) -> int:
    verbose = "--misses" in argv
    aqua = list(aqua_cases())
    tiers: dict[str, list[Case]] = {
        "aqua-dev": aqua,
        "real": list(real_cases()),
        "tsuku": list(tsuku_cases()),
    }
    if "--split" in argv:
        for name in "AB":
            tiers[f"aqua-dev-{name}"] = [c for c in aqua if half(c) == name]
    peer, why = dotbins_picker()
    print(f"{NAME}: cases " + ", ".join(f"{k}={len(v)}" for k, v in tiers.items()))
    scores: dict[str, tuple[Score, Score | None]] = {}
    for tier, cases in tiers.items():
        mine = score(cases, ours)
        line = f"{NAME}: {tier}: " + figures("matcher", mine) + f" ({mine.total} platform-releases)"
        line += " | " + figures("as tsuku reads it", score(cases, as_tsuku))
        theirs = score(cases, peer) if peer is not None else None
        scores[tier] = (mine, theirs)
        if theirs is not None:
            line += " | " + figures("dotbins", theirs)
        else:
            line += f" | dotbins NOT MEASURED: {why}"
        print(line)
        if verbose and not tier.startswith("aqua-dev-"):
            print_misses(cases, mine)
    mine, theirs = scores["aqua-dev"]
    newest = ratio(mine.newest_hits, mine.newest_total)
    goal(f"{NAME}.newest", newest >= 0.99, f"aqua-dev newest release {newest:.1%} >= 99 %")
    if theirs is None:
        not_measured(f"{NAME}.all", "all releases > dotbins'", f"dotbins: {why}")
    else:
        ours_all, peer_all = ratio(mine.hits, mine.total), ratio(theirs.hits, theirs.total)
        goal(
            f"{NAME}.all",
            ours_all > peer_all,
            f"aqua-dev all releases {ours_all:.1%} > dotbins {peer_all:.1%} in this run",
        )
    return 0


def ratio(hits: int, total: int) -> float:
    return hits / total if total else 0.0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
