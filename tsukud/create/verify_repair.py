"""Fixing a failed verify command without asking the model.

Most verify failures of otherwise good recipes are the command, not the install: the
tool wants ``version`` instead of ``--version``, prints its version and exits 1, or
prints ``v1.2.3`` where the pattern expects ``1.2.3``. Each proposal here costs one
container run and no tokens, so they are tried before an LLM repair.

Unlike the reference tsuku's verify self-repair, this judges the *verify command's* exit code
and output, never the container's; it matches usage text case-insensitively and turns
what it found into an exact-case pattern (the recipe check is a plain substring, so
``usage`` never matched ``Usage:``); and it gives up at once when the binary itself is
missing or cannot run, where no flag can help.
"""

from __future__ import annotations

import re
import shlex
from typing import Literal

import msgspec

from tsukud.recipe import Verify
from tsukud.validation.sanitize import (
    BINARY_NOT_FOUND,
    EXEC_FORMAT,
    PERMISSION,
    SHARED_LIBRARY,
    categorize,
)

MAX_PROPOSALS = 8
VERSION_FLAGS = ("--version", "version", "-V", "-v", "-version")

_USAGE = re.compile(r"^\s*(usage)\b\s*:?", re.IGNORECASE | re.MULTILINE)
_SECTION = re.compile(
    r"^\s*(?:options|flags|arguments|commands|subcommands|available commands)\s*:",
    re.IGNORECASE | re.MULTILINE,
)
_SYNOPSIS = re.compile(r"^\s*synopsis\b", re.IGNORECASE | re.MULTILINE)
# Words of a failure, not of usage text. Each one found costs a point, so a real help
# page printed after "Error: unknown flag" still counts, a bare error message does not.
_ERROR_WORDS = (
    re.compile(r"\berror\b", re.IGNORECASE),
    re.compile(r"\bunknown (?:flag|option|command|argument)", re.IGNORECASE),
    re.compile(r"\binvalid\b", re.IGNORECASE),
    re.compile(r"\bnot found\b", re.IGNORECASE),
)
HELP_THRESHOLD = 2
_HELP_FLAG = re.compile(r"(?:^|\s)(?:--help|-h)\b", re.IGNORECASE)
_SUBCOMMAND_VERSION = re.compile(r"^\s+version\b", re.MULTILINE)
_LONG_VERSION = re.compile(r"(?:^|[\s,])--version\b", re.MULTILINE)
_SHORT_V_UPPER = re.compile(r"(?:^|[\s,])-V\b[^\n]*version", re.MULTILINE)
_SHORT_V_LOWER = re.compile(r"(?:^|[\s,])-v\b[^\n]*version", re.MULTILINE)


class VerifyRepair(msgspec.Struct, frozen=True, kw_only=True):
    """One verify section to try. ``pattern`` ``None`` means "run it first, then take
    :func:`output_pattern` of what it printed" (help-text checks)."""

    command: str
    mode: Literal["version", "output"] = "version"
    pattern: str | None = "{version}"
    exit_code: int = 0
    method: str
    reason: str

    def to_verify(self, pattern: str | None = None) -> Verify:
        chosen = pattern if pattern is not None else self.pattern
        return Verify(
            command=self.command,
            pattern=chosen,
            mode="output" if self.mode == "output" else None,
            exit_code=self.exit_code or None,
            reason=self.reason if self.mode == "output" else None,
        )


def help_score(output: str, tool: str) -> int:
    """How much ``output`` looks like usage text (:data:`HELP_THRESHOLD` or more counts
    as help). Without a usage line, a ``SYNOPSIS`` or a section header (``Commands:``,
    ``Options:``, ``Flags:``) it is 0 however long the text or however often it names
    the tool: an error message is long and names the tool too. Error words count
    against it."""
    usage = bool(_USAGE.search(output) or _SYNOPSIS.search(output))
    section = bool(_SECTION.search(output))
    if not (usage or section):
        return 0
    score = 2 if usage else 0
    score += 1 if section else 0
    score += 1 if _HELP_FLAG.search(output) else 0
    score += 1 if tool and tool.lower() in output.lower() else 0
    score += 1 if len(output) > 200 else 0
    score -= sum(1 for word in _ERROR_WORDS if word.search(output))
    return max(score, 0)


