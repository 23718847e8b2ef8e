"""The deterministic matcher: release asset lists in, an ``extract_pattern`` answer out,
with no LLM and no cost.

Each asset of the newest release is read as a template (``tool_{version}_{os}_{arch}.
tar.gz`` plus the spellings its OS and arch took). For each of linux/darwin x
amd64/arm64 the best template is chosen by explicit, ordered preferences, then the four
choices are folded into one pattern with mappings and, where platforms disagree,
overrides. The same answer type as the LLM's goes through the same converter, so the
static checks judge both alike.

Preferences, most important first:

1. Architecture: a build named for the platform's arch; then a universal macOS build;
   then a build naming no arch (only by elimination: on Linux it is the amd64 build,
   and it serves arm64 only when an explicit amd64 build exists beside it); last, on
   darwin/arm64 only, the amd64 build (Rosetta 2). Linux arm64 never gets an amd64
   build: that is an exec format error, not a fallback. A Linux build named plain
   ``arm`` is the arm64 build in a release without 32-bit builds
   (:func:`~tsukud.create.assets.arm_means_arm64`); the payload check confirms it, and
   the same recipe without linux/arm64 is the next candidate. Where Linux builds are
   named and none names macOS, a name with no OS and no arch is the macOS build, held
   to a Mach-O by the payload check.
2. libc (Linux): static, then the build that names no libc (the project's default),
   then musl, then gnu. So when a release has both musl and gnu builds (Rust triples),
   musl wins: it is static and runs on glibc and musl systems, while a gnu build does
   not run on Alpine. A musl build *beside an unlabelled one* is usually a dynamically
   linked Alpine build (JDKs, Node) that does not run on glibc, so it does not win.
   The choice is recorded in the result and in the recipe (a step note, or
   ``supported_libc = ["glibc"]`` when only gnu builds exist).
3. The asset name starts with the tool or repository name (``buf-…`` over
   ``protoc-gen-buf-lint-…``).
4. The naming has existed for at least ``min_releases`` releases.
5. The shortest name once the archive suffix is removed: variants add words (``-lsp``,
   ``-debug``, ``-pivkey-pkcs11key``), rarely remove them (mise's rule; ubi's
   alphabetical rule is how ``-gnu`` beat ``-musl``).
6. A bare executable over an archive of the same build (no guessing where the binary
   sits inside), then tar.gz, tar.xz, zip, tar.bz2.
7. Name order, so the result never depends on the API's ordering.

Confidence starts at 1 and drops, with a reason each time, for naming newer than
``min_releases`` releases, arch guesses, several equally plausible variants, platforms
left without a build while some assets name no OS at all, and a single release.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from functools import partial

import msgspec

from tsukud.create.answer import (
    AnswerFormat,
    AssetType,
    ExtractPatternAnswer,
    InvalidAnswer,
    Override,
    RecipeContext,
    answer_to_recipe,
)
from tsukud.create.assets import (
    arm_means_arm64,
    as_released,
    fenced,
    filter_release,
    is_bare_arm,
    unsafe_name_reason,
    usable_releases,
    with_tag_prefix,
)
from tsukud.create.static_checks import MAX_STEPS, replay
from tsukud.create.tokens import TARGET_ARCHES, TARGET_OSES, UNIVERSAL, ParsedAsset, parse_asset
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    ArchiveFormat,
    Platform,
    Recipe,
    Step,
    When,
    expand,
)
from tsukud.recipe.release import Release
from tsukud.recipe.version_range import compare_versions

CONFIDENT = 0.8
REPLAY_WINDOW = 10
MAX_ALTERNATIVES = 4
# Namings a recipe follows back in time (the newest included); older releases beyond
# the last one are left to the oldest naming's open-ended range.
MAX_ERAS = 4
GENERATED_BY = "tsuku create (deterministic matcher)"

_HOW_RANK = {"exact": 0, "universal": 1, "archless": 2, "rosetta": 3}
_SEPARATORS = "-_. "
# A tag's prefix is what precedes its version: ``kustomize/v5.4.2`` → ``kustomize/v``.
_TAG_VERSION = re.compile(r"v?\d+(?:[._]\d+)+|v?\d+")
_LIBC_RANK = {"static": 0, None: 1, "musl": 2, "gnu": 3}
_FORMAT_RANK = {
    ArchiveFormat.RAW: 0,
    ArchiveFormat.TAR_GZ: 1,
    ArchiveFormat.TAR_XZ: 2,
    ArchiveFormat.ZIP: 3,
    ArchiveFormat.TAR_BZ2: 4,
    ArchiveFormat.TAR_ZST: 5,
    ArchiveFormat.TAR: 6,
}
_ANSWER_FORMATS: dict[ArchiveFormat, AnswerFormat] = {
    ArchiveFormat.TAR_GZ: "tar.gz",
    ArchiveFormat.TAR_XZ: "tar.xz",
    ArchiveFormat.TAR_BZ2: "tar.bz2",
    ArchiveFormat.ZIP: "zip",
}
_ARCHIVE_SUFFIX = re.compile(
    r"\.(?:tar\.(?:gz|xz|bz2|zst|lz)|tgz|txz|tbz2?|tzst|tar|zip|gz|xz|bz2|zst)$", re.I
)

MUSL_NOTE = "musl build preferred over gnu: static, runs on glibc and musl systems"
ROSETTA_NOTE = "no arm64 build is published; the amd64 build runs under Rosetta 2"
ARM_NOTE = "the release names its arm64 build 'arm' (it publishes no 32-bit builds)"


class Option(msgspec.Struct, frozen=True, kw_only=True):
    """One way to serve a platform: a template from the newest release and how well
    it fits (``how``: exact, universal, archless or rosetta)."""

    asset: ParsedAsset
    how: str
    replays: int

    @property
    def stem(self) -> str:
        return _ARCHIVE_SUFFIX.sub("", self.asset.template)


class PlatformChoice(msgspec.Struct, frozen=True, kw_only=True):
    platform: str
    asset: str
    how: str
    replays: int
    libc: str | None = None
    alternatives: tuple[str, ...] = ()


class Era(msgspec.Struct, frozen=True, kw_only=True):
    """An older naming: the answer that names the builds of the releases from ``since``
    (the oldest release seen with it; ``None``: open below) up to the next newer
    naming."""

    since: str | None
    answer: ExtractPatternAnswer
    unsupported: tuple[str, ...] = ()
    notes: dict[str, str] = msgspec.field(default_factory=dict)


class Candidate(msgspec.Struct, frozen=True, kw_only=True):
    """A complete answer with how much to trust it and why.

    ``answer`` names the newest release's builds; when older releases were named
    otherwise, ``since`` is the oldest version named like the newest and ``eras`` the
    older namings, newest first: the recipe gets version overrides for them.
    """

    answer: ExtractPatternAnswer
    confidence: float
    reasons: tuple[str, ...]
    choices: tuple[PlatformChoice, ...]
    unsupported: tuple[str, ...]
    notes: dict[str, str] = msgspec.field(default_factory=dict)
    since: str | None = None
    eras: tuple[Era, ...] = ()
    tag_prefix: str | None = None

    @property
    def expected(self) -> dict[str, str]:
        """``os/arch`` → the asset meant at the newest release (for the replay check)."""
        return {c.platform: c.asset for c in self.choices}

    def context(
        self,
        *,
        repo: str,
        name: str,
        versions: Sequence[str] = (),
        generated_by: str = GENERATED_BY,
    ) -> RecipeContext:
        return RecipeContext(
            repo=repo,
            name=name,
            generated_by=generated_by,
            versions=tuple(versions),
            unsupported=self.unsupported,
            notes=self.notes,
        )


class MatchResult(msgspec.Struct, frozen=True, kw_only=True):
    """Ranked candidates (best first; empty when nothing matched) and what the matcher
    could not place: names of the newest release that say nothing about their OS."""

    candidates: tuple[Candidate, ...]
    tag: str | None = None
    # Standard platforms the newest release has no build for; the LLM path passes this
    # to answer_to_recipe too, since the answer schema cannot say it.
    unsupported: tuple[str, ...] = ()
    unplaced: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()
    # The tool asked for, when the release carries builds of other tools too.
    other_tools: tuple[str, ...] = ()
    tool: str | None = None
    tag_prefix: str | None = None

    @property
    def best(self) -> Candidate | None:
        return self.candidates[0] if self.candidates else None

    @property
    def confident(self) -> bool:
        return self.best is not None and self.best.confidence >= CONFIDENT


# --------------------------------------------------------------------------- options


def _lead(template: str) -> str:
    """What a name says before its version or platform words: the tool it is for
    (``tsuku-llm-{os}-{arch}`` → ``tsuku-llm``, ``kubectl-v{version}_…`` → ``kubectl``)."""
    lead = _ARCHIVE_SUFFIX.sub("", template).split("{", 1)[0].lower().rstrip(_SEPARATORS)
    if lead.endswith("v") and lead[:-1].endswith(tuple(_SEPARATORS)):
        lead = lead[:-1].rstrip(_SEPARATORS)
    return lead.replace("_", "-")


def _name_fit(template: str, names: Sequence[str]) -> tuple[int, int]:
    """How well an asset's name fits the tool asked for: the tool's own name (or a
    variant of it: ``tool-lsp``), then the repository's, then a name with no tool in it,
    then another tool's. The second number tells an exact name from a variant. In a
    repository that ships several tools (``tsuku-dltest`` beside ``tsuku-llm``), the
    tool's name decides, whatever the other preferences say."""
    lead = _lead(template)
    for bucket, name in enumerate(names):
        wanted = name.lower().replace("_", "-")
        if lead == wanted:
            return bucket, 0
        if lead.startswith(wanted) and lead[len(wanted)] in _SEPARATORS:
            return bucket, 1
    return (len(names), 0) if not lead else (len(names) + 1, 0)


