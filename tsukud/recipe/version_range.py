"""Version order and the version ranges a step's ``when`` may carry.

A step with ``when = { version = ">=0.12.5" }`` is selected only for releases in that
range, so one recipe can follow a project whose asset naming changed between releases.
Kept apart from ``version.py`` (tags) so the recipe model can check ranges without
importing tag handling.
"""

from __future__ import annotations

import re

_CORE = re.compile(r"(\d+(?:\.\d+)*)(.*)", re.DOTALL)
_CLAUSE = re.compile(r"\s*(>=|<=|==|!=|>|<|=)?\s*v?([0-9][0-9A-Za-z.+_-]*)\s*")
OPERATORS = (">=", "<=", "==", "!=", ">", "<")


def sort_key(version: str) -> tuple[tuple[int, ...], int, str]:
    match = _CORE.match(version)
    if match is None:
        return ((), 0, version)
    numbers = tuple(int(part) for part in match.group(1).split("."))
    while numbers and numbers[-1] == 0:
        numbers = numbers[:-1]
    rest = match.group(2)
    # A bare release sorts after its prereleases: 1.2.3 > 1.2.3-rc1.
    return (numbers, 0 if rest else 1, rest)


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1. Numeric dotted cores compare as numbers (``1.10`` > ``1.9``)."""
    ka, kb = sort_key(a), sort_key(b)
    return (ka > kb) - (ka < kb)


def parse_range(text: str) -> tuple[tuple[str, str], ...]:
    """``">=0.12.5, <1.0"`` → ``((">=", "0.12.5"), ("<", "1.0"))``; a bare version means
    ``==``. Raises ``ValueError`` naming what is wrong."""
    clauses = []
    for part in text.split(","):
        match = _CLAUSE.fullmatch(part)
        if match is None:
            raise ValueError(
                f"{part.strip()!r} is not a version condition (e.g. '>=1.2.0', '<1.2.0')"
            )
        op = match.group(1) or "=="
        clauses.append(("==" if op == "=" else op, match.group(2)))
    return tuple(clauses)


def in_range(version: str, text: str) -> bool:
    """Whether ``version`` satisfies every clause of the range ``text``."""
    for op, bound in parse_range(text):
        c = compare_versions(version.removeprefix("v"), bound)
        ok = {
            ">=": c >= 0,
            "<=": c <= 0,
            ">": c > 0,
            "<": c < 0,
            "==": c == 0,
            "!=": c != 0,
        }[op]
        if not ok:
            return False
    return True
