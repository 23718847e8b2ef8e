"""Which hosts and packages of a page-derived recipe the repository itself vouches for
(pure).

An install page is untrusted as a whole: anyone who can edit it (or hide text in it,
or take over its domain's CDN path) chooses what the model reads. So every host a
recipe read from a page downloads from, and every package it installs, is a
:class:`PageUse`, shown to the person with where on the page it stands, and is
*the repository's own* only when the repository says so itself:

* a host is the repository's own when the URL is under ``github.com/<owner>/<repo>/``
  (its releases), or is on the homepage's own site: the homepage's registrable domain
  (:func:`~tsukud.instructions.hosts.registrable_domain`: ``dl.example.com`` for a
  homepage on ``example.com``), or for a homepage on an IP address or a one-label name,
  the homepage's exact origin (scheme, host and port). A host flagged as a look-alike
  (:func:`~tsukud.instructions.hosts.lookalike`) is never the repository's own.
* a package is the repository's own when the repository names it where its owner
  writes, on GitHub: its description or its root ``README.md`` (what
  :attr:`Owner.text` holds). The homepage does not count: it is the page under
  suspicion. The repository's name alone does not either: anyone may publish a package
  called ``foo`` (a name is not an identity).

``--yes`` accepts a page-derived recipe only when every use is the repository's own
(:func:`foreign` is empty); anything else needs a person who saw the list, or the
explicit ``--trust-page-hosts`` (the flows decide, ``flows/install_missing.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Final, Literal
from urllib.parse import urlsplit

import msgspec

from tsukud.errors import TsukuError
from tsukud.instructions.hosts import (
    ascii_host,
    is_ip,
    lookalike,
    registrable_domain,
    unicode_host,
)
from tsukud.instructions.page import context, origin_of

TRUST_FLAG: Final = "--trust-page-hosts"
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


class PageNotTrusted(TsukuError):
    """A page-derived recipe uses a host or package the repository does not name, and
    no person could be shown it (or ``--yes`` was all there was)."""

    code = "page_not_trusted"


class Owner(msgspec.Struct, frozen=True, kw_only=True):
    """What the repository itself says, read from GitHub (None: a page found by web
    search, which no repository vouches for)."""

    repo: str | None = None  # owner/repo
    homepage: str | None = None  # the homepage GitHub names (the page read)
    text: str = ""  # its description and root README.md


class PageUse(msgspec.Struct, frozen=True, kw_only=True):
    """One host or package a page-derived recipe uses, as the preview shows it."""

    kind: Literal["host", "package"]
    name: str  # the host as the page writes it, or manager:package
    ascii: str  # the host in ASCII (IDNA), or the package spec
    found: str | None  # the page's visible text around it
    own: bool  # the repository's own (--yes may accept it)
    why: str
    lookalike: tuple[str, ...] = ()


def _host_of(url: str) -> tuple[str, str] | None:
    """(origin, host) of a URL that may hold ``{version}`` placeholders."""
    filled = _PLACEHOLDER.sub("x", url)
    origin = origin_of(filled)
    if origin is None:
        return None
    return origin, (urlsplit(filled).hostname or "").lower().rstrip(".")


def _host_own(url: str, origin: str, host: str, owner: Owner, github_url: str) -> tuple[bool, str]:
    if owner.repo and url.lower().startswith(f"{github_url.rstrip('/')}/{owner.repo}/".lower()):
        return True, f"the GitHub repository {owner.repo}"
    home = _host_of(owner.homepage) if owner.homepage else None
    if home is None:
        return False, "no repository names this site (a page found by web search)"
    home_origin, home_host = home
    if origin == home_origin:
        return True, "the homepage's own site"
    domain = registrable_domain(home_host)
    if "." in domain and not is_ip(domain) and registrable_domain(host) == domain:
        return True, f"the homepage's own domain ({domain})"
    return False, f"not the repository's: its homepage is on {domain}"


def host_uses(
    urls: Iterable[str], page_text: str, owner: Owner, *, github_url: str = "https://github.com"
) -> tuple[PageUse, ...]:
    """One use per origin the URLs download from (per repository on GitHub), in the
    order given."""
    seen: dict[str, PageUse] = {}
    for url in urls:
        got = _host_of(url)
        if got is None:
            continue
        origin, host = got
        key = origin
        if origin == origin_of(github_url):
            # One site, many owners: the use is the repository the URL is under.
            key += "/" + "/".join(urlsplit(url).path.strip("/").split("/")[:2])
        if key in seen:
            continue
        flags = lookalike(host)
        own, why = _host_own(url, origin, host, owner, github_url)
        if flags and own:
            own, why = False, "a look-alike name is never trusted unseen"
        shown = unicode_host(host)
        found = context(page_text, f"//{shown}") or context(page_text, shown)
        seen[key] = PageUse(
            kind="host",
            name=key.replace(host, shown, 1),
            ascii=key.replace(host, ascii_host(host), 1),
            found=found,
            own=own,
            why=why,
            lookalike=flags,
        )
    return tuple(seen.values())


def package_use(manager: str, package: str, page_text: str, owner: Owner) -> PageUse:
    from tsukud.instructions.answer import named_at

    at = named_at(page_text, package)
    found = context(page_text, package, start=at) if at is not None else None
    if owner.repo is None:
        own, why = False, "no repository names it (a page found by web search)"
    elif named_at(owner.text, package) is not None:
        own, why = True, f"named by the repository {owner.repo} (its description or README)"
    else:
        own, why = False, f"the repository {owner.repo} does not name it (description, README)"
    spec = f"{manager}:{package}"
    return PageUse(kind="package", name=spec, ascii=spec, found=found, own=own, why=why)


def foreign(uses: Iterable[PageUse]) -> tuple[PageUse, ...]:
    return tuple(u for u in uses if not u.own)


def decode_uses(data: Any) -> tuple[PageUse, ...]:
    """The uses a result or an error carries on the wire (``preview.uses``)."""
    if not isinstance(data, list):
        return ()
    try:
        return tuple(msgspec.convert(data, list[PageUse]))
    except msgspec.ValidationError:
        return ()


def listing(uses: Sequence[PageUse]) -> str:
    """The uses as the person reads them: one line each, where it was found below."""
    lines = []
    for u in uses:
        shown = u.ascii if u.ascii == u.name else f"{u.ascii} (written {u.name})"
        mark = "repository's own" if u.own else "NOT the repository's"
        lines.append(f"  {u.kind} {shown}: {mark} ({u.why})")
        for flag in u.lookalike:
            lines.append(f"    LOOK-ALIKE: {flag}")
        if u.found:
            lines.append(f"    found on the page: {u.found}")
    return "\n".join(lines)


def refusal(tool: str, url: str, strangers: Sequence[PageUse], again: str) -> PageNotTrusted:
    what = ", ".join(u.ascii for u in strangers)
    return PageNotTrusted(
        f"{tool}: the recipe read from {url} uses {what}, which the repository does not "
        f"name; --yes accepts only the repository's own hosts and packages, so nothing "
        f"was saved or installed:\n{listing(strangers)}",
        hint=f"Review it on a terminal ({again}), or accept the page's hosts and "
        f"packages unseen with {TRUST_FLAG}.",
        uses=[msgspec.to_builtins(u) for u in strangers],
    )