def _rank(
    option: Option,
    target: Platform,
    names: Sequence[str],
    min_releases: int,
    prefer: Option | None = None,
) -> tuple[int, int, int, int, int, int, int, int, str]:
    parsed = option.asset
    bucket, variant = _name_fit(parsed.template, names)
    return (
        bucket,
        _HOW_RANK[option.how],
        _LIBC_RANK[parsed.libc] if target.os == "linux" else 1,
        _continuity(option, prefer),
        variant,
        -min(option.replays, min_releases),
        len(option.stem),
        _FORMAT_RANK.get(parsed.format, 9) if parsed.format is not None else 9,
        parsed.name,
    )


def _arm_guess(option: Option) -> bool:
    """The arm64 build is one named plain ``arm`` (read so by
    :func:`~tsukud.create.assets.arm_means_arm64`; its payload is checked)."""
    return (option.asset.arch_raw or "").lower() == "arm" and option.asset.os == "linux"


def _continuity(option: Option, prefer: Option | None) -> int:
    """At an older release: the same template as the newer naming (only the spelling of
    the OS or arch changed), then the same kind of file, then anything."""
    if prefer is None:
        return 0
    if option.asset.template == prefer.asset.template:
        return 0
    same_kind = option.asset.format == prefer.asset.format and option.how == prefer.how
    return 1 if same_kind else 2


