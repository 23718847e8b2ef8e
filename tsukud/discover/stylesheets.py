"""A page's external stylesheets, read and written into it before its text is judged.

A rule in ``/site.css`` hides text as well as one in a ``<style>`` element, and neither
the browser engine (which is given no network) nor the stripper would see it, so a
host or package hidden only by an external stylesheet would count as visible. The
caller fetches the sheets the page links (:func:`stylesheet_links`, at most
:data:`MAX_STYLESHEETS`, through its own HTTP client and URL policy) and
:func:`inline_stylesheets` puts each in place of its ``<link>`` as a ``<style>``, so the
cascade keeps its order. ``@import`` inside a sheet is not followed (docs/discovery.md).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from html import escape
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

MAX_STYLESHEETS = 8
MAX_BYTES = 1024 * 1024  # of one stylesheet
# Fetches a stylesheet's text (None when it cannot be read).
FetchText = Callable[[str], Awaitable[str | None]]


class _Links(HTMLParser):
    """The ``<link rel=stylesheet>`` tags of a page, with where each sits in the source."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", html)]
        self.found: list[tuple[int, int, str, str]] = []  # start, end, href, media

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag != "link":
            return
        values = {k.lower(): (v or "") for k, v in attrs}
        if "stylesheet" not in values.get("rel", "").lower().split() or not values.get("href"):
            return
        if "alternate" in values.get("rel", "").lower().split():
            return  # not applied unless a person picks it
        raw = self.get_starttag_text() or ""
        line, col = self.getpos()
        start = self._line_starts[line - 1] + col
        media = values.get("media", "")
        self.found.append((start, start + len(raw), values["href"].strip(), media))

    handle_startendtag = handle_starttag


def _links(html: str) -> list[tuple[int, int, str, str]]:
    parser = _Links(html)
    try:
        parser.feed(html)
        parser.close()
    except Exception:  # html.parser is lenient; be safe anyway
        return []
    return parser.found


def stylesheet_links(html: str, page_url: str) -> list[str]:
    """The http(s) URLs of the stylesheets the page links, in order, at most
    :data:`MAX_STYLESHEETS`."""
    urls: list[str] = []
    for _, _, href, _ in _links(html):
        url = urljoin(page_url, href)
        if urlsplit(url).scheme in ("http", "https") and url not in urls:
            urls.append(url)
    return urls[:MAX_STYLESHEETS]


def _as_style(css: str, media: str) -> str:
    # "<" never reaches the HTML parser from a sheet, so a sheet cannot end its <style>
    # and put text on the page that no browser would show; in CSS "\3c " is that "<".
    # The link's media stays: a print sheet must not apply on the screen.
    opening = f'<style media="{escape(media)}">' if media else "<style>"
    return opening + css.replace("<", "\\3c ") + "</style>"


def inline_stylesheets(html: str, page_url: str, sheets: Mapping[str, str]) -> str:
    """``html`` with each linked stylesheet that ``sheets`` holds (by absolute URL) in
    place of its ``<link>``."""
    out: list[str] = []
    last = 0
    for start, end, href, media in _links(html):
        css = sheets.get(urljoin(page_url, href))
        if css is None or start < last:
            continue
        out += [html[last:start], _as_style(css, media)]
        last = end
    out.append(html[last:])
    return "".join(out)


async def with_stylesheets(html: str, page_url: str, fetch: FetchText) -> tuple[str, list[str]]:
    """The page with its external stylesheets written in, and the URLs of those that could
    not be read (text they hide would count as visible: the caller warns)."""
    sheets: dict[str, str] = {}
    unread: list[str] = []
    for url in stylesheet_links(html, page_url):
        css = await fetch(url)
        if css is None:
            unread.append(url)
        else:
            sheets[url] = css
    return inline_stylesheets(html, page_url, sheets), unread
