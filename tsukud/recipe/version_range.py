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
_IDENTIFIER = re.compile(r"\d+|[^\d.\-_]+")
OPERATORS = (">=", "<=", "==", "!=", ">", "<")

# One pre-release identifier: (0, n, "") for a number, (1, 0, text) for text, so numbers
# compare as numbers and sort below text, as semver asks.
Identifier = tuple[int, int, str]


def _pre_release(rest: str) -> tuple[Identifier, ...]:
    """``-rc.10`` → ``((1, 0, "rc"), (0, 10, ""))``. Build metadata (``+...``) is left out:
    semver gives it no precedence. Runs of digits inside an identifier count as numbers
    too (``rc10`` = ``rc.10``), so ``rc10`` > ``rc9`` as people mean it."""
    pre = rest.split("+", 1)[0]
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in _IDENTIFIER.findall(pre)
    )


def sort_key(version: str) -> tuple[tuple[int, ...], int, tuple[Identifier, ...]]:
    """Semver precedence, extended to any number of numeric parts (trailing zeros do not
    count: ``1.2`` = ``1.2.0``): the numbers, then a release above its pre-releases, then
    the pre-release identifiers left to right (a longer list wins a tie). A tag's leading
    ``v``/``V`` (``v1.2.3``) is not part of the version."""
    if version[:1] in ("v", "V") and version[1:2].isdigit():
        version = version[1:]
    match = _CORE.match(version)
    if match is None:
        return ((), 0, ((1, 0, version),))
    numbers = tuple(int(part) for part in match.group(1).split("."))
    while numbers and numbers[-1] == 0:
        numbers = numbers[:-1]
    rest = match.group(2)
    if not rest or rest.startswith("+"):
        return (numbers, 1, ())
    return (numbers, 0, _pre_release(rest))


def compare_versions(a: str, b: str) -> int:
    """-1, 0 or 1. Numeric dotted cores compare as numbers (``1.10`` > ``1.9``), and so do
    numeric pre-release parts (``1.2.3-rc10`` > ``1.2.3-rc9``); a release is newer than
    its pre-releases; ``v1.2.3`` = ``1.2.3``."""
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
        c = compare_versions(version, bound)
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
