"""The ``extract_pattern`` answer a perfect model gives for a human-written recipe.

"The LLM path loses nothing when the model answers with the ground truth" is only a
claim if the ground truth is put into the answer's terms faithfully. This reads a
recipe platform by platform (which step installs linux/darwin x amd64/arm64, and what
it downloads, unpacks and installs there) and writes the smallest answer that says the
same: the first installed platform's choices as the base, and for every other platform
only what differs, per OS when both of its arches agree.

The answer's ``binaries`` spell ``{os}``/``{arch}`` as its asset names do, the recipe
format's as the standard names; where the mapping respells them the standard name is
written out, so converting the answer back installs exactly what the recipe installs.
What the answer cannot say raises :class:`Inexpressible` with the reason.

An answer names one release's builds. A recipe with version-ranged steps (older
releases named otherwise) is read at the version the create run validates, the newest:
its steps for that version are the ones the answer must say.
"""

from __future__ import annotations

import posixpath
import re
from typing import Any, get_args

from tsukud.create.answer import AnswerFormat
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    ArchiveFormat,
    GitHubArchiveStep,
    GitHubFileStep,
    Platform,
    Recipe,
    When,
    detect_format,
    matching_steps,
)
from tsukud.recipe.model import ARCHIVE_FORMAT_ALIASES

_FIELDS = (
    "asset_pattern",
    "asset_type",
    "archive_format",
    "strip_dirs",
    "binaries",
    "os_mapping",
    "arch_mapping",
)
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


class Inexpressible(Exception):
    """The recipe says something the answer schema cannot."""


def _covered(recipe: Recipe, target: Platform, version: str | None) -> bool:
    meta = recipe.metadata
    if meta.supported_os is not None and target.os not in meta.supported_os:
        return False
    if meta.supported_arch is not None and target.arch not in meta.supported_arch:
        return False
    if meta.unsupported_platforms and target.key in meta.unsupported_platforms:
        return False
    return bool(matching_steps(recipe, target, version))


def _check_when(when: When | None) -> None:
    if when is None:
        return
    if when.linux_family or when.package_manager or when.gpu or when.extra:
        raise Inexpressible("a when clause beyond os/arch/platform")
    if when.libc is not None and set(when.libc) != {"glibc", "musl"}:
        raise Inexpressible("a step for one libc only")


def _answer_format(step: GitHubArchiveStep) -> str | None:
    """The answer's ``archive_format``: only when the name does not show it."""
    shown = detect_format(step.asset_pattern.replace("{version}", "1.0.0"))
    given = step.archive_format
    fmt = ARCHIVE_FORMAT_ALIASES.get(given.lower()) if given else shown
    if fmt is shown and shown is not ArchiveFormat.RAW:
        return None
    if fmt is None or fmt.value not in get_args(AnswerFormat):
        raise Inexpressible(f"archive format {given or shown.value}")
    return fmt.value


def _binary(src: str, dest: str | None, spelled: dict[str, tuple[str, str]]) -> Any:
    for key, (standard, spelling) in spelled.items():
        if standard != spelling:
            src = src.replace(key, standard)
    if dest is not None:
        return {"src": src, "dest": dest}
    if _PLACEHOLDER.search(posixpath.basename(src)):
        raise Inexpressible(f"binary {src!r} installed under a templated name")
    return src


def _desired(recipe: Recipe, target: Platform, version: str | None) -> dict[str, Any]:
    """What the recipe installs on ``target`` at ``version``, in the answer's terms."""
    selected = [step for _, step in matching_steps(recipe, target, version)]
    if len(selected) != 1 or not isinstance(selected[0], GitHubArchiveStep | GitHubFileStep):
        raise Inexpressible(f"{target.key}: not exactly one github_archive/github_file step")
    step = selected[0]
    _check_when(step.when)
    if any(c in step.asset_pattern for c in "*?["):
        raise Inexpressible("a wildcard asset pattern")
    spelled_os = (step.os_mapping or {}).get(target.os, target.os)
    spelled_arch = (step.arch_mapping or {}).get(target.arch, target.arch)
    spelled = {"{os}": (target.os, spelled_os), "{arch}": (target.arch, spelled_arch)}
    out: dict[str, Any] = {
        "asset_pattern": step.asset_pattern,
        # Always given: ``{os}``/``{arch}`` in a binary's src follow the mapping too.
        "os_mapping": {target.os: spelled_os},
        "arch_mapping": {target.arch: spelled_arch},
    }
    if isinstance(step, GitHubFileStep):
        if step.binary is not None:
            entry = _binary(step.binary, None, spelled)
        elif step.binaries:
            entry = _binary(step.binaries[0].src, step.binaries[0].dest, spelled)
        else:
            raise Inexpressible("a github_file step without a binary")
        return {
            **out,
            "asset_type": "binary",
            "archive_format": None,
            "strip_dirs": 0,
            "binaries": [entry],
        }
    if (step.install_mode or "binaries").lower() != "binaries":
        raise Inexpressible(f"install_mode {step.install_mode}")
    if step.checksum_asset or step.checksum_url or step.extra:
        raise Inexpressible("checksums or unmodelled parameters")
    return {
        **out,
        "asset_type": "archive",
        "archive_format": _answer_format(step),
        "strip_dirs": step.strip_dirs or 0,
        "binaries": [_binary(b.src, b.dest, spelled) for b in step.binaries],
    }


