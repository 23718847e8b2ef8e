"""Names and sources, checked before anything is asked of the network (pure).

* :func:`normalize_name`: what the user typed → the lowercase ASCII name discovery
  works with. Anything outside ASCII is refused, naming the character: ``stripe`` spelt
  with a Cyrillic dze (U+0455) for its ``s`` is a classic homoglyph attack, and NFKC
  folding would hide it.
* :func:`typosquat`: the nearest known name at edit distance 1-2 (1 only for names of
  four characters or fewer, where distance 2 matches nearly anything). Ties go to the
  alphabetically first name, so the warning is the same on every run.
* :func:`github_source`: a model's (or a user's) ``owner/repo`` or github.com URL →
  ``owner/repo`` with GitHub's own character rules: no credentials, ports, other hosts,
  ``..`` (plain or percent-encoded), or characters outside ``[A-Za-z0-9._-]``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

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


# ---------------------------------------------------------------------------- sources


class BadSource(ValueError):
    """A source that is not a safe ``owner/repo`` on github.com (the message says why)."""


def github_source(raw: str) -> str:
    """``owner/repo`` from ``owner/repo``, ``github:owner/repo`` or a github.com URL."""
    text = raw.strip()
    if not text:
        raise BadSource("empty source")
    if any(ord(c) > 127 or c.isspace() or ord(c) < 32 for c in text):
        raise BadSource("source contains whitespace, control or non-ASCII characters")
    text = text.removeprefix("github:")
    if ".." in text or "%2e" in text.lower():
        raise BadSource("source contains path traversal")
    if "://" in text or text.startswith("//"):
        parts = urlsplit(text if "://" in text else "https:" + text)
        if parts.scheme not in ("https", "http"):
            raise BadSource(f"URL scheme {parts.scheme!r} is not allowed")
        if parts.username is not None or parts.password is not None or "@" in parts.netloc:
            raise BadSource("URL contains credentials")
        if ":" in parts.netloc:
            raise BadSource("URL has a port")
        if (parts.hostname or "").lower() not in _GITHUB_HOSTS:
            raise BadSource("URL host must be github.com")
        if parts.query or parts.fragment:
            raise BadSource("URL has a query or fragment")
        path = unquote(parts.path)
        if ".." in path:
            raise BadSource("source contains path traversal")
        segments = [s for s in path.split("/") if s]
        if len(segments) < 2:
            raise BadSource("expected github.com/owner/repo")
        owner, repo = segments[0], segments[1]
    else:
        if "@" in text or ":" in text or "\\" in text:
            raise BadSource("source must be owner/repo")
        segments = text.split("/")
        if len(segments) != 2:
            raise BadSource("source must be owner/repo")
        owner, repo = segments
    repo = repo.removesuffix(".git")
    if not _OWNER.match(owner):
        raise BadSource(f"invalid owner name {owner!r}")
    if not _REPO.match(repo) or repo in (".", ".."):
        raise BadSource(f"invalid repository name {repo!r}")
    return f"{owner}/{repo}"


def repo_from_url(url: str) -> str | None:
    """``owner/repo`` when ``url`` points into a github.com repository, else None.

    Accepts what package registries put in their repository fields (``git+https://``,
    ``git://``, ``.git`` suffixes, deeper paths).
    """
    text = url.strip()
    for prefix in ("git+", "scm:git:"):
        text = text.removeprefix(prefix)
    if text.startswith("git@github.com:"):
        text = "https://github.com/" + text[len("git@github.com:") :]
    if text.startswith("git://"):
        text = "https://" + text[len("git://") :]
    if text.startswith("github.com/"):
        text = "https://" + text
    if "://" not in text:
        return None
    parts = urlsplit(text)
    if (parts.hostname or "").lower() not in _GITHUB_HOSTS or parts.port is not None:
        return None
    segments = [s for s in parts.path.split("/") if s]
    if len(segments) < 2:
        return None
    try:
        return github_source(f"{segments[0]}/{segments[1]}")
    except BadSource:
        return None
