"""The seeded hostile-frame generator and the checker of its answers: the same seed makes
the same frames, every class is drawn, the protocol's refusals are read the way
schema/rpc.md states them (and as the daemon's decoder decides them), and a window of
answers that breaks "exactly one final, never internal, with the fixed code" fails."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests import hostile_random as hr
from tests import hostile_rpc
from tests.integration import hostile_socket as hs
from tsukud.rpc import protocol
from tsukud.rpc.protocol import MAX_DEPTH, MAX_FRAME
from tsukud.rpc.registry import load_methods

METHODS = load_methods()


def test_a_seed_makes_the_same_frames_again() -> None:
    def frames(seed: int) -> list[hr.Sent]:
        gen = hr.Frames(seed, METHODS)
        return [gen.next() for _ in range(300)] + [gen.raw_bytes(), gen.truncated()]  # type: ignore[list-item]

    assert frames(7) == frames(7)
    assert frames(7) != frames(8)


def test_every_class_and_every_method_is_drawn_within_the_cap() -> None:
    gen = hr.Frames(1, METHODS, rare=frozenset({"ping"}))
    kinds: Counter[str | None] = Counter()
    methods: Counter[str] = Counter()
    for _ in range(4000):
        s = gen.next()
        assert len(s.body) <= MAX_FRAME
        kinds[s.must_be] += 1
        if s.must_be is None and isinstance(s.rid, str) and s.rid.startswith(hr.TAG):
            methods[protocol.decode_request(s.body).method] += 1
    assert set(kinds) == {None, "bad_request", "unknown_method"}, kinds
    assert set(methods) >= set(METHODS) - {"ping", *hostile_rpc.ONLY_REFUSED}, set(METHODS) - set(
        methods
    )
    for kind in hr.Frames.CLASSES:
        assert gen.sent(kind).body


REQUEST = b'{"id":1,"method":"m","params":'


@pytest.mark.parametrize(
    ("body", "refused"),
    [
        (b'{"id":1,"method":"ping"}', False),
        (b'{"id":1,"method":"ping","method":"daemon.stop"}', True),
        (b'{"id":1,"method":"ping","metho\\u0064":"daemon.stop"}', True),
        (REQUEST + b'{"a":[{"k":1,"k":1}]}}', True),
        (REQUEST + hostile_rpc.nested(MAX_DEPTH - 1) + b"}", False),  # the request's level too
        (REQUEST + hostile_rpc.nested(MAX_DEPTH) + b"}", True),
        (REQUEST + b'{"a":NaN}}', True),
        (REQUEST + b'{"a":1e999}}', True),
        (REQUEST + b'{"a":"\\ud800"}}', True),
        (REQUEST + b'{"a":"\\ud83d\\ude00"}}', False),
        (REQUEST + b'{"a":"\xff"}}', True),
        (b'[{"id":1,"method":"ping"}]', True),
        (b'{"id":true,"method":"ping"}', True),
        (b'{"id":"' + b"i" * 129 + b'","method":"ping"}', True),
        (b'{"id":1,"method":"ping","extra":1}', True),
        (b'{"id":1,"method":"ping","env":{"A":1}}', True),
        (b'{"id":1,"method":"ping","home":null,"env":{"A":"b"}}', False),
    ],
)
def test_the_protocols_refusals_are_read_as_schema_rpc_states_them(
    body: bytes, refused: bool
) -> None:
    assert hr.read_as_request(body)[0] is refused
    try:
        protocol.decode_request(body)
    except protocol.BadRequest:
        decoded = False
    else:
        decoded = True
    assert decoded is not refused  # the daemon's decoder agrees


def test_the_reading_agrees_with_the_daemons_decoder_on_generated_frames() -> None:
    """The checker's rules and the decoder share no code: over a fixed seed's frames,
    every frame one refuses the other refuses too."""
    gen = hr.Frames(20261129, METHODS)
    for _ in range(3000):
        s = gen.next()
        try:
            protocol.decode_request(s.body)
        except protocol.BadRequest:
            assert s.must_be == "bad_request", s.body[:300]
        else:
            assert s.must_be != "bad_request", s.body[:300]


def _sent(body: bytes) -> hr.Sent:
    refused, rid = hr.read_as_request(body)
    return hr.Sent(body, rid, "bad_request" if refused else None)


def _error(rid: object, code: str) -> dict[str, Any]:
    fields = {"message": "m", "hint": "h", "exit_code": 2, "retryable": False}
    return {"id": rid, "error": {"code": code, **fields}}


TAGGED = _sent(b'{"id":"\\u001fa","method":"ping"}')
REPEATED = _sent(b'{"id":"\\u001fb","method":"ping","method":"status"}')
NOT_JSON = _sent(b"{")


@pytest.mark.parametrize(
    ("sent", "finals"),
    [
        ([TAGGED], [{"id": "\x1fa", "result": {}}, {"id": "\x1fa", "result": {}}]),
        ([TAGGED, NOT_JSON], [{"id": "\x1fa", "result": {}}]),
        ([TAGGED], [_error("\x1fa", "internal")]),
        ([REPEATED], [{"id": "\x1fb", "result": {}}]),  # a key twice, answered as a request
        ([NOT_JSON], [_error(None, "invalid_params")]),
        ([TAGGED], [{"id": "\x1fa", "error": {"code": "x", "message": "no hint"}}]),
    ],
    ids=["twice", "none", "internal", "repeated-key-served", "anonymous-not-bad", "no-hint"],
)
def test_a_window_that_breaks_the_promise_fails_the_check(
    sent: list[hr.Sent], finals: list[dict[str, Any]]
) -> None:
    with pytest.raises(AssertionError):
        hs.account(sent, finals, 0, hs.Tally())


def test_a_window_that_keeps_the_promise_passes_the_check() -> None:
    sent = [TAGGED, REPEATED, NOT_JSON, _sent(b'{"id":0,"method":"ping"}')]
    finals = [
        _error(None, "bad_request"),
        {"id": 0, "result": {}},
        _error(None, "bad_request"),
        {"id": "\x1fa", "result": {}},
    ]
    tally = hs.Tally()
    hs.account(sent, finals, 0, tally)
    assert tally.codes == Counter({"bad_request": 2, "ok": 2})
