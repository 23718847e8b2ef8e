"""Where a recipe is written from: one value, parsed once at the edge (pure).

A source reaches the daemon as text (``create --from``, ``install --from``, a ``batch
add`` line, a model's ``extract_source`` answer, a registry's repository field) and
used to travel as that text, parsed again by each feature with its own rules: two GitHub
parsers that disagreed on which owners exist, and a ``BadSource`` in two places. Here it
is parsed once into a :data:`Source`, a tagged union of Structs, and every feature after
the edge matches on the value; ``str(source)`` is its one canonical spelling.

The rules are GitHub's and the registries' own, applied before anything is asked of the
network: an owner is ASCII letters, digits and inner hyphens (at most 39), a repository
``[A-Za-z0-9._-]`` (not ``.`` or ``..``); a github.com URL carries no credentials, port,
query or ``..`` (plain or percent-encoded); anything outside printable ASCII is refused
by name, so a Cyrillic dze (U+0455) cannot pass for an ``s``; an ecosystem's package is a name
its registry can have (the record's ``valid_name``). A web page is a source only where a
page is what was found (discovery's ``instructions`` answer): :func:`parse_page`.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any
from urllib.parse import unquote, urlsplit

import msgspec

from tsukud.errors import TsukuError
from tsukud.registries.ecosystems import BY_PREFIX, Ecosystem, labels, sources_hint

GITHUB_PREFIX = "github"
HOMEBREW_PREFIX = "homebrew"
#: Every prefix ``--from`` accepts: GitHub's, the registries' and Homebrew's.
PREFIXES: tuple[str, ...] = (GITHUB_PREFIX, *BY_PREFIX, HOMEBREW_PREFIX)

_OWNER = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_REPO = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
_FORMULA = re.compile(r"^[A-Za-z0-9@+._-]{1,100}$")
_GITHUB_HOSTS = frozenset({"github.com", "www.github.com"})
MAX_PAGE_URL = 500


class BadSource(TsukuError):
    """A source no builder reads; its hint names every source there is (from the
    ecosystems' records: the catalogue, stdlib-only, cannot read them)."""

    code = "create_bad_source"

    def __init__(self, message: str, *, hint: str | None = None, **data: Any) -> None:
        super().__init__(message, hint=hint if hint is not None else from_hint(), **data)


def from_hint() -> str:
    """``Name the source as --from github:owner/repo, <prefix>:<package>, ...``."""
    return f"Name the source as --from {sources_hint()}."


class GitHubRepo(msgspec.Struct, frozen=True, tag="github"):
    """A repository on github.com, its releases read by create's matcher."""

    owner: str
    repo: str

    @property
    def slug(self) -> str:
        """``owner/repo``: how GitHub's API and the results name it."""
        return f"{self.owner}/{self.repo}"

    def __str__(self) -> str:
        return f"{GITHUB_PREFIX}:{self.slug}"


class EcosystemPackage(msgspec.Struct, frozen=True, tag="ecosystem"):
    """A package of a language ecosystem's registry (one record of
    ``registries/ecosystems.py``)."""

    ecosystem: str  # the record's ``--from`` prefix
    package: str

    @property
    def record(self) -> Ecosystem:
        return BY_PREFIX[self.ecosystem]

    def __str__(self) -> str:
        return f"{self.ecosystem}:{self.package}"


class HomebrewFormula(msgspec.Struct, frozen=True, tag="homebrew"):
    """A Homebrew formula, its bottles the recipe's build."""

    formula: str

    def __str__(self) -> str:
        return f"{HOMEBREW_PREFIX}:{self.formula}"


class Page(msgspec.Struct, frozen=True, tag="page"):
    """An install page a person reads, read by the instructions builder."""

    url: str

    def __str__(self) -> str:
        return self.url


#: What ``--from`` names and create builds from (a page is found, never named).
FromSource = GitHubRepo | EcosystemPackage | HomebrewFormula
Source = FromSource | Page


def shown(source: Source) -> str:
    """What a result reports as where a tool came from: ``owner/repo`` for GitHub (as
    discovery reports it), the canonical text otherwise."""
    return source.slug if isinstance(source, GitHubRepo) else str(source)


def parse_source(text: str) -> FromSource:
    """``github:owner/repo`` (or a bare ``owner/repo``, or a github.com URL),
    ``<prefix>:<package>`` of an ecosystem, or ``homebrew:<formula>``; else
    :class:`BadSource` saying why."""
    stripped = text.strip()
    if not stripped:
        raise BadSource("empty source")
    kind, sep, rest = stripped.partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if sep and kind == GITHUB_PREFIX:  # ``GitHub: o/r``: spaces around the colon only
        return parse_github(rest, text)
    if not sep or _is_url(stripped):
        return parse_github(stripped, text)
    _printable_ascii(kind + rest, text)
    if kind == HOMEBREW_PREFIX:
        if not _FORMULA.match(rest) or ".." in rest:
            raise BadSource(f"expected {HOMEBREW_PREFIX}:<formula>, got {text!r}")
        return HomebrewFormula(rest)
    eco = BY_PREFIX.get(kind)
    if eco is None:
        raise BadSource(
            f"unknown source {text!r}: GitHub releases and {labels()} packages and "
            "Homebrew formulae are supported",
            hint=f"Use --from {sources_hint()}.",
        )
    if not eco.valid_name(rest):
        raise BadSource(f"expected {kind}:<{eco.name_kind}>, got {text!r}")
    return EcosystemPackage(eco.prefix, rest)


def parse_github(text: str, raw: str | None = None) -> GitHubRepo:
    """``owner/repo`` or a github.com URL (``https://github.com/o/r/releases``,
    ``.git``) → the repository; ``raw`` is what the person typed, for the message."""
    raw = text if raw is None else raw
    _printable_ascii(text, raw)

    def bad(why: str) -> BadSource:
        return BadSource(f"expected github:owner/repo, got {raw!r} ({why})")

    if ".." in text or "%2e" in text.lower():
        raise bad("path traversal")
    if _is_url(text):
        segments = _github_url_path(text, raw)
        if len(segments) < 2:
            raise bad("a URL must name github.com/owner/repo")
    else:
        if "@" in text or ":" in text or "\\" in text:
            raise bad("source must be owner/repo")
        segments = text.removesuffix("/").split("/")
        if len(segments) != 2:
            raise bad("source must be owner/repo")
    owner, repo = segments[0], segments[1].removesuffix(".git")
    if not _OWNER.match(owner):
        raise bad(f"invalid owner name {owner!r}")
    if not _REPO.match(repo) or repo in (".", ".."):
        raise bad(f"invalid repository name {repo!r}")
    return GitHubRepo(owner, repo)


def parse_page(text: str) -> Page:
    """An install page's URL: http(s), a host, no credentials, at most 500 characters."""
    url = text.strip()
    parts = urlsplit(url)
    if (
        parts.scheme not in ("http", "https")
        or not parts.hostname
        or "@" in parts.netloc
        or len(url) > MAX_PAGE_URL
        or any(c.isspace() or ord(c) < 32 for c in url)
    ):
        raise BadSource(f"{url[:80]!r} is not an install page's URL")
    return Page(url)


def repo_from_url(url: str) -> GitHubRepo | None:
    """The repository ``url`` points into on github.com, else None.

    Accepts what package registries put in their repository fields (``git+https://``,
    ``git://``, ``git@github.com:``, ``.git`` suffixes, deeper paths).
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
        return parse_github(f"{segments[0]}/{segments[1]}")
    except BadSource:
        return None


def _is_url(text: str) -> bool:
    return "://" in text or text.startswith("//")


def _printable_ascii(text: str, raw: str) -> None:
    """Refuse whitespace, control and non-ASCII characters, naming the first: a
    homoglyph (a Cyrillic dze for ``s``) or a zero-width space looks like nothing amiss."""
    for ch in text:
        if ord(ch) > 126 or ch.isspace() or ord(ch) < 32:
            label = unicodedata.name(ch, "a control character")
            raise BadSource(
                f"source {raw.encode('ascii', 'backslashreplace').decode()!r} contains "
                f"whitespace, control or non-ASCII characters (U+{ord(ch):04X} {label})"
            )


def _github_url_path(text: str, raw: str) -> list[str]:
    """The path segments of a github.com URL, or :class:`BadSource` naming what is
    wrong with it (another host is not a GitHub source at all)."""
    parts = urlsplit(text if "://" in text else "https:" + text)

    def bad(why: str) -> BadSource:
        return BadSource(f"expected github:owner/repo, got {raw!r} ({why})")

    if parts.scheme not in ("https", "http"):
        raise bad(f"URL scheme {parts.scheme!r} is not allowed")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise bad("URL contains credentials")
    if ":" in parts.netloc:
        raise bad("URL has a port")
    if (parts.hostname or "").lower() not in _GITHUB_HOSTS:
        raise BadSource(
            f"unknown source {raw!r}: a URL source must be a repository on github.com",
            hint=f"Use --from {sources_hint()}.",
        )
    if parts.query or parts.fragment:
        raise bad("URL has a query or fragment")
    path = unquote(parts.path)
    if ".." in path:
        raise bad("path traversal")
    return [s for s in path.split("/") if s]