def _how(
    parsed: ParsedAsset, target: Platform, explicit: set[str], rosetta: bool, anywhere: bool
) -> str | None:
    if parsed.arch == target.arch:
        return "exact"
    if parsed.arch == UNIVERSAL:
        return "universal"
    if parsed.arch is None and anywhere:
        return "archless"
    if parsed.arch is None:
        if target.arch == "amd64" and "amd64" not in explicit:
            return "archless"
        if (
            target.arch == "arm64"
            and "arm64" not in explicit
            and ("amd64" in explicit or target.os == "darwin")
        ):
            return "archless"
        return None
    if rosetta and target.key == "darwin/arm64" and parsed.arch == "amd64":
        return "rosetta"
    return None


def _replays(parsed: ParsedAsset, window: Sequence[Release], kept: Sequence[frozenset[str]]) -> int:
    """Consecutive releases, newest first, that have this build under this naming."""
    count = 0
    for release, names in zip(window, kept, strict=True):
        name = expand(
            parsed.template,
            version=release.version,
            os=parsed.os_raw or "",
            arch=parsed.arch_raw or "",
        )
        if name not in names:
            break
        count += 1
    return count


def _options(
    assets: Sequence[ParsedAsset],
    target: Platform,
    replays: Mapping[str, int],
    names: Sequence[str],
    *,
    rosetta: bool,
    min_releases: int,
    prefer: Option | None = None,
) -> list[Option]:
    same_os = [a for a in assets if a.os == target.os]
    explicit = {a.arch for a in same_os if a.arch in TARGET_ARCHES}
    # Nothing in the release names a platform (the names were assumed for every OS).
    anywhere = all(a.os_raw is None and a.arch is None for a in assets)
    found = []
    for parsed in same_os:
        how = _how(parsed, target, explicit, rosetta, anywhere)
        if how is not None:
            found.append(Option(asset=parsed, how=how, replays=replays.get(parsed.name, 1)))
    if any(o.how != "rosetta" for o in found):
        found = [o for o in found if o.how != "rosetta"]
    return sorted(found, key=lambda o: _rank(o, target, names, min_releases, prefer))


def _close(a: Option, b: Option, target: Platform, names: Sequence[str]) -> bool:
    """``b`` is a different build that only loses to ``a`` on the soft preferences."""
    ra, rb = _rank(a, target, names, 1), _rank(b, target, names, 1)
    return ra[:4] == rb[:4] and a.stem != b.stem


# ---------------------------------------------------------------------------- answer


def _answer_format(fmt: ArchiveFormat | None) -> AnswerFormat | None:
    return _ANSWER_FORMATS.get(fmt) if fmt is not None else None


def _asset_type(fmt: ArchiveFormat | None) -> AssetType:
    return "binary" if fmt is ArchiveFormat.RAW else "archive"


def _fold(choices: Mapping[str, Option], binary: str) -> ExtractPatternAnswer:
    """Four per-platform choices → base pattern + mappings + overrides."""
    order = [p for p in STANDARD_PLATFORMS if p.key in choices]
    base = Counter(choices[p.key].asset.template for p in order).most_common(1)[0][0]
    base_asset = next(choices[p.key].asset for p in order if choices[p.key].asset.template == base)
    os_votes: dict[str, Counter[str]] = {}
    arch_votes: dict[str, Counter[str]] = {}
    for p in order:
        option = choices[p.key]
        if option.asset.template != base:
            continue
        if option.asset.os_raw is not None:
            os_votes.setdefault(p.os, Counter())[option.asset.os_raw] += 1
        if option.how == "exact" and option.asset.arch_raw is not None:
            arch_votes.setdefault(p.arch, Counter())[option.asset.arch_raw] += 1
    os_mapping = {k: v.most_common(1)[0][0] for k, v in os_votes.items()}
    arch_mapping = {k: v.most_common(1)[0][0] for k, v in arch_votes.items()}

    overrides: dict[str, Override] = {}
    for p in order:
        parsed, how = choices[p.key].asset, choices[p.key].how
        covered = (
            parsed.template == base
            and os_mapping.get(p.os) == parsed.os_raw
            and (
                "{arch}" not in base
                or (how == "exact" and arch_mapping.get(p.arch) == parsed.arch_raw)
            )
        )
        if covered:
            continue
        pattern = parsed.template
        if "{os}" in pattern and parsed.os_raw is not None:
            if p.os not in os_mapping:
                os_mapping[p.os] = parsed.os_raw
            elif os_mapping[p.os] != parsed.os_raw:
                pattern = pattern.replace("{os}", parsed.os_raw)
        if "{arch}" in pattern and parsed.arch_raw is not None:
            if how == "exact" and p.arch not in arch_mapping:
                arch_mapping[p.arch] = parsed.arch_raw
            elif how != "exact" or arch_mapping[p.arch] != parsed.arch_raw:
                pattern = pattern.replace("{arch}", parsed.arch_raw)
        fmt, kind = _answer_format(parsed.format), _asset_type(parsed.format)
        overrides[p.key] = Override(
            os=p.os,
            arch=p.arch,
            asset_pattern=pattern,
            archive_format=fmt if fmt != _answer_format(base_asset.format) else None,
            asset_type=kind if kind != _asset_type(base_asset.format) else None,
        )
    merged: list[Override] = []
    for os_name in TARGET_OSES:
        pair = [overrides.get(f"{os_name}/{arch}") for arch in TARGET_ARCHES]
        if (
            pair[0] is not None
            and pair[1] is not None
            and (
                msgspec.structs.replace(pair[0], arch=None)
                == msgspec.structs.replace(pair[1], arch=None)
            )
        ):
            merged.append(msgspec.structs.replace(pair[0], arch=None))
        else:
            merged.extend(o for o in pair if o is not None)
    kind = _asset_type(base_asset.format)
    return ExtractPatternAnswer(
        asset_type=kind,
        asset_pattern=base,
        os_mapping=os_mapping,
        arch_mapping=arch_mapping,
        binaries=(binary,),
        verify_command=f"{binary} --version",
        archive_format=_answer_format(base_asset.format),
        strip_dirs=0 if kind == "archive" else None,
        verify_pattern="{version}",
        overrides=tuple(merged),
    )


