"""Checks on a candidate recipe that need no container: cheap, exact, and the best
repair feedback we can give, because each names the platform, the release and the fix.

A recipe from the deterministic matcher or from an LLM passes here before it is ever
downloaded or run. The replay check is the important one: the recipe is rendered with
the installer's own renderer (tsukud.recipe) for linux/darwin x amd64/arm64 at the most
recent releases, and every rendered name must be an asset of that release and a build
for that platform. That is what catches a literal version (it breaks at the previous
release), an identity mapping where the names say ``x86_64`` or ``Darwin``, and a
mapping that sends arm64 to an amd64 build.
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections.abc import Iterable, Mapping, Sequence

from tsukud.create.assets import (
    OTHER_ARCH,
    arm_means_arm64,
    as_released,
    drop_reason,
    filter_release,
    is_bare_arm,
    kept_as_arm64,
    usable_releases,
    with_tag_prefix,
)
from tsukud.create.tokens import UNIVERSAL, parse_asset
from tsukud.install.shadowing import is_guarded
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    AmbiguousAsset,
    AssetNotFound,
    CpanInstallStep,
    DownloadArchiveStep,
    EcosystemStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    InstallBinariesStep,
    InstallShellInitStep,
    PipExecStep,
    Platform,
    Recipe,
    RecipeError,
    RecipeParseError,
    RenderedStep,
    ResolvedVersion,
    RunCommandStep,
    UnsupportedPlatform,
    dump_recipe,
    parse_recipe,
    pinned_version,
    render_recipe,
    tag_to_version,
    version_source,
)
from tsukud.recipe.homebrew import formula_of
from tsukud.recipe.model import HTTP_JSON_SOURCE
from tsukud.recipe.release import Release
from tsukud.recipe.version_range import compare_versions, parse_range, sort_key
from tsukud.validation.findings import (
    BINARY_PATH,
    GUARDED_COMMAND,
    INTENT,
    LIMITS,
    LITERAL_VERSION,
    REPLAY,
    SCHEMA,
    UNSUPPORTED,
    VERIFY_COMMAND,
    WRONG_PLATFORM,
    Finding,
)
from tsukud.validation.verify_command import verify_command_findings

MAX_STEPS = 20
MAX_DEPENDENCIES = 5
MIN_REPLAY_RELEASES = 3

# A verify command may run a binary by its path: ``{install_dir}/bin/tool``.
INSTALL_DIR = "{install_dir}/"


# ------------------------------------------------------------------------- pieces


def binary_path_findings(path: str, *, where: str) -> list[Finding]:
    """Install paths stay inside the tool's directory: relative, no ``..``, no ``\\``."""
    problem = None
    if not path.strip():
        problem = "is empty"
    elif any(ord(c) < 32 or ord(c) == 127 for c in path):
        problem = "contains control characters"
    elif "\\" in path:
        problem = "contains a backslash"
    elif path.startswith(("/", "~")):
        problem = "must be relative to the archive root"
    elif ".." in path.split("/"):
        problem = "must not contain '..'"
    if problem is None:
        return []
    return [Finding(category=BINARY_PATH, message=f"{where} {path!r} {problem}")]


def literal_version_findings(
    text: str | None, versions: Iterable[str], *, where: str
) -> list[Finding]:
    """A release's own version written out where ``{version}`` belongs pins the recipe
    to that release (the reference's worst bug). Versions without a dot are skipped:
    a bare ``7`` matches too much to be evidence. Only the left edge must be a
    boundary: ``1.2.3.0`` still spells release 1.2.3 literally."""
    if not text:
        return []
    for version in versions:
        if "." in version and re.search(r"(?<![0-9])" + re.escape(version), text):
            return [
                Finding(
                    category=LITERAL_VERSION,
                    message=(
                        f"{where} {text!r} contains the literal version {version}; "
                        "write {version} instead so the recipe works for every release"
                    ),
                )
            ]
    return []


def _install_steps(recipe: Recipe) -> list[GitHubArchiveStep | GitHubFileStep]:
    return [s for s in recipe.steps if isinstance(s, GitHubArchiveStep | GitHubFileStep)]


