"""Problems found in a candidate recipe, phrased so they can go back to the model as is.

Every check in ``tsukud.create`` reports through this one shape: a category (stable, for
events and tests), a message that names the platform, release and the fix, and a
severity. Warnings never block a recipe; errors do.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

SCHEMA = "schema"
LITERAL_VERSION = "literal_version"
LIMITS = "limits"
VERIFY_COMMAND = "verify_command"
BINARY_PATH = "binary_path"
REPLAY = "replay"
INTENT = "intent"
WRONG_PLATFORM = "wrong_platform"
UNSUPPORTED = "unsupported_platform"
GUARDED_COMMAND = "guarded_command"

Severity = Literal["error", "warning"]


class Finding(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    category: str
    message: str
    severity: Severity = "error"
    platform: str | None = None
    release: str | None = None


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity == "error"]


def format_findings(findings: Iterable[Finding], *, limit: int = 20) -> str:
    """One line per finding, errors first, capped so a recipe that is wrong everywhere
    does not flood the next prompt; the count of the rest is kept."""
    ordered = sorted(findings, key=lambda f: f.severity != "error")
    lines = [f"- [{f.category}] {f.message}" for f in ordered[:limit]]
    if len(ordered) > limit:
        lines.append(f"- … and {len(ordered) - limit} more")
    return "\n".join(lines)
