"""Release tags ↔ the versions recipes talk about.

A recipe's ``{version}`` is the *normalised* version (``1.2.3``) while download URLs need
the *raw* tag (``v1.2.3``, ``kustomize/v5.7.1``, ``ruby-3.3.10``). Guessing one from the
other is how peer tools end up with 404s (a fixed ``v`` prefix), so a version is always
resolved against the tags a release source actually lists, and both halves travel
together as :class:`ResolvedVersion`.

The rules follow the reference tsuku (internal/version): ``normalize_version`` is its
``normalizeVersion``; ``tag_prefix`` filters tags and is stripped *without* further
normalisation; a ``tag_prefix`` is honoured only when ``[version] github_repo`` is set
(recipes such as kustomize rely on that, see :func:`version_source`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import msgspec

from tsukud.recipe.model import (
    GITHUB_VERSION_SOURCES,
    EcosystemStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    PipExecStep,
    Recipe,
    RecipeError,
    UnsupportedVersionSource,
    VersionNotFound,
)
from tsukud.recipe.version_range import compare_versions as compare_versions
from tsukud.recipe.version_range import sort_key as _sort_key

DEFAULT_STABLE_QUALIFIERS = ("release", "final", "lts", "ga", "stable")
_UNSTABLE_WORDS = ("alpha", "beta", "rc", "preview", "snapshot", "nightly", "dev", "weekly")
# PEP 440's short pre-release spellings: 1.0.0a1, 2.1b3 (rc is caught by the words).
_PEP440_PRE = re.compile(r"\d(?:a|b)\d+(?:\.|$)")
_SAFE_VERSION = re.compile(r"(?!.*\.\.)[A-Za-z0-9._+~-]{1,128}")


class ResolvedVersion(msgspec.Struct, frozen=True):
    """A version and the exact tag it was published under."""

    version: str
    tag: str


class VersionSource(msgspec.Struct, frozen=True):
    """Where a recipe's versions come from: a GitHub repo and an optional tag prefix."""

    repo: str
    tag_prefix: str | None = None


def normalize_version(tag: str) -> str:
    """The reference's ``normalizeVersion``: ``v1.2.3``→``1.2.3``, ``kustomize/v5.7.1``→``5.7.1``,
    ``Release_1_15_0``→``1.15.0``, ``go1.21.5``→``1.21.5``."""
    version = tag.removeprefix("v")
    if "/" in version:
        version = version.rsplit("/", 1)[1].removeprefix("v")
    if version.startswith("Release_"):
        version = version.removeprefix("Release_").replace("_", ".")
    return version.removeprefix("go")


def tag_to_version(tag: str, tag_prefix: str | None = None) -> str | None:
    """The version a tag stands for, or ``None`` when it lacks the recipe's ``tag_prefix``."""
    if tag_prefix:
        return tag[len(tag_prefix) :] if tag.startswith(tag_prefix) else None
    return normalize_version(tag)


def candidate_tags(version: str, tag_prefix: str | None = None) -> list[str]:
    """Tags to try, most likely first, when a release must be fetched without a tag list."""
    if tag_prefix:
        return [tag_prefix + version]
    return [f"v{version}", version]


def is_valid_version(version: str) -> bool:
    """The reference skips tags whose normalised form has no digit at all; we also skip
    those that could not name the tool's directory (see :func:`check_version`)."""
    return any(c.isdigit() for c in version) and _SAFE_VERSION.fullmatch(version) is not None


def check_version(resolved: ResolvedVersion, repo: str = "") -> ResolvedVersion:
    """``resolved``, if its version can name the tool's directory and fill a URL.

    A tag is the publisher's text: with a ``tag_prefix`` (or from the latest release) it
    becomes the version as is, and ``tools/<name>-<version>`` must not reach outside
    ``tools/`` (``1.0/../x``) nor ``{version}`` alter a download URL (``?``, ``#``).
    """
    if _SAFE_VERSION.fullmatch(resolved.version) is None:
        where = f" of {repo}" if repo else ""
        raise VersionNotFound(
            f"tag {resolved.tag!r}{where} gives the version {resolved.version!r}, which tsuku "
            "cannot use (a version is letters, digits, '.', '_', '+', '~' and '-', without "
            "'..')",
            hint="Ask for another version (tool@version), or fix the recipe's tag_prefix.",
            repo=repo,
            tag=resolved.tag,
        )
    return resolved


