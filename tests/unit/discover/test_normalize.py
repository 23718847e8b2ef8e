"""Names and typosquats, checked before anything reaches the network (sources:
tests/unit/test_source.py)."""

from __future__ import annotations

import pytest

from tsukud.discover.errors import InvalidToolName
from tsukud.discover.normalize import bounded_distance, normalize_name, typosquat


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("stripe-cli", "stripe-cli"), ("  Stripe-CLI ", "stripe-cli"), ("g++", "g++"), ("k9s", "k9s")],
)
def test_names_are_trimmed_and_lowercased(raw: str, expected: str) -> None:
    assert normalize_name(raw) == expected


def test_non_ascii_is_refused_and_named() -> None:
    with pytest.raises(InvalidToolName) as exc:
        normalize_name("\u0455tripe-cli")  # Cyrillic dze for the s
    assert "U+0455 CYRILLIC SMALL LETTER DZE" in exc.value.message
    assert "homoglyph" in exc.value.message
    assert exc.value.exit_code == 2 and not exc.value.retryable
    with pytest.raises(InvalidToolName, match="U\\+FF53"):
        normalize_name("\uff53tripe")  # fullwidth s: NFKC would have folded it to ASCII
    with pytest.raises(InvalidToolName, match="U\\+200B"):
        normalize_name("stripe\u200bcli")


@pytest.mark.parametrize("raw", ["", "   ", "-x", "a/b", "a..b", "x y", "../etc", "a" * 101])
def test_bad_names(raw: str) -> None:
    with pytest.raises(InvalidToolName):
        normalize_name(raw)


def test_length_limit_is_100() -> None:
    assert normalize_name("a" * 100) == "a" * 100


def test_bounded_distance() -> None:
    assert bounded_distance("kitten", "sitting", 5) == 3
    assert bounded_distance("kitten", "sitting", 2) == 3  # limit + 1 once past it
    assert bounded_distance("abc", "abc", 2) == 0
    assert bounded_distance("abc", "abcdef", 2) == 3


def test_typosquat_nearest_known_name() -> None:
    known = ["stripe-cli", "ripgrep", "kubectl", "gh"]
    hit = typosquat("strpe-cli", known)
    assert hit is not None and (hit.similar, hit.distance) == ("stripe-cli", 1)
    assert "1 edit away" in hit.message()
    hit = typosquat("kubectll", known)
    assert hit is not None and hit.similar == "kubectl"
    assert typosquat("stripe-cli", known) is None  # exact: not a squat
    assert typosquat("completely-else", known) is None


def test_typosquat_short_names_need_distance_one_and_ties_are_stable() -> None:
    assert typosquat("fx", ["fd", "gh"]) is not None  # distance 1
    assert typosquat("xy", ["gh"]) is None  # distance 2 is too loose for 2 letters
    hit = typosquat("bat2", ["bat1", "bat3"])
    assert hit is not None and hit.similar == "bat1"  # alphabetical among equals