# ------------------------------------------------------------------------ confidence


def _assess(
    choices: Mapping[str, Option],
    options: Mapping[str, list[Option]],
    *,
    names: Sequence[str],
    n_releases: int,
    min_releases: int,
    unplaced: Sequence[str],
    tag: str,
    binary: str,
) -> tuple[float, list[str], dict[str, str]]:
    confidence = 1.0
    reasons: list[str] = []
    notes: dict[str, str] = {}
    guessed = False
    rivalry = 1.0
    needed = min(min_releases, n_releases)
    # Some build names its OS: an OS-less name on darwin was placed by elimination.
    named = any(o.asset.os_raw is not None for o in choices.values())
    if n_releases < 2:
        confidence *= 0.8
        reasons.append("only one release: {version} templating cannot be confirmed")
    for target in STANDARD_PLATFORMS:
        key = target.key
        option = choices.get(key)
        if option is None:
            if unplaced:
                confidence *= 0.7
                shown = ", ".join(unplaced[:3])
                reasons.append(
                    f"{key}: no build found, and {len(unplaced)} assets name no OS ({shown})"
                )
            else:
                reasons.append(f"{key}: {tag} has no build for it")
            continue
        name = option.asset.name
        if option.replays < needed:
            # Not a doubt about the newest release: older ones get version-ranged steps.
            reasons.append(
                f"{key}: {name!r} follows a naming found in {option.replays} of the "
                f"newest {needed} releases; older ones are named otherwise"
            )
        if option.asset.os_raw is None and target.os == "darwin" and named:
            guessed = True
            reasons.append(
                f"{key}: {name!r} names no OS; taken as the macOS build, as no asset names one"
            )
        elif option.asset.os_raw is None and option.asset.arch is None:
            guessed = True
            reasons.append(f"{key}: {name!r} names no platform; taken as a build for any")
        elif option.asset.os_raw is None and target.os == "linux":
            guessed = True
            reasons.append(
                f"{key}: {name!r} names no OS; taken as the Linux build, as no asset names one"
            )
        if option.how == "universal":
            reasons.append(f"{key}: universal macOS build {name!r}")
        elif option.how == "archless":
            guessed = True
            reasons.append(f"{key}: {name!r} names no architecture; assumed to be {target.arch}")
        elif option.how == "rosetta":
            confidence *= 0.9
            notes[key] = ROSETTA_NOTE
            reasons.append(f"{key}: no arm64 build; {name!r} runs under Rosetta 2")
        if _arm_guess(option):
            guessed = True
            notes[key] = ARM_NOTE
            reasons.append(
                f"{key}: {name!r} says 'arm' in a release without 32-bit builds; "
                "taken as the arm64 build"
            )
        rivals = [o for o in options[key] if o is not option and _close(option, o, target, names)]
        stems = sorted({o.stem for o in rivals})
        if stems:
            rivalry = min(rivalry, 0.9 if len(stems) == 1 else 0.75)
            shown = ", ".join(repr(o.asset.name) for o in rivals[:3])
            reasons.append(
                f"{key}: {len(stems)} other build(s) look as plausible ({shown}); picked {name!r}"
            )
        if target.os == "linux":
            libcs = {o.asset.libc for o in options[key] if o.how == option.how}
            if option.asset.libc in ("musl", "static") and "gnu" in libcs:
                notes[key] = MUSL_NOTE
                reasons.append(f"{key}: {MUSL_NOTE}")
            elif option.asset.libc == "gnu":
                reasons.append(f"{key}: only gnu builds; the recipe is limited to glibc systems")
    if guessed:
        # One doubt however many platforms share it: the names follow one convention.
        confidence *= 0.9
    # Rival builds count once too: they are the same choice seen on each platform.
    confidence *= rivalry
    kinds = {_asset_type(o.asset.format) for o in choices.values()}
    if "archive" in kinds:
        reasons.append(
            f"binary path inside the archive guessed from the tool name ({binary!r}); "
            "inspect the archive to confirm it and strip_dirs"
        )
    if not choices:
        confidence = 0.0
    return round(confidence, 4), reasons, notes


