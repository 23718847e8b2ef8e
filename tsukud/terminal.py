"""Text from elsewhere made safe to show on a terminal (standard library only).

Anything a model, a web page, GitHub or an archive wrote can carry escape sequences
that move the cursor, erase lines, retitle the window or plant hyperlinks (CSI, OSC 8,
DCS, their 8-bit C1 forms), a carriage return that overprints the line, or bidi
overrides that make a reviewer read text in another order. Any of them could repaint a
confirmation prompt or hide a warning above it. :func:`terminal_safe` removes whole
sequences (not just the ESC, so no ``[2K`` debris is left) and then every control,
format (bidi, zero-width), private-use and surrogate character except newline and tab.

Stdlib only and cheap on plain ASCII: ``tsukuctl`` runs every line it prints through
it, and the daemon uses it where it builds question text.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    import re

_DROP = frozenset(("Cc", "Cf", "Co", "Cs"))


class _Patterns:
    """The patterns, compiled on the first text that needs them: printable text (every
    line of ``tsukuctl status``) never imports ``re``, whose import alone costs the
    client about half of ``python -c pass``."""

    def __init__(self) -> None:
        import re

        # ESC-introduced sequences: CSI (ESC [ ... final), OSC / DCS / SOS / PM / APC
        # (ESC ] P X ^ _ ... up to BEL or ST within the line), and the two- or three-byte
        # escapes (ESC ( B, ESC 7). Then the same in their 8-bit C1 forms (CSI 0x9b, OSC
        # 0x9d, DCS 0x90, SOS 0x98, PM 0x9e, APC 0x9f; ST 0x9c). A string sequence without
        # its terminator loses only its introducer: its body stays visible rather than
        # swallowing the text after it (a warning, a prompt).
        self.sequence: re.Pattern[str] = re.compile(
            r"\x1b\[[0-?]*[ -/]*[@-~]?"
            r"|\x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
            r"|\x1b[ -/]*[0-~]?"
            r"|\x9b[0-?]*[ -/]*[@-~]?"
            r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
        )
        self.ascii_control: re.Pattern[str] = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
        self.line_breaks: re.Pattern[str] = re.compile("\r\n|[\n\u2028\u2029\x85]")


_patterns: _Patterns | None = None


def _compiled() -> _Patterns:
    global _patterns
    if _patterns is None:
        _patterns = _Patterns()
    return _patterns


def _plain(text: str) -> bool:
    """Nothing to remove: every character printable (so no control, format, private-use
    or surrogate one, no ESC or C1 introducer, no line separator) but newlines and tabs.
    Most text, ASCII or not, is decided here, without the patterns."""
    return text.isprintable() or text.replace("\n", "").replace("\t", "").isprintable()


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """``text`` without escape sequences, control characters (``\\r`` included; newline
    and tab kept), bidi and zero-width characters. ``one_line``: line breaks and tabs
    become spaces too, for a value shown inside a line (a title, a name, an owner)."""
    if not _plain(text):
        text = _scrubbed(text)
    if one_line:
        text = text.replace("\n", " ").replace("\t", " ")
    return text


def _scrubbed(text: str) -> str:
    """The removal itself (``tests/unit/test_terminal.py`` holds :func:`_plain` to
    deciding only texts this leaves as they are)."""
    patterns = _compiled()
    text = patterns.line_breaks.sub("\n", text)
    text = patterns.sequence.sub("", text)
    if not text.isascii():
        import unicodedata

        keep = "\n\t"
        return "".join(c for c in text if c in keep or unicodedata.category(c) not in _DROP)
    return patterns.ascii_control.sub("", text)
