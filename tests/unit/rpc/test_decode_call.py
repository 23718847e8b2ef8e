"""decode_call: a large frame decoded once is held to exactly the checks of the generic
decode (``decode_request``), refused with the same error, and answered with the same
params, whatever key it repeats at whatever depth."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples
from tests.unit.rpc.test_protocol import _render
from tsukud.rpc import protocol
from tsukud.rpc.methods import AppendParams
from tsukud.rpc.protocol import BadRequest, ParamsReader, decode_call, decode_request


class Plain(msgspec.Struct, forbid_unknown_fields=True):
    """Params without ``omit_defaults``: never counted."""

    name: str = ""


class Ping(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    pass


READERS = {
    "events.append": ParamsReader(AppendParams),
    "plain": ParamsReader(Plain),
    "ping": ParamsReader(Ping),
}


def outcome(call: Any) -> tuple[Any, ...]:
    try:
        req, params = call()
    except BadRequest as bad:
        return ("refused", bad.error.message, bad.request_id)
    if isinstance(params, msgspec.ValidationError):
        return ("invalid", req.id, str(params))
    return ("ok", req.id, req.method, msgspec.to_builtins(params))


def reference(body: bytes) -> tuple[Any, ...]:
    """What the generic decode of the whole frame answers."""

    def call() -> tuple[protocol.Request, Any]:
        req = decode_request(body)
        reader = READERS.get(req.method)
        if reader is None:
            return req, None
        try:
            return req, reader.decoder.decode(req.params)
        except msgspec.ValidationError as e:
            return req, e

    return outcome(call)


def once(body: bytes) -> tuple[Any, ...]:
    return outcome(lambda: decode_call(body, READERS.get))


class Echoes(msgspec.Struct, omit_defaults=True):
    raw: msgspec.Raw = msgspec.Raw(b"{}")  # written back as sent, repeats and all


class Respells(msgspec.Struct, omit_defaults=True):
    at: dt.datetime | None = None  # "+00:00" is written back as "Z"


class Inner(msgspec.Struct, omit_defaults=True):
    raw: msgspec.Raw | None = None


class Holds(msgspec.Struct, omit_defaults=True):
    inner: list[Inner] = []


def test_only_structs_that_omit_defaults_and_plain_values_are_counted() -> None:
    assert READERS["events.append"].countable  # the hot path
    assert not READERS["plain"].countable  # a member at its default is written back
    for params in (Echoes, Respells, Holds):
        assert not ParamsReader(params).countable, params


# ---- a thousand events, as a client's batch sends them --------------------------------


def big_append(payload_of: Any = None, n: int = 1000) -> bytes:
    events = [
        f'{{"type":"client.bench","payload":{(payload_of or _plain)(i)},"session":"bench-1"}}'
        for i in range(n)
    ]
    return b'{"id":7,"method":"events.append","params":{"events":[%s]}}' % ",".join(events).encode()


def _plain(i: int) -> str:
    return json.dumps({"i": i, "note": "benchmark event", "ok": i % 7 != 0, "value": i / 4})


def test_a_large_clean_frame_is_decoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    body = big_append()
    assert len(body) > protocol.DECODE_ONCE_FROM
    generic: list[bytes] = []
    monkeypatch.setattr(protocol, "decode_request", lambda b: generic.append(b) or 1 / 0)
    verdict = once(body)
    assert generic == []  # neither the generic decode nor its checks ran
    monkeypatch.undo()
    assert verdict == reference(body)
    assert verdict[0] == "ok" and len(verdict[3]["events"]) == 1000


@pytest.mark.parametrize(
    ("at", "payload_of"),
    [
        ("a payload", lambda i: '{"i":1,"i":2}' if i == 777 else _plain(i)),
        ("deep in a payload", lambda i: '{"a":{"b":[{"c":1,"c":1}]}}' if i == 5 else _plain(i)),
        # The dropped value's colon comes back in the kept one: the counts still differ.
        ("with a colon", lambda i: '{"k":"x","k":"a:b"}' if i == 999 else _plain(i)),
        # The kept value's colon is escaped in the frame and raw when re-encoded, making
        # up for the dropped key's: a frame with a backslash is never counted.
        ("with an escaped colon", lambda i: '{"k":"x","k":"\\u003a"}' if i == 3 else _plain(i)),
    ],
)
def test_a_key_repeated_in_a_large_frame_is_refused_as_the_generic_decode_refuses_it(
    at: str, payload_of: Any
) -> None:
    body = big_append(payload_of)
    verdict = once(body)
    assert verdict == reference(body), at
    assert verdict[0] == "refused" and "same key twice" in verdict[1]


@pytest.mark.parametrize(
    "change",
    [
        (b'{"id":7,', b'{"id":7,"id":8,'),  # the envelope's own key
        (b'"method":"events.append",', b'"method":"events.append","home":"/h","home":"/h",'),
        (b'{"events":[', b'{"durable":true,"durable":true,"events":['),
        (b'"method":"events.append",', b'"method":"events.append","params":{"events":[]},'),
        (b'"session":"bench-1"}', b'"session":"bench-1","session":null}'),
        (b'{"type":"client.bench"', b'{"type":"client.bench","type":"client.bench"'),
    ],
    ids=["id", "home", "durable", "params", "session-to-default", "type"],
)
def test_a_repeat_in_the_envelope_params_or_an_event_is_refused(
    change: tuple[bytes, bytes],
) -> None:
    """A repeat whose dropped copy leaves a default behind (``session`` to null) or sits
    in the envelope, which holds its params as raw bytes, is counted all the same."""
    old, new = change
    body = big_append().replace(old, new, 1)
    assert body.count(new) == 1
    verdict = once(body)
    assert verdict == reference(body)
    assert verdict[0] == "refused" and "same key twice" in verdict[1]


def test_a_default_sent_explicitly_is_not_a_repeat() -> None:
    """Written, then left out when re-encoded: the counts differ, the generic check
    finds no repeat, and the params are the ones sent."""
    body = big_append().replace(b'{"events":[', b'{"durable":true,"events":[', 1)
    assert once(body) == reference(body)
    assert once(body)[0] == "ok"


# ---- every shape, small frames counted as large ones ----------------------------------

_KEYS = st.sampled_from(["type", "payload", "session", "i", "a:b", "é", "x"])
_TEXT = st.text(":{}[aé", max_size=4)  # no quote: a backslash would take the generic path
_LEAF = st.none() | st.booleans() | st.integers(-5, 5) | _TEXT
_VALUE = st.recursive(
    _LEAF,
    lambda inner: (
        st.lists(inner, max_size=3) | st.lists(st.tuples(_KEYS, inner), max_size=4).map(tuple)
    ),
    max_leaves=12,
)
_PAYLOAD = st.lists(st.tuples(_KEYS, _VALUE), max_size=3).map(tuple)


@st.composite
def _events(draw: st.DrawFn) -> Any:
    """Mostly well-formed events (so the count is what decides), now and then one with
    a member repeated, a value of the wrong type or a member dropped."""
    pairs: list[Any] = [
        ("type", draw(st.sampled_from(["client.a", "client.b"]))),
        ("payload", draw(_PAYLOAD)),
    ]
    if draw(st.booleans()):
        pairs.append(("session", draw(st.none() | st.sampled_from(["s", "a:b"]))))
    roll = draw(st.integers(0, 19))
    if roll < 4:  # a member again, with a value of its own type
        extra = draw(st.sampled_from(["type", "payload", "session"]))
        value = {"type": "client.c", "payload": draw(_PAYLOAD), "session": None}[extra]
        pairs.insert(draw(st.integers(0, len(pairs))), (extra, value))
    elif roll == 4:  # a member again, with any value
        pairs.insert(0, (draw(st.sampled_from(["type", "payload", "session"])), draw(_VALUE)))
    elif roll == 5:
        del pairs[0]
    return tuple(pairs)


_EXTRA = st.sampled_from(
    [("id", 2), ("method", "ping"), ("home", "/h"), ("env", ()), ("env", (("A", "1"),))]
)


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    envelope: list[Any] = [
        ("id", 1),
        ("method", draw(st.sampled_from(["events.append"] * 5 + ["plain", "ping", "nope"]))),
    ]
    params = [("events", draw(st.lists(_events(), max_size=4)))]
    if draw(st.booleans()):
        params.append(("durable", draw(st.booleans())))
    envelope.append(("params", tuple(params)))
    for extra in draw(st.lists(_EXTRA, max_size=1)):
        envelope.insert(draw(st.integers(0, len(envelope))), extra)
    return _render(tuple(envelope)).encode()


@settings(max_examples=examples(1500), deadline=None)
@given(frames())
def test_decoded_once_or_generically_every_frame_gets_the_same_answer(body: bytes) -> None:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(protocol, "DECODE_ONCE_FROM", 0)  # every frame counted
        assert once(body) == reference(body)
