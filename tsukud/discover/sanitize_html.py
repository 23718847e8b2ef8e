"""Web text made safe to show a model (pure, stdlib only).

:func:`strip_html` keeps the visible text of an HTML fragment: ``script``, ``style``,
``noscript``, ``template`` (with everything inside), comments and every element a browser
would not show (:func:`hidden`: the ``hidden`` attribute, ``aria-hidden="true"``, an
inline ``display:none``, ``visibility:hidden``, ``opacity:0`` or ``font-size:0``)
become a single space, because a page can hide instructions for a model where its
human reader never looks; entities are decoded, invisible characters that can smuggle
instructions past a human reader (zero-width, bidi controls, soft hyphens, tag
characters) are removed and whitespace is collapsed. :func:`clip` truncates on a
character boundary with an ellipsis.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

_DROP = frozenset({"script", "style", "noscript", "template", "iframe", "object"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_BREAKS = frozenset(
    {"p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "section"}
)
# Zero-width and format characters (U+200B-U+200F, U+2060-U+2064, U+FEFF), bidi embeddings,
# overrides and isolates (U+202A-U+202E, U+2066-U+2069), the soft hyphen and the Unicode
# "tag" block (U+E0000-U+E007F), which renders as nothing but is read by models.
_INVISIBLE = re.compile(
    "[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]"
)
_SPACE = re.compile(r"\s+")
# An open element a start tag ends without an end tag (HTML's implied end tags, the
# common cases): a hidden ``<p>`` left open must not hide the rest of the page.
_P_ENDERS = frozenset(
    {"p", "div", "ul", "ol", "dl", "table", "pre", "blockquote", "form", "hr", "section"}
    | {"h1", "h2", "h3", "h4", "h5", "h6", "header", "footer", "nav", "article", "main"}
)
_IMPLIED_END: dict[str, frozenset[str]] = {
    "p": _P_ENDERS,
    "li": frozenset({"li"}),
    "dt": frozenset({"dt", "dd"}),
    "dd": frozenset({"dt", "dd"}),
    "option": frozenset({"option"}),
}
# Inline styles that hide an element from a reader: not displayed, invisible, fully
# transparent, or text of size zero (the last two are the usual tricks for text a model
# reads and a person does not see).
_ZERO = r"(?:0+(?:\.0*)?|\.0+)"
_HIDING_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none\b|(?:content-)?visibility\s*:\s*(?:hidden|collapse)\b"
    rf"|opacity\s*:\s*{_ZERO}\s*(?=;|!|$)|font-size\s*:\s*{_ZERO}(?:px|em|rem|pt|%)?\s*(?=;|!|$))",
    re.I,
)


def hidden(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """Whether a browser would hide this element and everything inside it."""
    if tag == "template":
        return True
    for name, value in attrs:
        name = name.lower()
        if name == "hidden":
            return True
        if name == "aria-hidden" and (value or "").strip().lower() == "true":
            return True
        if name == "style" and value and _HIDING_STYLE.search(value):
            return True
    return False


class HiddenElements:
    """Tracks whether a parser is inside a hidden element (nesting counted per tag, so a
    hidden ``div`` ends at its own end tag, not at a nested one's)."""

    def __init__(self) -> None:
        self._open: list[str] = []

    @property
    def inside(self) -> bool:
        return bool(self._open)

    def start(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        """Note a start tag; True when it is (inside) a hidden element."""
        if self._open and tag in _IMPLIED_END.get(self._open[-1], ()):
            self._open.pop()  # as a browser ends an unclosed <p> or <li> here
        if tag in _VOID:
            return self.inside or hidden(tag, attrs)
        if self._open or hidden(tag, attrs):
            self._open.append(tag)
            return True
        return False

    def end(self, tag: str) -> bool:
        """Note an end tag; True when it belonged to a hidden element."""
        if tag not in self._open:
            return False
        while self._open and self._open.pop() != tag:
            pass
        return True


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip: list[str] = []
        self._hidden = HiddenElements()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._hidden.start(tag, attrs):
            self.parts.append(" ")
        elif tag in _DROP:
            self._skip.append(tag)
            self.parts.append(" ")
        elif tag in _BREAKS or tag in _VOID:
            self.parts.append(" ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if self._hidden.end(tag):
            self.parts.append(" ")
        elif self._skip and tag == self._skip[-1]:
            self._skip.pop()
            self.parts.append(" ")
        elif tag in _BREAKS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skip and not self._hidden.inside:
            self.parts.append(data)

    def handle_comment(self, data: str) -> None:
        self.parts.append(" ")


def remove_invisible(text: str) -> str:
    return _INVISIBLE.sub("", text)


def strip_html(fragment: str) -> str:
    if not fragment:
        return ""
    parser = _Text()
    try:
        parser.feed(fragment)
        parser.close()
        text = "".join(parser.parts)
    except Exception:  # html.parser is lenient; be safe anyway
        text = re.sub(r"<[^>]*>", " ", fragment)
    return _SPACE.sub(" ", remove_invisible(text)).strip()


def clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def clean(fragment: str, limit: int) -> str:
    """:func:`strip_html` then :func:`clip`: what a search result becomes for a model."""
    return clip(strip_html(fragment), limit)
