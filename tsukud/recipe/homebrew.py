"""Homebrew bottles as names and rules: which image, tag and platform entry hold a
formula's bottle. Pure; the requests are ``tsukud/install/homebrew/``.

Homebrew publishes each formula as an OCI image ``homebrew/core/<image>`` whose tag is
the formula's package version (``<version>[_<revision>][-<rebuild>]``); the image
index has one entry per bottle platform, named by its ``org.opencontainers.image.ref.name``
annotation ``<pkg_version>.<bottle tag>[.<rebuild>]``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from tsukud.recipe.model import (
    HOMEBREW_SOURCE,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    Recipe,
)
from tsukud.recipe.platform import Platform

REF_NAME = "org.opencontainers.image.ref.name"
BOTTLE_DIGEST = "sh.brew.bottle.digest"
INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"
# macOS major version → bottle codename, newest first (Intel tags are the bare codename).
MACOS_CODENAMES: tuple[tuple[int, str], ...] = (
    (26, "tahoe"),
    (15, "sequoia"),
    (14, "sonoma"),
    (13, "ventura"),
    (12, "monterey"),
    (11, "big_sur"),
)
_TAG_RE = re.compile(r"^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$")


class BottleRef(msgspec.Struct, frozen=True, kw_only=True):
    """One bottle as the installer downloads it: the blob's URL and sha256 (from the
    platform manifest), and the name brew's cache would give the file."""

    formula: str
    pkg_version: str
    platform_tag: str
    url: str
    sha256: str

    @property
    def asset_name(self) -> str:
        return f"{self.formula}--{self.pkg_version}.{self.platform_tag}.bottle.tar.gz"

    @property
    def work_file(self) -> str:
        """What tsuku saves the blob as in the work directory (``openssl@3.tar.gz``):
        the name a plan's ``download_file`` and ``extract`` carry. ``asset_name`` stays
        the name pins and records use."""
        return f"{self.formula}.tar.gz"


def image_name(formula: str) -> str:
    """``GitHubPackages.image_formula_name``: ``openssl@3`` → ``openssl/3``,
    ``libsigc++`` → ``libsigcxx``."""
    return formula.replace("@", "/").replace("+", "x")


def repository(formula: str) -> str:
    return f"homebrew/core/{image_name(formula)}"


def pkg_version(stable: str, revision: int) -> str:
    """``PkgVersion#to_s``: the revision is appended only when there is one."""
    return stable if not revision else f"{stable}_{revision}"


def oci_tag(pkg: str, rebuild: int) -> str:
    tag = pkg if not rebuild else f"{pkg}-{rebuild}"
    if not _TAG_RE.match(tag):
        raise ValueError(f"{tag!r} is not a valid OCI tag")
    return tag


def split_oci_tag(tag: str) -> tuple[str, int]:
    """``3.3.0_1-2`` → (``3.3.0_1``, 2); a tag without a rebuild has rebuild 0."""
    head, sep, tail = tag.rpartition("-")
    if sep and tail.isdigit():
        return head, int(tail)
    return tag, 0


def upstream_version(pkg: str) -> str:
    """``3.3.0_1`` → ``3.3.0``: the version a recipe's ``{version}`` means."""
    head, sep, tail = pkg.rpartition("_")
    return head if sep and tail.isdigit() else pkg


def platform_tags(target: Platform, macos_major: int | None = None) -> tuple[str, ...]:
    """The bottle tags that can serve ``target``, in brew's order of preference: the
    exact tag, ``all``, then (macOS only) older releases of the same CPU. Linux has
    no fallback across CPUs; with the macOS release unknown every codename is tried,
    newest first."""
    if target.os == "linux":
        cpu = {"amd64": "x86_64", "arm64": "arm64"}.get(target.arch)
        return (f"{cpu}_linux", "all") if cpu else ("all",)
    if target.os == "darwin":
        prefix = {"arm64": "arm64_", "amd64": ""}.get(target.arch)
        if prefix is None:
            return ("all",)
        names = [
            f"{prefix}{name}"
            for major, name in MACOS_CODENAMES
            if macos_major is None or major <= macos_major
        ]
        return (*names[:1], "all", *names[1:])
    return ()


def index_entries(index: Mapping[str, Any], pkg: str, rebuild: int) -> dict[str, dict[str, Any]]:
    """The image index's platform entries keyed by bottle tag: those whose ref name is
    ``<pkg>.<tag>`` (or ``<pkg>.<tag>.<rebuild>`` for a rebuilt bottle)."""
    out: dict[str, dict[str, Any]] = {}
    for entry in index.get("manifests") or []:
        if not isinstance(entry, dict):
            continue
        annotations = entry.get("annotations") or {}
        ref = annotations.get(REF_NAME) if isinstance(annotations, dict) else None
        if not isinstance(ref, str) or not ref.startswith(pkg + "."):
            continue
        rest = ref[len(pkg) + 1 :]
        if rebuild:
            rest, dot, number = rest.rpartition(".")
            if not dot or number != str(rebuild):
                continue
        if rest and "." not in rest:
            out[rest] = entry
    return out


def choose_tag(available: Sequence[str], wanted: Sequence[str]) -> str | None:
    return next((tag for tag in wanted if tag in available), None)


def pick_tag_for(requested: str, tags: Sequence[str]) -> str | None:
    """The registry tag of the bottle of upstream version ``requested``: the newest
    revision and rebuild of it (``3.3.0`` → ``3.3.0_2-1`` over ``3.3.0_1``)."""
    pattern = re.compile(rf"{re.escape(requested)}(?:_(\d+))?(?:-(\d+))?")
    best: tuple[int, int, str] | None = None
    for tag in tags:
        m = pattern.fullmatch(tag)
        if m is None:
            continue
        key = (int(m.group(1) or 0), int(m.group(2) or 0), tag)
        if best is None or key > best:
            best = key
    return best[2] if best is not None else None


def formula_of(recipe: Recipe) -> str | None:
    """The formula whose version the recipe installs, or None when its version comes
    from elsewhere: ``[version] source = "homebrew"`` (its ``formula``, else the first
    ``homebrew`` step's, else the recipe's name), or no version source at all in a
    recipe whose downloads are all bottles (the registry's usual shape)."""
    section = recipe.version
    step = next((s for s in recipe.steps if isinstance(s, HomebrewStep)), None)
    if section is not None and section.source == HOMEBREW_SOURCE:
        if section.formula:
            return section.formula
        return step.formula if step is not None else recipe.metadata.name
    if step is None or (section is not None and (section.source or section.github_repo)):
        return None
    github = any(isinstance(s, GitHubArchiveStep | GitHubFileStep) for s in recipe.steps)
    return None if github else step.formula