_BinaryStep = GitHubArchiveStep | GitHubFileStep | DownloadArchiveStep | InstallBinariesStep


def _binary_steps(recipe: Recipe) -> list[_BinaryStep]:
    """Steps that name binaries: the GitHub actions and the URL actions'
    ``download_archive`` / ``install_binaries``."""
    return [s for s in recipe.steps if isinstance(s, _BinaryStep)]


# ------------------------------------------------------------------------- checks


def check_schema(recipe: Recipe) -> list[Finding]:
    """The recipe must survive being written and read back: what we would save is
    what the installer would load."""
    try:
        parse_recipe(dump_recipe(recipe), f"{recipe.metadata.name}.toml")
    except RecipeParseError as exc:
        return [Finding(category=SCHEMA, message=exc.message)]
    found = []
    if not recipe.steps:
        found.append(Finding(category=SCHEMA, message="the recipe has no [[steps]]"))
    version = recipe.version
    http_json = (
        version is not None
        and version.source == HTTP_JSON_SOURCE
        and bool(version.url and version.version_path)
    )
    # An ecosystem step's versions come from its registry (no [version] needed), a
    # bottle's from the formulae API.
    ecosystem = bool(recipe.steps) and all(isinstance(s, EcosystemStep) for s in recipe.steps)
    homebrew = formula_of(recipe) is not None
    # A recipe read from an install page may name one version (no source, literal URLs).
    pinned = pinned_version(recipe) is not None
    if (
        not http_json
        and not ecosystem
        and not homebrew
        and not pinned
        and (version is None or not version.github_repo)
    ):
        found.append(
            Finding(
                category=SCHEMA,
                message='[version] needs source = "github_releases" and github_repo',
            )
        )
    return found


# Steps a generated recipe may not have: they act beyond the tool (a command, the
# shell's start-up), or install what its validation does not prove (pip_exec's lock of
# wheels, cpan_install's build); a person's recipe may.
_PERSONS_ONLY = (
    GenericStep,
    RunCommandStep,
    InstallShellInitStep,
    PipExecStep,
    CpanInstallStep,
)


def check_limits(recipe: Recipe) -> list[Finding]:
    found = []
    if len(recipe.steps) > MAX_STEPS:
        found.append(
            Finding(
                category=LIMITS,
                message=f"the recipe has {len(recipe.steps)} steps (limit {MAX_STEPS})",
            )
        )
    deps: set[str] = set(recipe.metadata.dependencies or ())
    deps.update(recipe.metadata.runtime_dependencies or ())
    for step in recipe.steps:
        deps.update(step.dependencies or ())
    if len(deps) > MAX_DEPENDENCIES:
        found.append(
            Finding(
                category=LIMITS,
                message=f"the recipe has {len(deps)} dependencies (limit {MAX_DEPENDENCIES})",
            )
        )
    for index, step in enumerate(recipe.steps):
        if isinstance(step, _PERSONS_ONLY):
            if step.action in ("run_command", "install_shell_init"):
                # Both act on this machine beyond the tool (a command, the shell's
                # start-up): a person's recipe may ask; a generated one may not.
                message = f"steps[{index}]: {step.action} is not allowed in generated recipes"
            else:
                message = (
                    f"steps[{index}]: action {step.action} is not allowed in generated "
                    "recipes (use github_archive or github_file)"
                )
            found.append(Finding(category=LIMITS, message=message))
    return found


def check_verify(recipe: Recipe) -> list[Finding]:
    verify = recipe.verify
    found = verify_command_findings(verify.command if verify else None)
    for i, extra in enumerate((verify.additional or ()) if verify else ()):
        found += verify_command_findings(extra.command, where=f"verify.additional[{i}] command")
    installed = binary_names(recipe)
    command = (verify.command or "").split() if verify else []
    if not found and command and installed:
        runs = command[0]
        paths = binary_paths(recipe)
        if runs.startswith(INSTALL_DIR) and runs.removeprefix(INSTALL_DIR) not in paths:
            found.append(
                Finding(
                    category=VERIFY_COMMAND,
                    message=(
                        f"verify command runs {runs!r}, which the recipe does not install "
                        f"(it installs: {', '.join(INSTALL_DIR + p for p in sorted(paths))})"
                    ),
                )
            )
        elif not runs.startswith(INSTALL_DIR) and runs not in installed:
            found.append(
                Finding(
                    category=VERIFY_COMMAND,
                    message=(
                        f"verify command runs {runs!r}, which the recipe does not "
                        f"install (it installs: {', '.join(sorted(installed))})"
                    ),
                )
            )
    return found


