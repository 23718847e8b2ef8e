"""``tsukud.wirejson``: the client's frames in and out without importing ``json``, held
to ``json.dumps``/``json.loads`` themselves: the same text, the same values, the same
errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud import wirejson

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(st.characters(codec=None), max_size=12)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
_FORMS: list[dict[str, Any]] = [
    {},  # the requests' form
    {"ensure_ascii": False, "separators": (",", ":")},  # --json output (render.jsonl)
    {"ensure_ascii": False},
]


@given(_VALUES)
def test_the_text_is_jsons(value: Any) -> None:
    for form in _FORMS:
        assert wirejson.dumps(value, **form) == json.dumps(value, **form)


@given(_VALUES)
def test_what_is_read_is_what_json_reads(value: Any) -> None:
    text = json.dumps(value)
    assert wirejson.loads(text) == json.loads(text)
    assert wirejson.loads(text.encode()) == json.loads(text.encode())
    assert wirejson.loads(f" \n{text}\t\r\n") == value


def test_the_constants_json_writes_are_read_back() -> None:
    read = wirejson.loads("[NaN, Infinity, -Infinity, 1e400, 1.5, 10000000000000000000000]")
    assert math.isnan(read[0]) and read[1:4] == [math.inf, -math.inf, math.inf]
    assert read[4:] == [1.5, 10**22] and type(read[5]) is int
    assert wirejson.dumps([math.nan, math.inf]) == "[NaN, Infinity]"


@pytest.mark.parametrize(
    "bad",
    ["", " ", "{", '{"a": }', "{} x", "[1,]", "\ufeff{}", "nul", '"\x01"', "01"],
)
def test_a_bad_frame_is_jsons_error(bad: str) -> None:
    with pytest.raises(json.JSONDecodeError) as ours:
        wirejson.loads(bad)
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(bad)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)


def test_bytes_json_would_decode_otherwise_are_left_to_it() -> None:
    text = '{"a": "\u00e9"}'
    for encoded in (text.encode("utf-8-sig"), text.encode("utf-16"), text.encode("utf-32")):
        assert wirejson.loads(encoded) == json.loads(encoded) == {"a": "\u00e9"}
    with pytest.raises(UnicodeDecodeError):
        wirejson.loads(b'{"a": "\xff"}')


def test_what_json_cannot_write_is_refused_as_json_refuses_it() -> None:
    for value in ({"a": {1, 2}}, [object()], {(1, 2): 3}):
        with pytest.raises(TypeError) as ours:
            wirejson.dumps(value)
        with pytest.raises(TypeError) as theirs:
            json.dumps(value)
        assert str(ours.value) == str(theirs.value)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        wirejson.dumps(loop)


def test_using_it_imports_neither_json_nor_re() -> None:
    code = (
        "import sys; from tsukud import wirejson; "
        "wirejson.loads(wirejson.dumps({'a': [1, 2.5, None, 'é']}).encode()); "
        "print(sorted(m for m in ('json', 're') if m in sys.modules))"
    )
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert cp.stdout.strip() == "[]"
