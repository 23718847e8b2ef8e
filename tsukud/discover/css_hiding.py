"""Which CSS hides text from a reader, for the HTML stripper (pure, stdlib only).

The stripper (:mod:`.sanitize_html`) stands in for a browser engine when none is
installed, so it errs towards *hidden*: a declaration that could hide an element hides it
(any ``clip-path``, every ``<style>`` rule whose last compound selector matches, media
queries or not), while a declaration that could make text visible again (a colour, a
font size) is taken only from inline styles and rules with one simple selector, in
specificity order. What it still cannot know (external stylesheets, layout that covers
text, colours it cannot parse) is listed in docs/discovery.md.
"""

from __future__ import annotations

import re

Rgba = tuple[float, float, float, float]

MIN_PX = 6.0  # smallest readable font size
MIN_OPACITY = 0.1  # effective opacity (ancestors included) below which text is not seen
MIN_CONTRAST = 1.5  # WCAG contrast ratio between text and background below which it is not
FAR_PX = 500.0  # an offset this far off the page's top or left puts the element off screen
FAR_RIGHT_PX = 5000.0
MIN_SCALE = 0.1

_DECL = re.compile(r"([\w-]+)\s*:\s*([^;]*)")
_RULE = re.compile(r"([^{}]+)\{([^{}]*)\}")
_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_COMPOUND = re.compile(r"^(?P<tag>[a-z][\w-]*|\*)?(?P<rest>(?:[#.][\w-]+)*)$", re.I)
_PSEUDO = re.compile(r"::?[\w-]+(?:\([^)]*\))?|\[[^\]]*\]")
_LENGTH = re.compile(r"^(-?(?:\d+\.?\d*|\.\d+))(px|pt|em|rem|%|vw|vh)?$", re.I)
_NUMBER = r"-?(?:\d+\.?\d*|\.\d+)"
_SCALES = re.compile(r"\b(scale[xyz3d]*|matrix(?:3d)?)\(([^)]*)\)", re.I)
_TRANSLATE = re.compile(r"\btranslate(?:x|3d)?\(\s*(" + _NUMBER + r")px", re.I)
_HEX = re.compile(r"^#([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$", re.I)
_FUNC = re.compile(r"^rgba?\(([^)]*)\)$", re.I)
_COLOUR_TOKEN = re.compile(r"#[0-9a-f]{3,8}\b|rgba?\([^)]*\)|\b[a-z]+\b", re.I)
NAMED: dict[str, Rgba] = {
    "white": (255, 255, 255, 1),
    "black": (0, 0, 0, 1),
    "transparent": (0, 0, 0, 0),
    "red": (255, 0, 0, 1),
    "green": (0, 128, 0, 1),
    "blue": (0, 0, 255, 1),
    "gray": (128, 128, 128, 1),
    "grey": (128, 128, 128, 1),
    "silver": (192, 192, 192, 1),
    "whitesmoke": (245, 245, 245, 1),
    "snow": (255, 250, 250, 1),
    "ivory": (255, 255, 240, 1),
    "ghostwhite": (248, 248, 255, 1),
    "yellow": (255, 255, 0, 1),
    "navy": (0, 0, 128, 1),
    "maroon": (128, 0, 0, 1),
}
_HIDING_DISPLAY = re.compile(r"^none\b", re.I)


def declarations(style: str) -> dict[str, str]:
    """``property: value`` pairs of a style attribute or rule body (lowercase names,
    ``!important`` dropped, later wins)."""
    out: dict[str, str] = {}
    for m in _DECL.finditer(_COMMENT.sub("", style or "")):
        value = m.group(2).replace("!important", "").strip()
        out[m.group(1).lower()] = value
    return out


def _px(value: str | None, parent_px: float = 16.0) -> float | None:
    m = _LENGTH.match((value or "").strip())
    if m is None:
        return None
    n, unit = float(m.group(1)), (m.group(2) or "px").lower()
    return {
        "px": n,
        "pt": n * 4 / 3,
        "em": n * parent_px,
        "rem": n * 16,
        "%": n * parent_px / 100,
        "vw": n * 12.8,
        "vh": n * 8,
    }[unit]


def _number(value: str) -> float | None:
    value = value.strip()
    try:
        return float(value[:-1]) / 100 if value.endswith("%") else float(value)
    except ValueError:
        return None


def opacity(value: str | None) -> float:
    n = _number(value) if value else None
    return 1.0 if n is None else max(0.0, min(1.0, n))