def check_binaries(recipe: Recipe) -> list[Finding]:
    found = []
    for index, step in enumerate(recipe.steps):
        where = f"steps[{index}]"
        if isinstance(step, GitHubFileStep) and step.binary is not None:
            found += binary_path_findings(step.binary, where=f"{where}.binary")
        if isinstance(step, _BinaryStep):
            for i, entry in enumerate(step.binaries or ()):
                found += binary_path_findings(entry.src, where=f"{where}.binaries[{i}]")
                if entry.dest is not None:
                    found += binary_path_findings(entry.dest, where=f"{where}.binaries[{i}].dest")
    return found + guarded_findings(recipe)


def guarded_findings(recipe: Recipe) -> list[Finding]:
    """A command that guards credentials or privileges (``sudo``, ``ssh``, ``gpg`` …) is
    never proposed by a recipe for another tool: the installer would refuse it anyway
    (``install/shadowing.py``), and a generator that writes one is following an
    injected instruction, not the project."""
    tool = recipe.metadata.name.lower()
    names = set(binary_names(recipe))
    for step in recipe.steps:
        if isinstance(step, EcosystemStep):
            names.update(posixpath.basename(e) for e in step.executables)
    return [
        Finding(
            category=GUARDED_COMMAND,
            message=f"binary {name!r} is named like a command that guards credentials or "
            f"privileges; only the recipe for {name} may install it: leave it out",
        )
        for name in sorted(names)
        if name.lower() != tool and is_guarded(name)
    ]


def check_literal_versions(recipe: Recipe, versions: Sequence[str]) -> list[Finding]:
    found = []
    for index, step in enumerate(_install_steps(recipe)):
        found += literal_version_findings(
            step.asset_pattern, versions, where=f"steps[{index}].asset_pattern"
        )
        for i, entry in enumerate(step.binaries or ()):
            found += literal_version_findings(
                entry.src, versions, where=f"steps[{index}].binaries[{i}]"
            )
    verify = recipe.verify
    if verify is not None:
        for pattern in (verify.pattern, *(verify.patterns or ())):
            found += literal_version_findings(pattern, versions, where="verify pattern")
    return found


# ------------------------------------------------------------------------- replay


def _closest(name: str, release: Release, target: Platform) -> str | None:
    """The asset to suggest when ``name`` is not one: a build for ``target`` first, then
    a build that names no other platform, then any usable asset; string similarity only
    picks within the first group that is not empty. Similarity alone would happily
    suggest ``linux_386`` for ``linux_x86_64``, or ``linux_arm64`` for ``linux_x64``,
    and that suggestion goes to the model as repair feedback. Checksums, signatures and
    other platforms' installers are never suggested."""
    kept = filter_release(release).kept
    parsed = [(asset, parse_asset(asset, release.version)) for asset in kept]
    groups = (
        [a for a, p in parsed if p.os == target.os and p.arch == target.arch],
        [a for a, p in parsed if p.os in (target.os, None) and p.arch in (None, UNIVERSAL)],
        list(kept),
    )
    for group in groups:
        if group:
            return difflib.get_close_matches(name, group, n=1, cutoff=0.0)[0]
    return None


def _platform_assets(release: Release, target: Platform) -> list[str]:
    """Kept assets of ``release`` whose names claim exactly ``target``."""
    out = []
    for name in filter_release(release).kept:
        parsed = parse_asset(name, release.version)
        if parsed.os == target.os and parsed.arch == target.arch:
            out.append(name)
    return out


