"""The client's side of a numbered choice: what a typed reply means and what is sent."""

from __future__ import annotations

import io
import sys

import pytest

from tsukuctl.choose import answer_params, choose_on_terminal, parse_pick

QUESTION = {
    "token": "t1",
    "message": "Discovery found 2 possible sources for sterm; none clears the bar:\n  1. ...",
    "question": "Which source should tsuku use for sterm?",
    "choose": [{"number": 1, "source": "a/sterm"}, {"number": 2, "source": "b/sterm"}],
}


@pytest.mark.parametrize(
    ("reply", "picked"),
    [("2\n", 2), (" 1 ", 1), ("0", 0), ("\n", 0), ("3", None), ("-1", None), ("b", None)],
)
def test_parse_pick(reply: str, picked: int | None) -> None:
    assert parse_pick(reply, 2) == picked


def test_answer_params_for_a_choice_and_a_yes_no() -> None:
    assert answer_params(QUESTION, 2) == {"token": "t1", "yes": True, "choice": 2}
    assert answer_params(QUESTION, 0) == {"token": "t1", "yes": False, "choice": None}
    assert answer_params({"token": "t2"}, True) == {"token": "t2", "yes": True}


def test_a_wrong_number_is_asked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO("7\nx\n2\n"))
    shown = io.StringIO()
    monkeypatch.setattr(sys, "stderr", shown)
    assert choose_on_terminal(QUESTION) == 2
    text = shown.getvalue()
    assert text.count("[1-2, 0 or Enter for none]") == 3
    assert "type a number from 1 to 2, or 0 for none" in text
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    assert choose_on_terminal(QUESTION) == 0  # end of input: none
