"""Names and sources, checked before anything is asked of the network (pure).

* :func:`normalize_name`: what the user typed → the lowercase ASCII name discovery
  works with. Anything outside ASCII is refused, naming the character: ``stripe`` spelt
  with a Cyrillic dze (U+0455) for its ``s`` is a classic homoglyph attack, and NFKC
  folding would hide it.
* :func:`typosquat`: the nearest known name at edit distance 1-2 (1 only for names of
  four characters or fewer, where distance 2 matches nearly anything). Ties go to the
  alphabetically first name, so the warning is the same on every run.

A source (``owner/repo``, a github.com URL, a package) is parsed by
:mod:`tsukud.source`, the one parser of sources.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from tsukud.discover.errors import InvalidToolName

MAX_NAME = 100
_NAME = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")
_OWNER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_REPO = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})


def normalize_name(raw: str) -> str:
    name = raw.strip()
    if not name:
        raise InvalidToolName("empty tool name")
    for ch in name:
        if ord(ch) > 127:
            label = unicodedata.name(ch, "unnamed character")
            raise InvalidToolName(
                f"tool name {raw!r} contains the non-ASCII character {ch!r} "
                f"(U+{ord(ch):04X} {label}): a possible homoglyph attack",
                hint="Type the name in plain ASCII.",
                character=f"U+{ord(ch):04X}",
            )
    if len(name) > MAX_NAME:
        raise InvalidToolName(f"tool name is {len(name)} characters long (at most {MAX_NAME})")
    lowered = name.lower()
    if not _NAME.match(lowered) or ".." in lowered:
        raise InvalidToolName(f"{raw!r} is not a valid tool name")
    return lowered


# ---------------------------------------------------------------------------- typosquat


@dataclass(frozen=True)
class Typosquat:
    requested: str
    similar: str
    distance: int

    def message(self) -> str:
        edits = "1 edit" if self.distance == 1 else f"{self.distance} edits"
        return (
            f"{self.requested!r} is {edits} away from the known tool {self.similar!r}: "
            "check the spelling (typosquatting is a common way to ship malware)"
        )


def bounded_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance of ``a`` and ``b``, or ``limit + 1`` once it must exceed it."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        best = i
        for j, cb in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            current.append(cost)
            best = min(best, cost)
        if best > limit:
            return limit + 1
        previous = current
    return previous[-1]


def typosquat(name: str, known: Iterable[str]) -> Typosquat | None:
    names = {k.lower() for k in known if k}
    if not names or name in names:
        return None
    limit = 1 if len(name) <= 4 else 2
    best: tuple[int, str] | None = None
    for other in names:
        d = bounded_distance(name, other, limit)
        if 1 <= d <= limit and (best is None or (d, other) < best):
            best = (d, other)
    return None if best is None else Typosquat(name, best[1], best[0])