def font_size(value: str | None, parent_px: float | None) -> float | None:
    """The element's font size in px (None: unknown, e.g. a keyword under a ``calc``)."""
    if value is None:
        return parent_px
    if parent_px is None:
        return _px(value) if not value.strip().endswith(("em", "%")) else None
    return _px(value, parent_px)


def _scaled_away(transform: str) -> bool:
    for m in _SCALES.finditer(transform):
        args = [_number(a) for a in re.split(r"[\s,]+", m.group(2).strip()) if a]
        name = m.group(1).lower()
        if name.startswith("matrix"):
            # matrix(a, b, c, d, tx, ty): the columns' lengths are the scales.
            if len(args) >= 4 and None not in args[:4]:
                a, b, c, d = (x for x in args[:4] if x is not None)
                if (a * a + b * b) ** 0.5 < MIN_SCALE or (c * c + d * d) ** 0.5 < MIN_SCALE:
                    return True
            continue
        if any(x is not None and abs(x) < MIN_SCALE for x in args):
            return True
    return any(float(m.group(1)) <= -FAR_PX for m in _TRANSLATE.finditer(transform))


def _clip_rect_empty(clip: str) -> bool:
    m = re.search(r"rect\(([^)]*)\)", clip, re.I)
    if m is None:
        return False
    parts = [p for p in re.split(r"[\s,]+", m.group(1).strip()) if p]
    if len(parts) != 4 or "auto" in parts:
        return False
    top, right, bottom, left = (_px(p) for p in parts)
    if None in (top, right, bottom, left):
        return False
    assert top is not None and right is not None and bottom is not None and left is not None
    return right - left < MIN_PX or bottom - top < MIN_PX


def _offscreen(decl: dict[str, str]) -> bool:
    for name in ("left", "top", "right", "bottom", "margin-left", "margin-top", "text-indent"):
        n = _px(decl.get(name))
        if n is not None and n <= -FAR_PX:
            return True
    for name in ("left", "margin-left"):
        n = _px(decl.get(name))
        if n is not None and n >= FAR_RIGHT_PX:
            return True
    return False


def _collapsed(decl: dict[str, str]) -> bool:
    """A box too small to show a line, whose overflow is clipped or scrolled."""
    overflow = " ".join(decl.get(k, "") for k in ("overflow", "overflow-x", "overflow-y"))
    if not re.search(r"\b(hidden|clip|auto|scroll)\b", overflow, re.I):
        return False
    for name in ("height", "max-height", "width", "max-width"):
        n = _px(decl.get(name))
        if n is not None and n < MIN_PX:
            return True
    return False


def hides(decl: dict[str, str]) -> bool:
    """Whether these declarations hide the element and everything inside it."""
    get = decl.get
    if _HIDING_DISPLAY.match(get("display", "")):
        return True
    if re.match(r"^(hidden|collapse)\b", get("visibility", ""), re.I):
        return True
    if re.match(r"^hidden\b", get("content-visibility", ""), re.I):
        return True
    if opacity(get("opacity")) < MIN_OPACITY:
        return True
    size = _px(get("font-size"))
    if size is not None and size < MIN_PX:
        return True
    for name in ("clip-path", "-webkit-clip-path", "mask", "mask-image", "-webkit-mask-image"):
        if get(name, "none").strip().lower() not in ("none", ""):
            return True
    if _clip_rect_empty(get("clip", "")):
        return True
    if _scaled_away(get("transform", "")) or _scaled_away("scale(" + get("scale", "1") + ")"):
        return True
    return _offscreen(decl) or _collapsed(decl)


# ---- colours ----------------------------------------------------------------------------


def colour(value: str | None, inherited: Rgba | None) -> Rgba | None:
    """A CSS colour as RGBA (None: unknown); ``inherit``/``currentcolor``/absent keep the
    inherited one."""
    if value is None:
        return inherited
    v = value.strip().lower()
    if v in ("", "inherit", "currentcolor", "initial", "unset"):
        return inherited
    if v in NAMED:
        return NAMED[v]
    if m := _HEX.match(v):
        h = m.group(1)
        if len(h) in (3, 4):
            h = "".join(c * 2 for c in h)
        alpha = int(h[6:8], 16) / 255 if len(h) == 8 else 1.0
        return (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16), alpha)
    if m := _FUNC.match(v):
        parts = [p for p in re.split(r"[\s,/]+", m.group(1).strip()) if p]
        values: list[float] = []
        for i, part in enumerate(parts[:4]):
            n = _number(part)
            if n is None:
                return None
            values.append(n * 255 if part.endswith("%") and i < 3 else n)
        if len(parts) in (3, 4):
            alpha = values[3] if len(values) == 4 else 1.0
            return (values[0], values[1], values[2], alpha)
    return None