def is_stable_version(version: str, stable_qualifiers: Iterable[str] | None = None) -> bool:
    """Prerelease detection: a ``-suffix`` is unstable unless it is a stable qualifier
    (``1.0-lts``); without one, words like ``beta``/``rc``/``nightly``/``dev`` and PEP 440's
    ``1.0a1``/``1.0b2`` mark it unstable."""
    qualifiers = {q.lower() for q in (stable_qualifiers or DEFAULT_STABLE_QUALIFIERS)}
    lowered = version.lower()
    _core, dash, suffix = lowered.partition("-")
    if dash:
        return suffix in qualifiers
    return not any(word in lowered for word in _UNSTABLE_WORDS) and not _PEP440_PRE.search(lowered)


class PublishedRelease(msgspec.Struct, frozen=True):
    """What the choice of "the latest release" reads of a GitHub release: its tag and
    the two flags its publisher set."""

    tag: str
    draft: bool = False
    prerelease: bool = False


def is_prerelease(
    version: str, *, flagged: bool = False, stable_qualifiers: Iterable[str] | None = None
) -> bool:
    """A pre-release by GitHub's flag *or* by its version's shape (``2.0.0-beta.1``,
    ``1.2.3-rc1``, ``1.0.0a1``, ``1.2.3.dev0``, ``nightly``): the flag is the
    publisher's to set or forget, so an unflagged ``-beta`` tag is still a beta."""
    return flagged or not is_stable_version(version, stable_qualifiers)


def newest_release(
    releases: Iterable[PublishedRelease],
    *,
    tag_prefix: str | None = None,
    stable_qualifiers: Iterable[str] | None = None,
) -> ResolvedVersion | None:
    """The release "latest" means, for ``create`` (the version it validates and pins)
    and ``install``/``outdated``/``upgrade`` (the version they install) alike: one rule,
    so the release installed is the release validated.

    ``releases`` newest first, as GitHub lists them. Drafts never count, nor tags
    without ``tag_prefix`` or whose version could not name a directory. The first
    release that is not a pre-release (:func:`is_prerelease`: flagged, or a pre-release
    by its tag whatever the flag says) wins; a pre-release is taken only when the
    repository has published nothing else (as pip does), and any pre-release can be
    asked for by its version (``tool@2.0.0-beta.1``). None when nothing qualifies.
    GitHub's own ``releases/latest`` is not used: it trusts the flag alone.
    """
    qualifiers = tuple(stable_qualifiers) if stable_qualifiers else None
    first: ResolvedVersion | None = None
    for release in releases:
        version = tag_to_version(release.tag, tag_prefix) if release.tag else None
        if release.draft or version is None or not is_valid_version(version):
            continue
        found = ResolvedVersion(version, release.tag)
        if not is_prerelease(version, flagged=release.prerelease, stable_qualifiers=qualifiers):
            return found
        first = first or found
    return first


def _candidates(tags: Iterable[str], tag_prefix: str | None) -> list[ResolvedVersion]:
    found = []
    for tag in tags:
        version = tag_to_version(tag, tag_prefix)
        if version is not None and is_valid_version(version):
            found.append(ResolvedVersion(version, tag))
    return found


def find_version(
    requested: str,
    tags: Sequence[str],
    *,
    tag_prefix: str | None = None,
    repo: str = "",
) -> ResolvedVersion:
    """Resolve a user's version request against the tags a source lists.

    Without a prefix the match is exact (``tag == v``, ``tag == "v"+v`` or the normalised
    tag equals ``v``), as in the reference. With a prefix an exact match wins, else the
    newest version extending the request at a component boundary (``1.29`` → ``1.29.3``;
    the reference's plain string prefix would also take ``1.290``).
    """
    requested = requested.strip()
    if not tag_prefix:
        for tag in tags:
            if tag in (requested, "v" + requested) or normalize_version(tag) == requested:
                return ResolvedVersion(normalize_version(tag), tag)
    else:
        candidates = _candidates(tags, tag_prefix)
        for candidate in candidates:
            if candidate.version == requested:
                return candidate
        fuzzy = [
            c
            for c in candidates
            if c.version.startswith(requested) and c.version[len(requested)] in ".-+"
        ]
        if fuzzy:
            return max(fuzzy, key=lambda c: _sort_key(c.version))
    where = f" for {repo}" if repo else ""
    prefix = f" (tag prefix {tag_prefix!r})" if tag_prefix else ""
    near = nearest_versions(requested, [c.version for c in _candidates(tags, tag_prefix)])
    hint = (
        f"Versions that exist near {requested}: {', '.join(near)}. Ask for one of them "
        "(tool@version), or leave the version out for the newest."
        if near
        else "The source lists no versions; leave the version out for the newest release."
    )
    raise VersionNotFound(
        f"version {requested} not found{where}{prefix}",
        hint=hint,
        requested=requested,
        repo=repo,
        available=near,
    )