def looks_like_help(output: str, tool: str) -> bool:
    return help_score(output, tool) >= HELP_THRESHOLD


def output_pattern(output: str, tool: str) -> str | None:
    """An exact-case piece of ``output`` to check for: its "Usage" word as printed, or
    the tool's name as printed. ``None`` when neither occurs."""
    match = _USAGE.search(output)
    if match is not None:
        return match.group(1)
    if tool:
        found = re.search(re.escape(tool), output, re.IGNORECASE)
        if found is not None:
            return found.group()
    return None


def _flag_order(output: str, current: str) -> list[str]:
    """Version flags to try, those the tool's own output mentions first."""
    hinted = []
    if _SUBCOMMAND_VERSION.search(output):
        hinted.append("version")
    if _LONG_VERSION.search(output):
        hinted.append("--version")
    if _SHORT_V_UPPER.search(output):
        hinted.append("-V")
    if _SHORT_V_LOWER.search(output):
        hinted.append("-v")
    ordered = list(dict.fromkeys([*hinted, *VERSION_FLAGS]))
    return [flag for flag in ordered if flag != current]


def propose(
    command: str,
    output: str,
    exit_code: int,
    *,
    version: str,
    pattern: str | None = "{version}",
) -> list[VerifyRepair]:
    """Verify sections worth one container run each, best first.

    ``output`` and ``exit_code`` are the verify command's own; ``version`` is the
    release installed; ``pattern`` is the recipe's current verify pattern.
    """
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    if not words or exit_code in (126, 127):
        return []
    if categorize(output, exit_code).category in (
        BINARY_NOT_FOUND,
        EXEC_FORMAT,
        SHARED_LIBRARY,
        PERMISSION,
    ):
        return []
    tool, args = words[0], words[1:]
    proposals: list[VerifyRepair] = []
    expected = (pattern or "{version}").replace("{version}", version)
    if version and version in output:
        if expected in output and exit_code != 0:
            proposals.append(
                VerifyRepair(
                    command=command,
                    pattern=pattern,
                    exit_code=exit_code,
                    method="accept_exit_code",
                    reason=f"the tool prints its version but exits with {exit_code}",
                )
            )
        elif expected not in output:
            relaxed = "v{version}" if f"v{version}" in output else "{version}"
            proposals.append(
                VerifyRepair(
                    command=command,
                    pattern=relaxed,
                    exit_code=exit_code,
                    method="relax_pattern",
                    reason=f"the output has the version, not {expected!r}",
                )
            )
        return proposals
    if tool.startswith("cargo-") and len(tool) > len("cargo-"):
        # Cargo calls plugins as `cargo-x x ...`; some only answer in that form.
        sub = tool.removeprefix("cargo-")
        proposals.append(
            VerifyRepair(
                command=f"{tool} {sub} --version",
                method="cargo_plugin",
                reason="cargo plugins expect their subcommand name first",
            )
        )
    current = " ".join(args)
    for flag in _flag_order(output, current):
        proposals.append(
            VerifyRepair(
                command=f"{tool} {flag}",
                method=f"flag {flag}",
                reason=f"{command!r} did not print the version; trying {flag!r}",
            )
        )
    seen = output_pattern(output, tool)
    if looks_like_help(output, tool) and seen is not None:
        proposals.append(
            VerifyRepair(
                command=command,
                mode="output",
                pattern=seen,
                exit_code=exit_code,
                method="output_detection",
                reason="verification repaired: the tool prints usage instead of a version",
            )
        )
    for flag in ("--help", "-h"):
        proposals.append(
            VerifyRepair(
                command=f"{tool} {flag}",
                mode="output",
                pattern=None,
                method=f"help {flag}",
                reason=f"verification repaired: using {flag} output",
            )
        )
    return proposals[:MAX_PROPOSALS]