def first_colour(background: str) -> str | None:
    """The colour in a ``background`` shorthand (None when it names none)."""
    for m in _COLOUR_TOKEN.finditer(background):
        token = m.group(0)
        if token.startswith(("#", "rgb")) or token.lower() in NAMED:
            return token
    return None


def over(top: Rgba, bottom: Rgba) -> Rgba:
    a = top[3]
    return (
        top[0] * a + bottom[0] * (1 - a),
        top[1] * a + bottom[1] * (1 - a),
        top[2] * a + bottom[2] * (1 - a),
        1.0,
    )


def _luminance(c: Rgba) -> float:
    def channel(v: float) -> float:
        v /= 255
        return v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2])


def contrast(a: Rgba, b: Rgba) -> float:
    la, lb = _luminance(a), _luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


def readable(color: Rgba | None, background: Rgba | None, font_px: float | None) -> bool:
    """Text of this colour and size on this background can be read (unknowns count as
    readable: the stripper cannot tell, and says so)."""
    if font_px is not None and font_px < MIN_PX:
        return False
    if color is None or background is None:
        return True
    return contrast(over(color, background), background) >= MIN_CONTRAST


# ---- <style> rules ------------------------------------------------------------------------


class _Rule:
    __slots__ = ("classes", "decl", "ids", "simple", "specificity", "tag")

    def __init__(
        self,
        tag: str | None,
        ids: frozenset[str],
        classes: frozenset[str],
        decl: dict[str, str],
        *,
        simple: bool,
        order: int,
    ) -> None:
        self.tag = tag
        self.ids = ids
        self.classes = classes
        self.decl = decl
        self.simple = simple
        self.specificity = (len(ids), len(classes), 1 if tag else 0, order)

    def matches(self, tag: str, ids: set[str], classes: set[str]) -> bool:
        return (
            (self.tag is None or self.tag == tag)
            and self.ids <= ids
            and self.classes <= classes
            and bool(self.tag or self.ids or self.classes)
        )


def _selector(text: str) -> tuple[str | None, frozenset[str], frozenset[str], bool] | None:
    text = text.strip()
    if not text or "::" in text:
        return None  # a pseudo-element's generated text is never read anyway
    last = re.split(r"\s*[\s>+~]\s*", text)[-1]
    bare = _PSEUDO.sub("", last)
    m = _COMPOUND.match(bare)
    if m is None or not bare:
        return None
    simple = bare == text
    tag = (m.group("tag") or "").lower() or None
    rest = m.group("rest")
    ids = frozenset(re.findall(r"#([\w-]+)", rest))
    classes = frozenset(re.findall(r"\.([\w-]+)", rest))
    return (None if tag == "*" else tag, ids, classes, simple)


class StyleRules:
    """The page's ``<style>`` rules, reduced to what the stripper can match."""

    def __init__(self, css: str = "") -> None:
        self._rules: list[_Rule] = []
        for order, m in enumerate(_RULE.finditer(_COMMENT.sub("", css))):
            decl = declarations(m.group(2))
            if not decl:
                continue
            for part in m.group(1).split(","):
                parsed = _selector(part.split("{")[-1])
                if parsed is not None:
                    tag, ids, classes, simple = parsed
                    self._rules.append(_Rule(tag, ids, classes, decl, simple=simple, order=order))
        self._rules.sort(key=lambda r: r.specificity)

    def declarations(
        self, tag: str, attrs: list[tuple[str, str | None]], style: str
    ) -> tuple[dict[str, str], bool]:
        """The element's declarations (rules in specificity order, then its inline style)
        and whether any rule that matches at least loosely hides it."""
        ids: set[str] = set()
        classes: set[str] = set()
        for name, value in attrs:
            if name == "id" and value:
                ids.add(value.strip())
            elif name == "class" and value:
                classes.update(value.split())
        merged: dict[str, str] = {}
        hidden = False
        for rule in self._rules:
            if not rule.matches(tag, ids, classes):
                continue
            hidden = hidden or hides(rule.decl)
            if rule.simple:
                merged.update(rule.decl)
        merged.update(declarations(style))
        return merged, hidden