def _diff(have: dict[str, Any], want: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in _FIELDS:
        if key in ("os_mapping", "arch_mapping"):
            extra = {k: v for k, v in want[key].items() if have[key].get(k) != v}
            if extra:
                out[key] = extra
        elif have[key] != want[key]:
            out[key] = want[key]
    if "asset_type" in out and want["archive_format"] is not None:
        out["archive_format"] = want["archive_format"]
    return out


def _tag_prefix(recipe: Recipe) -> str | None:
    """The prefix the tags carry before ``{version}``. A reference-style
    ``tag_prefix = "kustomize/"`` without ``github_repo`` is ignored by the installer,
    which relies on ``kustomize/v5.4.2`` normalising to ``5.4.2``: the answer's
    (always honoured) prefix is then ``kustomize/v``."""
    section = recipe.version
    if section is None:
        return None
    if section.source not in (None, "github", "github_releases", "github_tags"):
        raise Inexpressible(f"version source {section.source}")
    if not section.tag_prefix:
        return None
    if section.github_repo:
        return section.tag_prefix
    return section.tag_prefix + "v" if section.tag_prefix.endswith("/") else None


def answer_for(
    recipe: Recipe, version: str | None = None
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The answer for ``recipe`` at release ``version`` and the platforms it does not
    install on there (what a create run learns from the release, not from the answer).
    Without a version every version-ranged step applies, so a recipe with several
    namings is inexpressible."""
    covered = [p for p in STANDARD_PLATFORMS if _covered(recipe, p, version)]
    if not covered:
        raise Inexpressible("installs on none of linux/darwin x amd64/arm64")
    desired = {p.key: _desired(recipe, p, version) for p in covered}
    base = dict(desired[covered[0].key])
    for spec in desired.values():  # one spelling per standard name where they agree
        for key in ("os_mapping", "arch_mapping"):
            for name, spelling in spec[key].items():
                base[key].setdefault(name, spelling)
    overrides: list[dict[str, Any]] = []
    for os in dict.fromkeys(p.os for p in covered):
        group = [p for p in covered if p.os == os]
        diffs = [_diff(base, desired[p.key]) for p in group]
        if all(d == diffs[0] for d in diffs) and len(group) == sum(
            p.os == os for p in STANDARD_PLATFORMS
        ):
            if diffs[0]:
                overrides.append({"os": os, **diffs[0]})
            continue
        for target, diff in zip(group, diffs, strict=True):
            if diff:
                overrides.append({"os": os, "arch": target.arch, **diff})
    verify = recipe.verify
    if verify is None or not verify.command:
        raise Inexpressible("no verify command")
    answer: dict[str, Any] = {
        "asset_type": base["asset_type"],
        "asset_pattern": base["asset_pattern"],
        "os_mapping": base["os_mapping"],
        "arch_mapping": base["arch_mapping"],
        "binaries": base["binaries"],
        "verify_command": verify.command,
        "verify_pattern": verify.pattern or "{version}",
    }
    if base["asset_type"] == "archive":
        answer["strip_dirs"] = base["strip_dirs"]
        if base["archive_format"]:
            answer["archive_format"] = base["archive_format"]
    if overrides:
        answer["overrides"] = overrides
    prefix = _tag_prefix(recipe)
    if prefix:
        answer["tag_prefix"] = prefix
    unsupported = tuple(p.key for p in STANDARD_PLATFORMS if p not in covered)
    if unsupported:
        answer["unsupported_platforms"] = list(unsupported)
    return answer, unsupported


__all__ = ["Inexpressible", "answer_for"]