# ----------------------------------------------------------------------------- match


class _History(msgspec.Struct, frozen=True, kw_only=True):
    """The window of releases as the matcher reads them: per release, its kept names
    and, per platform, its options (best first)."""

    window: tuple[Release, ...]
    kept: tuple[frozenset[str], ...]
    options: tuple[dict[str, list[Option]], ...]
    unplaced: tuple[str, ...]
    names: tuple[str, ...]
    rosetta: bool
    min_releases: int

    def has_build(self, index: int, key: str) -> bool:
        return bool(self.options[index].get(key))


def _renders(option: Option, release: Release, kept: frozenset[str]) -> bool:
    parsed = option.asset
    name = expand(
        parsed.template, version=release.version, os=parsed.os_raw or "", arch=parsed.arch_raw or ""
    )
    return name in kept


def _eras(choices: Mapping[str, Option], history: _History) -> list[tuple[int, dict[str, Option]]]:
    """Split the window into runs of releases that one naming covers, newest first:
    ``(index of the run's first release, choices)``. A run ends where some platform's
    build exists under another name; the older run keeps what still renders and picks,
    for the rest, the build most like the newer naming. Versions must fall as releases
    get older, or version ranges could not tell the runs apart."""
    window = history.window
    runs: list[tuple[int, dict[str, Option]]] = [(0, dict(choices))]
    current = dict(choices)
    for i in range(1, len(window)):
        if compare_versions(window[i].version, window[i - 1].version) >= 0:
            break
        broken = [
            p.key
            for p in STANDARD_PLATFORMS
            if history.has_build(i, p.key)
            and (p.key not in current or not _renders(current[p.key], window[i], history.kept[i]))
        ]
        if not broken:
            continue
        if len(runs) == MAX_ERAS:
            break
        older: dict[str, Option] = {}
        for p in STANDARD_PLATFORMS:
            key = p.key
            if key in current and key not in broken:
                if _renders(current[key], window[i], history.kept[i]):
                    older[key] = current[key]
                continue
            if not history.has_build(i, key):
                continue
            older[key] = min(
                history.options[i][key],
                key=partial(
                    _rank, target=p, names=history.names, min_releases=1, prefer=current.get(key)
                ),
            )
        runs.append((i, older))
        current = older
    return runs


def _candidate(
    choices: Mapping[str, Option],
    options: Mapping[str, list[Option]],
    *,
    alternative: bool,
    history: _History,
    repo: str,
    binary: str,
    n_releases: int,
    unsupported: tuple[str, ...],
    tag_prefix: str | None,
) -> Candidate:
    """One candidate, checked the way the pipeline will check it: converted to a recipe
    and replayed. Failures the release history does not explain mean the fold went
    wrong, so they cut the confidence rather than pass silently."""
    window, names, min_releases = history.window, history.names, history.min_releases
    confidence, reasons, notes = _assess(
        choices,
        options,
        names=names,
        n_releases=n_releases,
        min_releases=min_releases,
        unplaced=history.unplaced,
        tag=window[0].tag,
        binary=binary,
    )
    if alternative:
        confidence *= 0.95
        reasons.insert(0, "alternative to the preferred build")
    made = tuple(
        PlatformChoice(
            platform=key,
            asset=option.asset.name,
            how=option.how,
            replays=option.replays,
            libc=option.asset.libc,
            alternatives=tuple(o.asset.name for o in options[key] if o is not option)[:8],
        )
        for key, option in choices.items()
    )
    runs = _eras(choices, history)
    eras: list[Era] = []
    for number, (start, run) in enumerate(runs[1:], 1):
        last = number == len(runs) - 1
        end = len(window) - 1 if last else runs[number + 1][0] - 1
        eras.append(
            Era(
                since=None if last else window[end].version,
                answer=_fold(run, binary),
                unsupported=tuple(p.key for p in STANDARD_PLATFORMS if p.key not in run),
                notes={k: n for k, n in notes.items() if k in run},
            )
        )
        reasons.append(
            f"naming changed before {window[start - 1].tag}: releases up to "
            f"{window[start].tag} get version-ranged steps"
        )
    candidate = Candidate(
        answer=_fold(choices, binary),
        confidence=confidence,
        reasons=tuple(reasons),
        choices=made,
        unsupported=unsupported,
        notes=notes,
        since=window[runs[1][0] - 1].version if len(runs) > 1 else None,
        eras=tuple(eras),
        tag_prefix=tag_prefix,
    )
    absent = {
        (p.key, window[i].tag)
        for i in range(len(window))
        for p in STANDARD_PLATFORMS
        if not history.has_build(i, p.key)
    }
    try:
        recipe = candidate_to_recipe(candidate, repo=repo, name=binary, releases=window)
        findings = [
            f
            for f in replay(recipe, window, expected=candidate.expected, min_releases=min_releases)
            if f.severity == "error" and (f.platform, f.release) not in absent
        ]
    except InvalidAnswer as exc:
        findings = exc.findings
    if findings:
        confidence *= 0.5
        reasons.append(f"self-check failed: {findings[0].message}")
    return msgspec.structs.replace(
        candidate, confidence=round(confidence, 4), reasons=tuple(reasons)
    )


