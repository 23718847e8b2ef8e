"""decode_request: every body is a Request or a BadRequest, nothing else escapes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hostile_rpc import nested
from tests.hypothesis_profiles import examples
from tsukud.rpc.protocol import (
    MAX_DEPTH,
    BadRequest,
    _nests_deeper_than,
    _repeats_a_key,
    decode_request,
)


def refused(body: bytes) -> BadRequest:
    with pytest.raises(BadRequest) as e:
        decode_request(body)
    assert e.value.error.code == "bad_request"
    return e.value


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":1,"method":"\xff"}',  # issue 17: UnicodeDecodeError ended the daemon
        b'{"id":1,"method":"\xed\xa0\x80"}',  # a surrogate, UTF-8 encoded
        b'{"id":1,"method":"ping","params":{"k":"\xc0\xaf"}}',
    ],
)
def test_invalid_utf8_is_a_bad_request(body: bytes) -> None:
    bad = refused(body)
    assert "not valid UTF-8" in bad.error.message
    assert bad.request_id is None


def test_a_lone_surrogate_escape_is_a_bad_request() -> None:
    assert "not valid JSON" in refused(rb'{"id":1,"method":"\ud800"}').error.message


@pytest.mark.parametrize("body", [b"[" * 100_000, b"[" * 100_000 + b"]" * 100_000])
def test_100000_brackets_are_a_bad_request(body: bytes) -> None:
    # Issue 17: RecursionError ended the daemon.
    assert refused(body).request_id is None


def test_params_nested_past_the_limit_are_refused_under_the_request_id() -> None:
    def body(levels: int) -> bytes:
        # The request object is level 1 and params level 2.
        return b'{"id":5,"method":"config.set","params":{"value":' + nested(levels - 2) + b"}}"

    assert json.loads(bytes(decode_request(body(MAX_DEPTH)).params))["value"] is not None
    bad = refused(body(MAX_DEPTH + 1))
    assert bad.request_id == 5
    assert f"more than {MAX_DEPTH} levels" in bad.error.message
    assert "flatten" in bad.error.hint
    assert refused(body(100_000)).request_id is None  # too deep for the decoder itself


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"id": 1, "method": "x", "params": {"s": "[{" * 1000 + '\\"[' * 100}})
    assert decode_request(text.encode()).id == 1


@pytest.mark.parametrize(
    ("id_text", "expected"),
    [(b"9" * 50, int(b"9" * 50)), (b"-" + b"9" * 4000, -int(b"9" * 4000))],
)
def test_a_huge_integer_id_is_answered_as_it_came(id_text: bytes, expected: int) -> None:
    assert decode_request(b'{"id":' + id_text + b',"method":"ping"}').id == expected


def test_an_integer_past_every_limit_is_a_bad_request() -> None:
    for body in (
        b'{"id":' + b"9" * 20_000 + b',"method":"ping"}',
        b'{"id":3,"method":"ping","params":{"n":' + b"9" * 20_000 + b"}}",
    ):
        assert "out of range" in refused(body).error.message


def depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    return 0


# Strings full of brackets, quotes and backslashes: the check must skip them all.
tricky_text = st.text('[{}]\\"ab', max_size=6)
json_trees = st.recursive(
    st.none() | st.integers() | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=80,
)


@settings(max_examples=examples(500), deadline=None)
@given(json_trees, st.integers(1, 12))
def test_nesting_check_agrees_with_the_decoded_depth(tree: Any, limit: int) -> None:
    body = json.dumps(tree).encode()
    assert _nests_deeper_than(body, limit) == (depth(tree) > limit)


@settings(max_examples=examples(2000), deadline=None)
@given(st.binary(max_size=512))
def test_any_bytes_are_a_request_or_a_bad_request(body: bytes) -> None:
    try:
        decode_request(body)
    except BadRequest as bad:
        assert bad.error.code == "bad_request"


# ---- issue 31: a frame means one thing to every reader -----------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":1,"method":"ping","method":"daemon.stop"}',
        b'{"id":1,"id":2,"method":"ping"}',
        b'{"id":1,"method":"ping","metho\\u0064":"daemon.stop"}',  # the same key, escaped
        b'{"id":1,"method":"config.set","params":{"key":"a","value":1,"key":"b"}}',
        b'{"id":1,"method":"events.append","params":{"events":[{"type":"a"},'
        b'{"type":"b","type":"c"}]}}',
        b'{"id":1,"method":"ping","params":{"x":{"y":{"z":1,"z":2}}}}',
        # The dropped value's colon is back in the kept one, escaped: the raw colon
        # counts agree, only the ones outside strings do not.
        b'{"id":1,"method":"ping","params":{"a":"x","a":"\\u003a"}}',
    ],
    ids=["method", "id", "escaped", "params", "in-a-list", "deep", "escaped-colon"],
)
def test_a_key_named_twice_anywhere_is_a_bad_request(body: bytes) -> None:
    bad = refused(body)
    assert "same key twice" in bad.error.message
    assert "each key once" in bad.error.hint
    assert bad.request_id is None  # which id would it be?


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":1,"method":"ping","params":{"url":"https://a:b@c:8080/x:y"}}',
        b'{"id":1,"method":"ping","params":{"a:b":1,"a":2,"b":":"}}',
        json.dumps({"id": 1, "method": "ping", "params": {"k": '":', "q": '\\":1'}}).encode(),
        b'{"id":1,"method":"ping","params":{"a":{"k":1},"b":{"k":1},"l":[{"k":1},{"k":2}]}}',
    ],
    ids=["colons-in-a-value", "colons-in-a-key", "escaped-quotes", "same-name-other-object"],
)
def test_colons_in_strings_and_names_in_other_objects_are_not_repeats(body: bytes) -> None:
    assert decode_request(body).method == "ping"


def _render(tree: Any) -> str:
    """JSON text for ``tree``, where an object is a list of (key, value) pairs, so that
    a key may repeat (json.dumps of a dict cannot write one twice)."""
    if isinstance(tree, tuple):
        pairs = (f"{json.dumps(k, ensure_ascii=False)}:{_render(v)}" for k, v in tree)
        return "{" + ",".join(pairs) + "}"
    if isinstance(tree, list):
        return "[" + ",".join(_render(v) for v in tree) + "]"
    return json.dumps(tree, ensure_ascii=False)


def _has_repeat(tree: Any) -> bool:
    if isinstance(tree, tuple):
        keys = [k for k, _ in tree]
        return len(set(keys)) < len(keys) or any(_has_repeat(v) for _, v in tree)
    if isinstance(tree, list):
        return any(_has_repeat(v) for v in tree)
    return False


def _pair_trees(keys: str, texts: str) -> st.SearchStrategy[Any]:
    """Trees whose objects are (key, value) pairs with keys and texts from these
    alphabets (tiny, so that keys repeat often)."""
    return st.recursive(
        st.none() | st.integers() | st.text(texts, max_size=4),
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.lists(st.tuples(st.text(keys, max_size=3), inner), max_size=4).map(tuple)
        ),
        max_leaves=40,
    )


# Keys and texts full of colons, quotes and backslashes.
pair_trees = _pair_trees(':"\\a', ':"\\{}a')
# Without a backslash anywhere (the check then compares raw colon counts): colons,
# brackets and non-ASCII text, never an escape.
plain_trees = _pair_trees(":aé", ":{}[aé")


@settings(max_examples=examples(1000), deadline=None)
@given(pair_trees)
def test_repeat_check_agrees_with_the_written_keys(tree: Any) -> None:
    body = _render(tree).encode()
    assert _repeats_a_key(body, json.loads(body)) == _has_repeat(tree)


@settings(max_examples=examples(200), deadline=None)
@given(plain_trees)
def test_repeat_check_without_escapes_agrees_with_the_written_keys(tree: Any) -> None:
    body = _render(tree).encode()
    assert b"\\" not in body
    assert _repeats_a_key(body, json.loads(body)) == _has_repeat(tree)