def _judge_rendered(step: RenderedStep, release: Release, target: Platform) -> list[Finding]:
    """The rendered name exists; is it a build for ``target``?"""
    name = step.asset_name
    where = f"{target.key}: rendered {name!r} at {release.tag}"
    reason = drop_reason(name, release.version)
    if reason == OTHER_ARCH and kept_as_arm64(name, release):
        reason = None
    if reason is not None:
        return [
            Finding(
                category=INTENT,
                message=f"{where}, which is not an executable or archive ({reason})",
                platform=target.key,
                release=release.tag,
            )
        ]
    parsed = parse_asset(name, release.version)
    parsed = as_released(parsed, is_bare_arm(parsed) and arm_means_arm64(release))
    if parsed.os is not None and parsed.os != target.os:
        return [
            Finding(
                category=WRONG_PLATFORM,
                message=f"{where}, a {parsed.os} build; check os_mapping",
                platform=target.key,
                release=release.tag,
            )
        ]
    if parsed.arch in ("amd64", "arm64") and parsed.arch != target.arch:
        rosetta = (
            target.key == "darwin/arm64"
            and parsed.arch == "amd64"
            and not _platform_assets(release, target)
        )
        if not rosetta:
            return [
                Finding(
                    category=WRONG_PLATFORM,
                    message=(
                        f"{where}, an {parsed.arch} build (it would fail with 'exec "
                        "format error'); check arch_mapping"
                    ),
                    platform=target.key,
                    release=release.tag,
                )
            ]
    return []


def _tag_prefix(recipe: Recipe) -> str | None:
    """The recipe's tag prefix as the installer honours it (with ``github_repo``)."""
    try:
        return version_source(recipe).tag_prefix
    except RecipeError:
        return None


def replay(
    recipe: Recipe,
    releases: Sequence[Release],
    *,
    expected: Mapping[str, str] | None = None,
    min_releases: int = MIN_REPLAY_RELEASES,
    platforms: Sequence[Platform] = STANDARD_PLATFORMS,
) -> list[Finding]:
    """Render ``recipe`` for each platform at the newest ``min_releases`` releases (all
    of them when there are fewer) and judge every name. With a ``tag_prefix`` only the
    tool's own releases count, and ``{version}`` is what follows the prefix.

    ``expected`` maps ``os/arch`` to the asset the author meant at the newest release
    (the matcher's pick, or an example the model gave); a different rendered name is
    an error even when it exists.
    """
    prefix = _tag_prefix(recipe)
    usable = usable_releases(releases)
    recent = usable_releases(with_tag_prefix(usable, prefix))[: max(1, min_releases)]
    found: list[Finding] = []
    if prefix and usable and not recent:
        shown = ", ".join(r.tag for r in usable[:5])
        return [
            Finding(
                category=REPLAY,
                message=f"no release tag starts with tag_prefix {prefix!r} (tags: {shown})",
            )
        ]
    supported = 0
    for target in platforms:
        for position, release in enumerate(recent):
            resolved = ResolvedVersion(tag_to_version(release.tag, prefix) or "", release.tag)
            try:
                rendered = render_recipe(recipe, resolved, target, assets=release.assets)
            except UnsupportedPlatform:
                present = _platform_assets(release, target) if position == 0 else []
                if present:
                    found.append(
                        Finding(
                            category=UNSUPPORTED,
                            severity="warning",
                            message=(
                                f"{target.key}: the recipe does not install here, but "
                                f"{release.tag} has {present[0]!r}"
                            ),
                            platform=target.key,
                            release=release.tag,
                        )
                    )
                break
            except AssetNotFound as exc:
                if position > 0 and not _platform_assets(release, target):
                    # An older release without a build for this platform: nothing to
                    # name there, and no reason to refuse the recipe.
                    continue
                name = str(exc.data.get("pattern", ""))
                closest = _closest(name, release, target)
                hint = f"; closest: {closest!r}" if closest else ""
                found.append(
                    Finding(
                        category=REPLAY,
                        message=(
                            f"{target.key}: rendered {name!r}, not among the assets of "
                            f"{release.tag}{hint}"
                        ),
                        platform=target.key,
                        release=release.tag,
                    )
                )
                continue
            except AmbiguousAsset as exc:
                found.append(
                    Finding(
                        category=REPLAY,
                        message=f"{target.key} at {release.tag}: {exc.message}",
                        platform=target.key,
                        release=release.tag,
                    )
                )
                continue
            except RecipeError as exc:
                found.append(
                    Finding(
                        category=SCHEMA,
                        message=f"{target.key} at {release.tag}: {exc.message}",
                        platform=target.key,
                        release=release.tag,
                    )
                )
                continue
            if position == 0:
                supported += 1
            for step in rendered:
                found += _judge_rendered(step, release, target)
                want = (expected or {}).get(target.key)
                if position == 0 and want is not None and step.asset_name != want:
                    found.append(
                        Finding(
                            category=INTENT,
                            message=(
                                f"{target.key}: rendered {step.asset_name!r} at "
                                f"{release.tag}, but the intended asset is {want!r}"
                            ),
                            platform=target.key,
                            release=release.tag,
                        )
                    )
    if recent and supported == 0 and not any(f.category == REPLAY for f in found):
        found.append(
            Finding(
                category=UNSUPPORTED,
                message="the recipe installs on none of linux/darwin x amd64/arm64",
            )
        )
    return found