def _binary_name(repo: str, tool: str | None) -> str:
    name = tool or repo.rpartition("/")[2]
    return name if unsafe_name_reason(name) is None else "tool"


def tag_prefix_of(tag: str) -> str:
    """What precedes the version in a tag: ``kustomize/v5.4.2`` → ``kustomize/v``,
    ``cidr2range-1.2.0`` → ``cidr2range-``, ``v1.2`` → ``v``; ``""`` without digits."""
    found = [m for m in _TAG_VERSION.finditer(tag) if "." in m.group() or "_" in m.group()]
    match = found[0] if found else _TAG_VERSION.search(tag)
    return (
        tag[: match.start()] + ("v" if match and match.group().startswith("v") else "")
        if match
        else ""
    )


def _normal(prefix: str) -> bool:
    """Prefixes the version source reads without help (``v1.2``, ``1.2``, ``go1.21``,
    ``kustomize/v5`` in a single-product repository)."""
    return prefix.lower() in ("", "v", "go") or prefix.endswith("/") or prefix.endswith("/v")


def find_tag_prefix(releases: Sequence[Release], names: Sequence[str]) -> str | None:
    """The ``tag_prefix`` a recipe needs, read from the release history, or ``None``.

    Needed when the repository tags several products (``kustomize/v5.4.2`` beside
    ``api/v0.17.0``: the newest release may be another product's), or when its one
    prefix is something the version source would not strip (``cidr2range-1.2.0``,
    ``release-1.2``). Among several, the prefix naming the tool wins, then the
    repository's, then the newest release's."""
    prefixes = [tag_prefix_of(r.tag) for r in releases]
    distinct = list(dict.fromkeys(prefixes))
    if len(distinct) == 1:
        return None if _normal(distinct[0]) else distinct[0] or None
    if all(p.lower() in ("", "v") for p in distinct):
        return None

    def fit(prefix: str) -> tuple[int, int]:
        core = prefix.lower().rstrip("v").rstrip(_SEPARATORS + "/").replace("_", "-")
        core = core.rpartition("/")[2] if "/" in core else core
        for rank, name in enumerate(names):
            if core == name.lower().replace("_", "-"):
                return rank, prefixes.index(prefix)
        return len(names), prefixes.index(prefix)

    best = min(distinct, key=fit)
    if best.lower() in ("", "v"):
        return None
    return best


def _assume_linux(parsed: Sequence[ParsedAsset]) -> list[ParsedAsset]:
    """Names without an OS (``nix-portable-x86_64``, ``conmon.amd64``, a bare ``tool``)
    are Linux builds by convention: taken as such when no asset names Linux for that
    arch (for a name without an arch either: when none names Linux at all)."""
    if all(a.os is None and a.arch is None for a in parsed):
        # No asset names any platform: a script, a jar, a universal archive. It is
        # every platform's build (validation runs it; the reasons say it was assumed).
        return [msgspec.structs.replace(a, os=os) for a in parsed for os in TARGET_OSES]
    linux = [a for a in parsed if a.os == "linux"]
    linux_arches = {a.arch for a in linux}
    out = []
    for a in parsed:
        if a.os is None and a.arch in (*TARGET_ARCHES, None):
            free = (
                not linux
                if a.arch is None
                else a.arch not in linux_arches and None not in linux_arches
            )
            if free:
                a = msgspec.structs.replace(a, os="linux")
        out.append(a)
    return out


def _assume_darwin(parsed: Sequence[ParsedAsset]) -> list[ParsedAsset]:
    """Where Linux builds are named and no asset names macOS, a name with neither an
    OS nor an arch (``portable_tool.zip``, ``tool-universal.tar.gz``) is taken as the
    macOS build: what is left once the named builds are placed. The pipeline's payload
    check holds it to a Mach-O (:mod:`tsukud.create.payload_check`)."""
    named_linux = any(a.os == "linux" and a.os_raw is not None for a in parsed)
    if not named_linux or any(a.os == "darwin" for a in parsed):
        return list(parsed)
    return [
        msgspec.structs.replace(a, os="darwin")
        if a.os is None and a.arch in (None, UNIVERSAL)
        else a
        for a in parsed
    ]


def _read(release: Release) -> tuple[frozenset[str], list[ParsedAsset], set[str]]:
    """A release's kept names, parsed (OS-less names assumed Linux where that is the
    convention), and the names whose version {version} cannot reproduce."""
    kept = frozenset(filter_release(release).kept)
    names = [parse_asset(name, release.version) for name in sorted(kept)]
    # Only a release that kept an ``arm`` build is read for what ``arm`` means.
    arm64 = any(is_bare_arm(a) for a in names) and arm_means_arm64(release)
    parsed = _assume_darwin(_assume_linux([as_released(a, arm64) for a in names]))
    # A version spelled so that {version} cannot reproduce it (``2.3.1.0`` for tag
    # v2.3.1) would be pinned into the recipe: such names are not candidates.
    version = release.version
    pinned = {a.name for a in parsed if "." in version and version in a.template}
    return kept, parsed, pinned


