"""The stripper that stands in for a browser engine: none of the fourteen hiding tricks
reads as visible, the look-alikes a reader does see stay, and what is found in the text
(the hosts a recipe may download from) follows."""

from __future__ import annotations

import pytest

from tests.hiding_tricks import HIDDEN, SHOWN, VISIBLE, served
from tsukud.discover.sanitize_html import strip_html
from tsukud.instructions.page import named_origins, visible_text


@pytest.mark.parametrize("trick", sorted(HIDDEN))
def test_no_hiding_trick_reads_as_visible_to_the_stripper(trick: str) -> None:
    text = strip_html(served(*HIDDEN[trick]))
    assert "evil" not in text, text
    # The rest of the page is still read: the trick hid only its own element.
    assert "Download https://dl.vendor.test/foo.tar.gz" in text
    assert text.endswith("Then run foo.")
    assert named_origins(visible_text(served(*HIDDEN[trick]))) == {"https://dl.vendor.test"}


@pytest.mark.parametrize("control", sorted(VISIBLE))
def test_what_a_reader_sees_stays_visible_to_the_stripper(control: str) -> None:
    text = strip_html(served(*VISIBLE[control]))
    assert SHOWN in text, text
    assert "https://mirror.vendor.test" in named_origins(text)


@pytest.mark.parametrize(
    ("html", "seen"),
    [
        # A class rule hides; a later, more specific colour rule cannot make hidden text
        # visible, and a rule with a combinator only ever hides (it may match).
        ("<style>.a{color:#fff}</style><p class=a>x</p><p>y</p>", "y"),
        ("<style>#i{color:#fff} .c{color:#000}</style><p id=i class=c>x</p>y", "y"),
        ("<style>.nope .c{color:#000}</style><div style='color:#fff'><b class=c>x</b></div>y", "y"),
        ("<style>main .c{display:none}</style><p class=c>x</p>y", "y"),
        ("<style>@media (min-width:1px){.m{display:none}}</style><p class=m>x</p>y", "y"),
        # A child may bring back its colour, never what an ancestor hid; the stripper
        # counts tiny text as hidden with all it holds (it errs towards hidden).
        ("<div style='font-size:1px'>x<span style='font-size:14px'>x</span></div>y", "y"),
        ("<div style='font-size:.2em'>x</div><div style='font-size:.5em'>y</div>", "y"),
        ("<div style='color:#fff'>x<b style='color:#222'>y</b></div>", "y"),
        ("<div style='opacity:.2'>y<b style='opacity:.3'>x</b></div>", "y"),
        ("<div style='-webkit-text-fill-color:#fff;color:#000'>x</div>y", "y"),
        ("<div style='background:linear-gradient(#fff,#fff);color:#fff'>x</div>y", "y"),
        ("<span style='position:absolute;clip:rect(1px 1px 1px 1px)'>x</span>y", "y"),
        ("<h1 style='text-indent:-9999px'>x</h1>y", "y"),
        ("<div style='transform:translateX(-10000px)'>x</div>y", "y"),
        ("<div style='transform:matrix(0,0,0,0,0,0)'>x</div>y", "y"),
        ("<div style='max-height:2px;overflow:hidden'>x</div>y", "y"),
        ("<details><summary>y</summary>x<summary>x</summary></details>", "y"),
        ("<math><mi>x</mi></math>y", "y"),
    ],
)
def test_the_stripper_follows_rules_and_inheritance(html: str, seen: str) -> None:
    assert strip_html(html) == seen
