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

from tsukud.discover.css_hiding import (
    MIN_OPACITY,
    Rgba,
    StyleRules,
    colour,
    declarations,
    first_colour,
    font_size,
    hides,
    opacity,
    over,
    readable,
)

_DROP = frozenset({"script", "style", "noscript", "template", "iframe", "object"})
# Elements whose text the stripper never counts as seen: a template is never rendered;
# SVG text shows only where its viewport, transforms and paint put it, which a stripper
# cannot know (a browser engine can).
_HIDDEN_TAGS = frozenset({"template", "svg", "math"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr"}
)
_BREAKS = frozenset(
    {"p", "div", "br", "li", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "section"}
    | {"details", "summary", "pre", "blockquote", "dt", "dd"}
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


def hidden(tag: str, attrs: list[tuple[str, str | None]]) -> bool:
    """Whether a browser would hide this element and everything inside it, by its tag,
    attributes and inline style alone (:class:`HiddenElements` adds ``<style>`` rules,
    closed ``<details>``, inherited opacity, size and colour)."""
    if tag in _HIDDEN_TAGS:
        return True
    style = ""
    for name, value in attrs:
        name = name.lower()
        if name == "hidden":
            return True
        if name == "aria-hidden" and (value or "").strip().lower() == "true":
            return True
        if name == "style":
            style = value or ""
    return hides(declarations(style))


class _Open:
    """An open element as the stripper follows it: whether it (or an ancestor) hides what
    it holds, and what its text inherits."""

    __slots__ = ("background", "closed", "color", "font_px", "hidden", "opacity", "summary", "tag")

    def __init__(
        self,
        tag: str,
        hidden: bool,
        color: Rgba | None,
        background: Rgba | None,
        font_px: float | None,
        opacity: float,
        closed: bool = False,
    ) -> None:
        self.tag = tag
        self.hidden = hidden
        self.color = color
        self.background = background
        self.font_px = font_px
        self.opacity = opacity
        self.closed = closed  # a <details> without `open`: only its first <summary> shows
        self.summary = False  # that summary has been seen


# The page: black text on a white canvas at 16px.
_ROOT = _Open("#root", False, (0.0, 0.0, 0.0, 1.0), (255.0, 255.0, 255.0, 1.0), 16.0, 1.0)


class HiddenElements:
    """Tracks whether a parser is inside something a reader does not see (nesting counted
    per tag, so a hidden ``div`` ends at its own end tag, not at a nested one's).

    Given the page's ``<style>`` rules it applies them too, and it follows colour,
    background, font size and opacity down the tree, so text coloured like its background,
    too small or too faint to read is not visible either (:mod:`.css_hiding`)."""

    def __init__(self, rules: StyleRules | None = None) -> None:
        self._rules = rules if rules is not None else StyleRules()
        self._open: list[_Open] = []

    @property
    def _top(self) -> _Open:
        return self._open[-1] if self._open else _ROOT

    @property
    def inside(self) -> bool:
        """Whether text here goes unseen: in a hidden element, straight inside a closed
        ``<details>``, or too small, too faint or coloured like its background."""
        top = self._top
        if top.hidden or top.closed:
            return True
        return not readable(top.color, top.background, top.font_px)

    def start(self, tag: str, attrs: list[tuple[str, str | None]]) -> bool:
        """Note a start tag; True when it is (inside) a hidden element."""
        if self._open and tag in _IMPLIED_END.get(self._open[-1].tag, ()):
            self._open.pop()  # as a browser ends an unclosed <p> or <li> here
        element = self._element(tag, attrs, self._top)
        if tag not in _VOID:
            self._open.append(element)
        return element.hidden

    def _element(self, tag: str, attrs: list[tuple[str, str | None]], parent: _Open) -> _Open:
        own = hidden(tag, attrs)
        if parent.closed:
            own = own or tag != "summary" or parent.summary
            parent.summary = True
        style = next((v or "" for k, v in attrs if k.lower() == "style"), "")
        decl, ruled_out = self._rules.declarations(tag, attrs, style)
        own = own or ruled_out or hides(decl)
        opacity_ = parent.opacity * opacity(decl.get("opacity"))
        painted = decl.get("background-color") or decl.get("background")
        background = parent.background
        image = decl.get("background-image", "none").strip().lower()
        if image != "none" and "url(" not in image:
            painted = first_colour(image) or "?"  # a gradient: its first colour
        elif image != "none" or "url(" in (painted or ""):
            painted = "?"  # an image: its colour is unknown
        if painted:
            layer = colour(first_colour(painted), None)
            background = None if layer is None or background is None else over(layer, background)
        return _Open(
            tag,
            parent.hidden or own or opacity_ < MIN_OPACITY,
            colour(decl.get("-webkit-text-fill-color") or decl.get("color"), parent.color),
            background,
            font_size(decl.get("font-size"), parent.font_px),
            opacity_,
            closed=tag == "details" and not any(k.lower() == "open" for k, _ in attrs),
        )

    def end(self, tag: str) -> bool:
        """Note an end tag; True when it belonged to a hidden element."""
        if all(e.tag != tag for e in self._open):
            return False
        while self._open:
            element = self._open.pop()
            if element.tag == tag:
                return element.hidden
        return False


_STYLE_BLOCK = re.compile(r"<style\b[^>]*>(.*?)</style\s*>", re.I | re.S)


def style_rules(html: str) -> StyleRules:
    """The rules of every ``<style>`` element of a page (they apply wherever they sit)."""
    return StyleRules("\n".join(m.group(1) for m in _STYLE_BLOCK.finditer(html)))


class _Text(HTMLParser):
    def __init__(self, rules: StyleRules) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip: list[str] = []
        self._hidden = HiddenElements(rules)

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
    parser = _Text(style_rules(fragment))
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