def match_releases(
    releases: Sequence[Release],
    *,
    repo: str,
    tool: str | None = None,
    rosetta: bool = True,
    min_releases: int = 3,
) -> MatchResult:
    """Infer asset patterns from ``releases`` (newest first, as the API lists them).

    ``tool`` is the command name the user asked for (defaults to the repository
    name); it decides between several tools' builds and names the binary.
    """
    names = tuple(dict.fromkeys(n for n in (tool, repo.rpartition("/")[2]) if n))
    usable = usable_releases(releases)
    if not usable:
        return MatchResult(candidates=(), reasons=("no published releases",))
    tag_prefix = find_tag_prefix(usable, names)
    usable = usable_releases(with_tag_prefix(usable, tag_prefix))
    window = tuple(usable[:REPLAY_WINDOW])
    read = [_read(r) for r in window]
    kept = tuple(k for k, _, _ in read)
    newest = window[0]
    _, parsed, pinned = read[0]
    targets = [a for a in parsed if a.os in TARGET_OSES and a.name not in pinned]
    unplaced = tuple(a.name for a in parsed if a.os is None or a.name in pinned)
    replays = {a.name: _replays(a, window, kept) for a in targets}
    binary = _binary_name(repo, tool)
    options = {
        p.key: _options(targets, p, replays, names, rosetta=rosetta, min_releases=min_releases)
        for p in STANDARD_PLATFORMS
    }
    older = [
        {
            p.key: _options(
                [a for a in got if a.os in TARGET_OSES and a.name not in skip],
                p,
                {},
                names,
                rosetta=rosetta,
                min_releases=min_releases,
            )
            for p in STANDARD_PLATFORMS
        }
        for _, got, skip in read[1:]
    ]
    history = _History(
        window=window,
        kept=kept,
        options=(options, *older),
        unplaced=unplaced,
        names=names,
        rosetta=rosetta,
        min_releases=min_releases,
    )
    primary = {key: opts[0] for key, opts in options.items() if opts}
    if not primary:
        return MatchResult(
            candidates=(),
            tag=newest.tag,
            unsupported=tuple(p.key for p in STANDARD_PLATFORMS),
            unplaced=unplaced,
            reasons=(f"{newest.tag}: no asset names a linux or darwin build",),
        )
    unsupported = tuple(p.key for p in STANDARD_PLATFORMS if p.key not in primary)

    # Alternatives swap in one rival naming everywhere it fits, so each stays coherent.
    variants: list[dict[str, Option]] = [primary]
    rival_stems: list[str] = []
    for p in STANDARD_PLATFORMS:
        for rival in options[p.key][1:]:
            close = p.key in primary and _close(primary[p.key], rival, p, names)
            if close and rival.stem not in rival_stems:
                rival_stems.append(rival.stem)
    for stem in rival_stems[:MAX_ALTERNATIVES]:
        variant = dict(primary)
        for p in STANDARD_PLATFORMS:
            swap = [o for o in options[p.key] if o.stem == stem and p.key in primary]
            if swap and _close(primary[p.key], swap[0], p, names):
                variant[p.key] = swap[0]
        variants.append(variant)

    candidates = [
        _candidate(
            choices,
            options,
            alternative=index > 0,
            history=history,
            repo=repo,
            binary=binary,
            n_releases=len(usable),
            unsupported=unsupported,
            tag_prefix=tag_prefix,
        )
        for index, choices in enumerate(variants)
    ]
    if any(_arm_guess(o) for o in primary.values()):
        # Should the payload refuse the ``arm`` build, this one stands: the rest of
        # the recipe without linux/arm64, never the whole recipe refused.
        fallback = {k: o for k, o in primary.items() if not _arm_guess(o)}
        trimmed = tuple(
            {k: [o for o in opts if not _arm_guess(o)] for k, opts in per.items()}
            for per in history.options
        )
        second = _candidate(
            fallback,
            trimmed[0],
            alternative=True,
            history=msgspec.structs.replace(history, options=trimmed),
            repo=repo,
            binary=binary,
            n_releases=len(usable),
            unsupported=tuple(p.key for p in STANDARD_PLATFORMS if p.key not in fallback),
            tag_prefix=tag_prefix,
        )
        # Never ahead of the recipe that has linux/arm64 too (at equal confidence the
        # stable sort keeps that one first), and not held below it either: it must
        # still be written when the payload refuses the ``arm`` build.
        ceiling = candidates[0].confidence
        candidates.insert(
            1, msgspec.structs.replace(second, confidence=min(second.confidence, ceiling))
        )
    candidates.sort(key=lambda c: -c.confidence)
    others = sorted(
        {_lead(a.template) for a in targets}
        - {_lead(o.asset.template) for o in primary.values()}
        - {""}
    )
    return MatchResult(
        candidates=tuple(candidates),
        tag=newest.tag,
        unsupported=unsupported,
        unplaced=unplaced,
        other_tools=tuple(others),
        tool=tool,
        tag_prefix=tag_prefix,
    )


def _ranged(steps: Sequence[Step], versions: str | None, serves: Sequence[str]) -> list[Step]:
    """``steps`` limited to the versions of their naming and to the platforms it has
    builds for (a step that covered "everything" in its own naming must not claim a
    platform another naming added)."""
    out: list[Step] = []
    for step in steps:
        when = step.when or When()
        if versions is not None:
            when = msgspec.structs.replace(when, version=versions)
        matched = [p.key for p in STANDARD_PLATFORMS if step.matches(p)]
        if any(key not in serves for key in matched):
            keep = tuple(key for key in matched if key in serves)
            when = msgspec.structs.replace(when, platform=keep, os=None, arch=None)
        out.append(msgspec.structs.replace(step, when=when if when != When() else None))
    return out


