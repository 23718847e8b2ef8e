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

import re

# ESC-introduced sequences: CSI (ESC [ ... final), OSC / DCS / SOS / PM / APC (ESC ] P X ^ _
# ... up to BEL or ST within the line), and the two- or three-byte escapes (ESC ( B, ESC 7).
# Then the same in their 8-bit C1 forms (CSI 0x9b, OSC 0x9d, DCS 0x90, SOS 0x98, PM 0x9e,
# APC 0x9f; ST 0x9c). A string sequence without its terminator loses only its introducer:
# its body stays visible rather than swallowing the text after it (a warning, a prompt).
_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]?"
    r"|\x1b[\]PX^_][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
    r"|\x1b[ -/]*[0-~]?"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
    r"|[\x90\x98\x9d\x9e\x9f][^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)"
)
_ASCII_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_DROP = frozenset(("Cc", "Cf", "Co", "Cs"))
_LINE_BREAKS = re.compile("\r\n|[\n\u2028\u2029\x85]")


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """``text`` without escape sequences, control characters (``\\r`` included; newline
    and tab kept), bidi and zero-width characters. ``one_line``: line breaks and tabs
    become spaces too, for a value shown inside a line (a title, a name, an owner)."""
    if text.isascii() and not _ASCII_CONTROL.search(text):
        return text.replace("\n", " ").replace("\t", " ") if one_line else text
    text = _LINE_BREAKS.sub("\n", text)
    text = _SEQUENCE.sub("", text)
    if not text.isascii():
        import unicodedata

        keep = "\n\t"
        text = "".join(c for c in text if c in keep or unicodedata.category(c) not in _DROP)
    else:
        text = _ASCII_CONTROL.sub("", text)
    if one_line:
        text = text.replace("\n", " ").replace("\t", " ")
    return text
