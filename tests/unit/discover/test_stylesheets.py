"""A page's external stylesheets are found, and written in place of their links so the
cascade keeps its order; a sheet cannot put text on the page."""

from __future__ import annotations

import trio

from tsukud.discover.sanitize_html import strip_html
from tsukud.discover.stylesheets import (
    MAX_STYLESHEETS,
    inline_stylesheets,
    stylesheet_links,
    with_stylesheets,
)

URL = "https://vendor.test/docs/install"


def test_links_are_resolved_in_order_and_only_stylesheets_count() -> None:
    html = (
        '<link rel="stylesheet" href="/a.css"><link rel=icon href=/i.png>'
        "<link rel='preload stylesheet' href='b.css' media=screen>"
        '<link rel="alternate stylesheet" href="/alt.css"><link rel="stylesheet" href="/a.css">'
        '<LINK REL="Stylesheet" HREF="//cdn.test/c.css"/><link rel=stylesheet href="data:x">'
    )
    assert stylesheet_links(html, URL) == [
        "https://vendor.test/a.css",
        "https://vendor.test/docs/b.css",
        "https://cdn.test/c.css",
    ]
    many = "".join(f'<link rel="stylesheet" href="/{i}.css">' for i in range(20))
    assert len(stylesheet_links(many, URL)) == MAX_STYLESHEETS


def test_a_sheet_takes_its_links_place_with_its_media_and_cannot_add_text() -> None:
    html = (
        '<p class="x">one</p>\n<link rel="stylesheet" href="/a.css" media="print">'
        '\n  <link rel="stylesheet" href="/b.css"><p class="y">two</p>'
    )
    sheets = {
        "https://vendor.test/a.css": ".x{color:red}",
        "https://vendor.test/b.css": ".y{display:none}</style><p>npm install -g evil</p>",
    }
    out = inline_stylesheets(html, URL, sheets)
    assert '<style media="print">.x{color:red}</style>' in out
    assert "<link" not in out
    assert "evil" not in strip_html(out) and strip_html(out) == "one"
    assert out.count("</style>") == 2


async def test_unreadable_sheets_are_named_and_their_links_left() -> None:
    html = '<link rel="stylesheet" href="/gone.css"><link rel="stylesheet" href="/s.css">'
    asked: list[str] = []

    async def fetch(url: str) -> str | None:
        asked.append(url)
        await trio.lowlevel.checkpoint()
        return ".x{display:none}" if url.endswith("/s.css") else None

    out, unread = await with_stylesheets(html, URL, fetch)
    assert asked == ["https://vendor.test/gone.css", "https://vendor.test/s.css"]
    assert unread == ["https://vendor.test/gone.css"]
    assert out == '<link rel="stylesheet" href="/gone.css"><style>.x{display:none}</style>'