def _widened(recipe: Recipe, steps: Sequence[Step]) -> Recipe:
    """The recipe with ``steps`` and metadata that admits every platform some naming
    serves: the newest release's platforms decide the steps, not what older
    releases may install."""
    covered = [p for p in STANDARD_PLATFORMS if any(s.matches(p) for s in steps)]
    oses = tuple(o for o in TARGET_OSES if any(p.os == o for p in covered))
    arches = tuple(a for a in TARGET_ARCHES if any(p.arch == a for p in covered))
    missing = tuple(
        p.key for p in STANDARD_PLATFORMS if p not in covered and p.os in oses and p.arch in arches
    )
    meta = msgspec.structs.replace(
        recipe.metadata,
        supported_os=oses if len(oses) < len(TARGET_OSES) else None,
        supported_arch=arches if len(arches) < len(TARGET_ARCHES) else None,
        unsupported_platforms=missing or None,
    )
    return msgspec.structs.replace(recipe, metadata=meta, steps=tuple(steps))


def candidate_to_recipe(
    candidate: Candidate,
    *,
    repo: str,
    name: str,
    releases: Sequence[Release] = (),
    generated_by: str = GENERATED_BY,
) -> Recipe:
    """The recipe for a candidate, through the same converter as an LLM answer: the
    newest naming's steps unranged, then each older naming's with its version range
    (written as ``[[version_overrides]]``, which tsuku ignores whole: tsuku reads only
    the newest naming and never downloads two namings of one release)."""
    versions = [r.version for r in usable_releases(with_tag_prefix(releases, candidate.tag_prefix))]
    context = candidate.context(repo=repo, name=name, versions=versions, generated_by=generated_by)
    return recipe_for_candidate(candidate, context)


def recipe_for_candidate(candidate: Candidate, context: RecipeContext) -> Recipe:
    """:func:`candidate_to_recipe` for a caller with its own context (description,
    homepage, who generated it); ``unsupported`` and ``notes`` come from the candidate."""
    context = msgspec.structs.replace(
        context, unsupported=candidate.unsupported, notes=candidate.notes
    )
    recipe = answer_to_recipe(candidate.answer, context)
    if candidate.eras and candidate.since is not None:
        newest = [c.platform for c in candidate.choices]
        steps = _ranged(recipe.steps, None, newest)
        upper = candidate.since
        for era in candidate.eras:
            bounds = f">={era.since}, <{upper}" if era.since is not None else f"<{upper}"
            try:
                older = answer_to_recipe(
                    era.answer,
                    msgspec.structs.replace(context, unsupported=era.unsupported, notes=era.notes),
                )
            except InvalidAnswer:
                break  # an older naming we cannot express: its releases stay uncovered
            serves = [p.key for p in STANDARD_PLATFORMS if p.key not in era.unsupported]
            steps += _ranged(older.steps, bounds, serves)
            if era.since is None:
                break
            upper = era.since
        if len(steps) <= MAX_STEPS:
            recipe = _widened(recipe, steps)
    if candidate.tag_prefix and recipe.version is not None:
        section = msgspec.structs.replace(recipe.version, tag_prefix=candidate.tag_prefix)
        recipe = msgspec.structs.replace(recipe, version=section)
    return recipe


def candidates_data(result: MatchResult, *, limit: int = 3) -> list[dict[str, object]]:
    """The candidates as plain data (for an error's ``data``): confidence, the asset
    each platform would get at the newest release, and why the matcher hesitated."""
    return [
        {
            "confidence": c.confidence,
            "assets": {choice.platform: choice.asset for choice in c.choices},
            "reasons": list(c.reasons),
        }
        for c in result.candidates[:limit]
    ]


def uncertain_text(result: MatchResult, *, limit: int = 3) -> str:
    """One line per candidate: what it installs where, and its first doubt."""
    parts = []
    for index, c in enumerate(result.candidates[:limit], 1):
        picks = ", ".join(f"{choice.platform} {choice.asset}" for choice in c.choices)
        doubt = next((r for r in c.reasons if "binary path" not in r), "")
        parts.append(
            f"candidate {index} ({c.confidence:.2f}): {picks}" + (f" [{doubt}]" if doubt else "")
        )
    return "; ".join(parts) or "no candidates"


def hints_text(result: MatchResult, *, limit: int = 3) -> str:
    """The matcher's view for the model when it was not confident: per candidate, the
    asset it would install on each platform and why it hesitated."""
    lines = []
    for index, candidate in enumerate(result.candidates[:limit], 1):
        lines.append(f"candidate {index} (confidence {candidate.confidence:.2f}):")
        lines += [f"  {c.platform}: {c.asset}" for c in candidate.choices]
        lines += [f"  no build: {key}" for key in candidate.unsupported]
        lines += [f"  note: {reason}" for reason in candidate.reasons]
    if result.unplaced:
        lines.append("assets naming no OS: " + ", ".join(result.unplaced[:10]))
    if result.tool and result.other_tools:
        lines.append(
            f"the release also carries other tools' builds ({', '.join(result.other_tools[:6])}): "
            f"install {result.tool!r}'s own, its exact name first, then a name it prefixes"
        )
    if result.tag_prefix:
        lines.append(f"tags of this tool start with {result.tag_prefix!r} (tag_prefix)")
    return fenced("\n".join(lines) or "(no candidates)", "text")