def nearest_versions(requested: str, versions: Iterable[str], n: int = 5) -> list[str]:
    """Up to ``n`` of ``versions`` around where ``requested`` would sort, newest first:
    for ``1.4.9`` the releases just above and below it, for ``9.9.9`` the newest ones."""
    ordered = sorted(set(versions), key=_sort_key)
    at = sum(1 for v in ordered if _sort_key(v) < _sort_key(requested))
    start = max(0, min(at - (n + 1) // 2, len(ordered) - n))
    return list(reversed(ordered[start : start + n]))


def latest_version(
    tags: Sequence[str],
    *,
    tag_prefix: str | None = None,
    stable_qualifiers: Iterable[str] | None = None,
    repo: str = "",
) -> ResolvedVersion:
    """The newest stable version among ``tags`` (prereleases only if nothing else exists).

    Callers should pass release tags with drafts and GitHub-flagged prereleases already
    removed; the word check here catches tags that are not flagged (``v2.0.0-rc1``,
    ``weekly.2024-01-01``).
    """
    qualifiers = tuple(stable_qualifiers) if stable_qualifiers else None
    candidates = [c for c in _candidates(tags, tag_prefix) if "weekly" not in c.tag]
    stable = [c for c in candidates if is_stable_version(c.version, qualifiers)]
    pool = stable or candidates
    if not pool:
        where = f" for {repo}" if repo else ""
        prefix = f" matching prefix {tag_prefix!r}" if tag_prefix else ""
        raise VersionNotFound(f"no valid version tags found{where}{prefix}", repo=repo)
    return max(pool, key=lambda c: _sort_key(c.version))


def version_source(recipe: Recipe) -> VersionSource:
    """Which GitHub repo (and tag prefix) a recipe's versions come from.

    ``[version] github_repo`` wins; otherwise the first github_archive/github_file step's
    ``repo``. A ``tag_prefix`` without ``github_repo`` is ignored, as in the reference:
    recipes like kustomize (``tag_prefix = "kustomize/"``, no ``github_repo``) depend on
    ``normalize_version`` turning ``kustomize/v5.7.1`` into ``5.7.1`` instead.
    """
    section = recipe.version
    if section is not None and section.github_repo:
        return VersionSource(section.github_repo, section.tag_prefix or None)
    for step in recipe.steps:
        if isinstance(step, GitHubArchiveStep | GitHubFileStep):
            return VersionSource(step.repo)
    if section is not None and section.source not in GITHUB_VERSION_SOURCES:
        raise UnsupportedVersionSource(recipe.metadata.name, str(section.source))
    raise RecipeError(
        f"{recipe.metadata.name}: no GitHub repository to resolve versions from "
        "(set [version] github_repo or use a github_archive/github_file step)"
    )


def pinned_version(recipe: Recipe) -> str | None:
    """The one version a recipe with no version source installs, or None when it has a
    source.

    A recipe of plain URL actions with no ``[version]`` section (nothing that names a
    repository, a registry or a formula) has nowhere to ask for a newer release: its URLs
    spell one version out. tsuku itself installs such a recipe as version ``dev``; here
    ``metadata.validated_version`` (which a generated recipe always carries, with the
    sha256 of that version's files) names it, so the install is recorded under its
    real version and ``outdated`` can say it is pinned instead of failing. A recipe of
    that shape without ``validated_version`` is not pinned: it fails as before, asking
    for a version source."""
    section = recipe.version
    if section is not None and (
        section.source
        or section.github_repo
        or section.url
        or any(v not in ("", None) for v in section.extra.values())
    ):
        return None
    sourced = (GitHubArchiveStep, GitHubFileStep, EcosystemStep, HomebrewStep, GenericStep)
    if any(isinstance(step, sourced) for step in recipe.steps):
        return None
    # A pip_exec's lock pins every package: the step's version is the one it installs.
    locked = [s.version for s in recipe.steps if isinstance(s, PipExecStep) and s.version]
    return recipe.metadata.validated_version or (locked[0] if locked else None)


def json_path_value(data: Any, path: str) -> str | None:
    """The text at ``path`` (``a.b.0.c``: keys, and indexes into arrays) of decoded
    JSON, as ``http_json``'s ``version_path`` names it; None when absent or not a
    string or number."""
    node = data
    for part in path.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif (
            isinstance(node, list)
            and part.lstrip("-").isdigit()
            and -len(node) <= int(part) < len(node)
        ):
            node = node[int(part)]
        else:
            return None
    if isinstance(node, bool) or not isinstance(node, str | int | float):
        return None
    return str(node).strip() or None