def _lowest(versions: str) -> str | None:
    """The lower bound of a version range (``None``: open below)."""
    bounds = [v for op, v in parse_range(versions) if op in (">=", ">", "==")]
    return max(bounds, key=sort_key) if bounds else None


def check_version_ranges(recipe: Recipe) -> list[Finding]:
    """Version overrides for one platform come newest naming first and never claim
    the same lower bound: overlapping ranges would give one release two namings."""
    found = []
    for target in STANDARD_PLATFORMS:
        seen: list[tuple[int, str | None]] = []
        for index, step in enumerate(recipe.steps):
            when = step.when
            if when is None or not when.version or not step.matches(target):
                continue
            low = _lowest(when.version)
            for earlier, earlier_low in seen:
                if earlier_low is None or (
                    low is not None and compare_versions(low, earlier_low) >= 0
                ):
                    found.append(
                        Finding(
                            category=SCHEMA,
                            message=(
                                f"{target.key}: steps[{index}] (version {when.version!r}) "
                                f"must come before steps[{earlier}], or their ranges "
                                "overlap: order version-ranged steps newest naming first"
                            ),
                            platform=target.key,
                        )
                    )
                    break
            seen.append((index, low))
    return found


def check_on_paper(recipe: Recipe) -> list[Finding]:
    """The checks that need no release list: schema, limits, verify command, binary
    paths. What ``create.save`` re-runs on a recipe the client sends back."""
    return [
        *check_schema(recipe),
        *check_limits(recipe),
        *check_verify(recipe),
        *check_binaries(recipe),
        *check_version_ranges(recipe),
    ]


def check_recipe(
    recipe: Recipe,
    releases: Sequence[Release],
    *,
    expected: Mapping[str, str] | None = None,
    min_releases: int = MIN_REPLAY_RELEASES,
) -> list[Finding]:
    """Every static check; an empty list (or only warnings) means the recipe may go
    on to container validation. Replay runs only on a recipe that is valid on paper."""
    found = check_on_paper(recipe)
    found += check_literal_versions(
        recipe, [r.version for r in usable_releases(with_tag_prefix(releases, _tag_prefix(recipe)))]
    )
    if any(f.severity == "error" for f in found):
        return found
    return found + replay(recipe, releases, expected=expected, min_releases=min_releases)


def binary_paths(recipe: Recipe) -> set[str]:
    """Where a recipe's binaries land in the tool's directory (``bin/tool``, or a
    ``dest``): what a verify command may run as ``{install_dir}/<path>``."""
    paths = set()
    for step in _binary_steps(recipe):
        if isinstance(step, GitHubFileStep) and step.binary is not None:
            paths.add("bin/" + posixpath.basename(step.binary))
        directory = (
            not isinstance(step, GitHubFileStep)
            and (step.install_mode or "").lower() == "directory"
        )
        for entry in step.binaries or ():
            kept = entry.src if directory else "bin/" + posixpath.basename(entry.src)
            paths.add(entry.dest or kept)
    return paths


def binary_names(recipe: Recipe) -> set[str]:
    """Command names a recipe puts on PATH (what a verify command may start with)."""
    return {posixpath.basename(path) for path in binary_paths(recipe)}
