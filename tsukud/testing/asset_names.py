"""What a recipe asks a release for, worked out independently of the installer's renderer.

Fixture releases built with ``tsukud.recipe.render`` would rename their assets in step
with any renderer bug, and every install test would still pass. This module reads the
recipe as plain TOML data and follows the recipe format as documented
(``schema/recipe.md``): a step's ``when`` selects it, ``os_mapping``/``arch_mapping``
respell Go's names, and ``{version}``, ``{os}``, ``{arch}`` are replaced in the pattern.
It deliberately shares no code with the renderer (not even the archive-suffix table), so
the two can only agree by both being right.

Only what fixtures need: exact patterns (a pattern with wildcards names no asset here)
and the two install actions; a platform where any selected step is something else, or
where the metadata rules the platform out, gets no assets.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Longest suffix first, as the format documentation lists them.
_FORMAT_BY_SUFFIX = (
    (".tar.gz", "tar.gz"),
    (".tgz", "tar.gz"),
    (".tar.xz", "tar.xz"),
    (".txz", "tar.xz"),
    (".tar.bz2", "tar.bz2"),
    (".tbz2", "tar.bz2"),
    (".tbz", "tar.bz2"),
    (".tar.zst", "tar.zst"),
    (".tzst", "tar.zst"),
    (".tar", "tar"),
    (".zip", "zip"),
    (".gz", "gz"),
    (".xz", "xz"),
    (".bz2", "bz2"),
    (".zst", "zst"),
)
_FORMAT_PARAM = {
    "tar.gz": "tar.gz",
    "tgz": "tar.gz",
    "tar.xz": "tar.xz",
    "txz": "tar.xz",
    "tar.bz2": "tar.bz2",
    "tbz": "tar.bz2",
    "tbz2": "tar.bz2",
    "tar.zst": "tar.zst",
    "tzst": "tar.zst",
    "tar": "tar",
    "zip": "zip",
}
_INSTALL_ACTIONS = ("github_archive", "github_file")


@dataclass(frozen=True)
class ExpectedAsset:
    """One release asset a recipe downloads on some platform, and what must be in it.

    ``binaries`` pairs a path inside the archive (before ``strip_dirs`` is undone) with
    the command's name; a bare-file asset has one pair and no archive.
    """

    name: str
    archive_format: str  # "raw" for a bare executable
    strip_dirs: int
    directory: bool
    binaries: tuple[tuple[str, str], ...]


def format_of_name(name: str) -> str:
    """The archive format a file name announces; ``raw`` when it announces none."""
    lowered = name.lower()
    for suffix, fmt in _FORMAT_BY_SUFFIX:
        if lowered.endswith(suffix):
            return fmt
    return "raw"


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _numbers(version: str) -> list[int]:
    """Leading dotted digits as integers, trailing zeros dropped (``1.2.0`` == ``1.2``)."""
    core = re.match(r"v?(\d+(?:\.\d+)*)", version)
    numbers = [int(x) for x in core.group(1).split(".")] if core else []
    while numbers and numbers[-1] == 0:
        numbers.pop()
    return numbers


def version_in(version: str, condition: str) -> bool:
    """The documented version range: comma-separated ``>=``, ``>``, ``<=``, ``<``,
    ``==``, ``!=`` clauses (a bare version means ``==``), compared number by number."""
    have = _numbers(version)
    for clause in condition.split(","):
        op = re.match(r"\s*(>=|<=|==|!=|>|<|=)?", clause)
        sign = (op.group(1) if op else None) or "=="
        bound = _numbers(clause[op.end() if op else 0 :].strip())
        holds = {
            ">=": have >= bound,
            ">": have > bound,
            "<=": have <= bound,
            "<": have < bound,
            "!=": have != bound,
        }.get(sign, have == bound)
        if not holds:
            return False
    return True


def when_selects(
    when: Mapping[str, Any] | None,
    os: str,
    arch: str,
    libc: str | None,
    version: str | None = None,
) -> bool:
    """The documented ``when`` table: every key it has must hold for the platform (and
    for ``version``, when one is given)."""
    for key, value in (when or {}).items():
        if key == "version":
            ok = version is None or version_in(version, str(value))
        elif key == "platform":
            ok = _platform_in(_as_list(value), os, arch, libc)
        elif key == "os":
            ok = os in _as_list(value)
        elif key == "arch":  # a string, or a list in the registry's newer recipes
            ok = arch in _as_list(value)
        elif key == "libc":
            ok = os != "linux" or libc is None or libc in _as_list(value)
        else:  # linux_family, package_manager, gpu, ...: never true for our targets
            ok = False
        if not ok:
            return False
    return True


def metadata_allows(meta: Mapping[str, Any], os: str, arch: str, libc: str | None) -> bool:
    if "supported_os" in meta and os not in meta["supported_os"]:
        return False
    if "supported_arch" in meta and arch not in meta["supported_arch"]:
        return False
    if os == "linux" and libc and "supported_libc" in meta and libc not in meta["supported_libc"]:
        return False
    return not _platform_in(meta.get("unsupported_platforms", []), os, arch, libc)


def _platform_in(entries: Sequence[Any], os: str, arch: str, libc: str | None) -> bool:
    """``os/arch`` is listed, or ``os/arch/libc`` for this libc."""
    return f"{os}/{arch}" in entries or (libc is not None and f"{os}/{arch}/{libc}" in entries)


def tag_prefix_of(recipe: Mapping[str, Any]) -> str | None:
    """``[version] tag_prefix`` as documented: honoured only with ``github_repo``; a tag
    of the tool is then the prefix followed by ``{version}``."""
    section = recipe.get("version", {})
    prefix = section.get("tag_prefix")
    return str(prefix) if prefix and section.get("github_repo") else None


def fill(template: str, version: str, os: str, arch: str) -> str:
    return template.replace("{version}", version).replace("{os}", os).replace("{arch}", arch)


def _binaries(
    entries: Sequence[Any], version: str, os: str, arch: str
) -> tuple[tuple[str, str], ...]:
    """(path in archive, command name): entries are ``"path"`` or ``{src, dest}``."""
    out = []
    for entry in entries:
        if isinstance(entry, str):
            src, dest = entry, None
        else:
            src, dest = entry["src"], entry.get("dest")
        src = fill(src, version, os, arch)
        command = posixpath.basename(fill(dest, version, os, arch) if dest else src)
        out.append((src, command))
    return tuple(out)


def expected_assets(
    recipe: Mapping[str, Any], version: str, os: str, arch: str, libc: str | None = None
) -> list[ExpectedAsset]:
    """The assets ``recipe`` (its TOML as data) downloads at ``version`` on one platform;
    empty when it does not install there."""
    if not metadata_allows(recipe.get("metadata", {}), os, arch, libc):
        return []
    steps = [
        s for s in steps_at(recipe, version) if when_selects(s.get("when"), os, arch, libc, version)
    ]
    return _assets(steps, version, os, arch)


def steps_at(recipe: Mapping[str, Any], version: str) -> list[Mapping[str, Any]]:
    """The steps that stand for ``version``, as documented: the steps of every
    ``[[version_overrides]]`` table (and every step with a ``when.version``) whose range
    holds it, when there is one; otherwise the unranged ``[[steps]]``."""
    inline = [s for s in recipe.get("steps", []) if "version" in (s.get("when") or {})]
    plain = [s for s in recipe.get("steps", []) if "version" not in (s.get("when") or {})]
    overridden = [s for s in inline if version_in(version, str(s["when"]["version"]))]
    for table in recipe.get("version_overrides", []):
        if version_in(version, str(table["version"])):
            overridden.extend(table.get("steps", []))
    return overridden or plain


def tsuku_assets(
    recipe: Mapping[str, Any], version: str, os: str, arch: str, libc: str | None = None
) -> list[ExpectedAsset]:
    """The assets tsuku (Go) downloads: it reads ``[[steps]]`` only (its recipe struct
    has no ``version_overrides``, and its TOML decoder drops unknown keys, ``when``'s
    included: a ``when`` of only a version matches everywhere) and runs every step whose
    ``when`` matches, so two matching steps are two downloads."""
    if not metadata_allows(recipe.get("metadata", {}), os, arch, libc):
        return []
    known = ("platform", "os", "arch", "libc", "linux_family", "package_manager", "gpu")
    steps = [
        s
        for s in recipe.get("steps", [])
        if when_selects(
            {k: v for k, v in (s.get("when") or {}).items() if k in known}, os, arch, libc
        )
    ]
    return _assets(steps, version, os, arch)


def _assets(
    steps: Sequence[Mapping[str, Any]], version: str, os: str, arch: str
) -> list[ExpectedAsset]:
    if not steps or any(s.get("action") not in _INSTALL_ACTIONS for s in steps):
        return []
    out = []
    for step in steps:
        spelled_os = step.get("os_mapping", {}).get(os, os)
        spelled_arch = step.get("arch_mapping", {}).get(arch, arch)
        name = fill(step["asset_pattern"], version, spelled_os, spelled_arch)
        if any(c in name for c in "*?["):
            return []
        if step["action"] == "github_file":
            entries = [step["binary"]] if "binary" in step else step.get("binaries", [])
            binaries = _binaries(entries, version, os, arch)
            out.append(ExpectedAsset(name, "raw", 0, False, binaries[:1]))
            continue
        given = step.get("archive_format")
        fmt = _FORMAT_PARAM.get(str(given).lower(), "unknown") if given else format_of_name(name)
        if fmt in ("raw", "unknown"):
            return []
        directory = str(step.get("install_mode", "binaries")).lower() == "directory"
        binaries = _binaries(step["binaries"], version, os, arch)
        out.append(ExpectedAsset(name, fmt, int(step.get("strip_dirs", 0)), directory, binaries))
    return out
