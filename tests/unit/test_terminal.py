"""``terminal_safe``: whole escape sequences go (no ``[2K`` debris), so do carriage
returns, C1 controls and bidi / zero-width characters; ordinary text is untouched."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud.terminal import _plain, _scrubbed, terminal_safe


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        ("a\x1b[1A\x1b[2Kb", "ab"),  # CSI: cursor up, erase line
        ("x\rAPPROVED", "xAPPROVED"),  # carriage return overprinting the line
        ("\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\ here", "click here"),  # OSC 8
        ("\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07", "click"),  # OSC with BEL
        ("\x1b]0;new title\x07t", "t"),  # window title
        ("\x1bP+q544e\x1b\\d", "d"),  # DCS
        ("\x9b2Kz\x9d8;;u\x9cw", "zw"),  # 8-bit CSI and OSC
        ("\u202eevil\u202c \u2066x\u2069 \u200bz\u200f", "evil x z"),  # bidi, zero-width
        ("a\x1b(Bb\x1b7c", "abc"),  # charset designation, save cursor
        ("bell\x07 nul\x00 del\x7f", "bell nul del"),
        ("trailing\x1b", "trailing"),
        ("\x1b[31", ""),  # a CSI cut short
    ],
)
def test_hostile_sequences_are_removed_whole(hostile: str, shown: str) -> None:
    assert terminal_safe(hostile) == shown


def test_an_unterminated_string_sequence_does_not_swallow_what_follows() -> None:
    assert terminal_safe("\x1b]8;;no end\n  ! this repository is a FORK") == (
        "8;;no end\n  ! this repository is a FORK"
    )


def test_ordinary_text_is_kept() -> None:
    text = "café ☕ 日本語 tab\there\nnext line — “quoted” 😀"
    assert terminal_safe(text) == text
    assert terminal_safe("plain ascii") == "plain ascii"


def test_one_line_folds_line_breaks() -> None:
    assert terminal_safe("a\nb\r\nc\u2028d\te", one_line=True) == "a b c d e"
    assert terminal_safe("a\r\nb") == "a\nb"


# Printable text is passed without the patterns (tsukuctl's start-up never imports `re`
# for it): that shortcut may only ever skip texts the removal would leave as they are.
_ANY_TEXT = st.text(
    st.characters(codec=None, blacklist_categories=()) | st.sampled_from("\x1b\r\n\t\x9b\x85"),
    max_size=40,
)


@given(_ANY_TEXT)
def test_the_shortcut_skips_only_text_with_nothing_to_remove(text: str) -> None:
    assert terminal_safe(text) == _scrubbed(text)
    assert terminal_safe(text, one_line=True) == (
        _scrubbed(text).replace("\n", " ").replace("\t", " ")
    )


@pytest.mark.parametrize("hidden", ["\u202e", "\u200b", "\x1b", "\x9b", "\x85", "\r", "\ue000"])
def test_printable_looking_text_with_one_hidden_character_is_scrubbed(hidden: str) -> None:
    assert not _plain(f"ok café {hidden}")
    assert hidden not in terminal_safe(f"ok café {hidden}")
