"""Hostile bytes on the socket: the daemon answers or hangs up, and never goes down."""

from __future__ import annotations

import json
import shutil
import socket
import struct
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import hostile_rpc as hostile
from tests.conftest import Tsuku, base_env, short_home
from tests.hypothesis_profiles import examples
from tsukud.rpc.protocol import MAX_FRAME
from tsukud.rpc.registry import load_methods

LIVE_METHODS = load_methods()  # every registered method
# daemon.stop and config.set have side effects outside the connection under test.
METHODS = [
    "ping",
    "status",
    "events.list",
    "events.summary",
    "events.verify",
    "events.append",
    "budget.reserve",
    "budget.settle",
    "config.get",
    "config.list",
]
FUZZ = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.fixture(scope="module")
def live() -> Iterator[Tsuku]:
    home = short_home()
    env = base_env(home)
    # No container runtime: hostile sandbox calls are refused instead of run.
    env["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    t = Tsuku(home, env)
    t.start()
    try:
        yield t
    finally:
        t.stop_all()
        shutil.rmtree(home, ignore_errors=True)


def raw(
    t: Tsuku, data: bytes, *, half_close: bool = True, timeout: float = 5, finals: int = 0
) -> list[dict[str, Any]]:
    """Send bytes, read frames until the daemon hangs up, goes quiet, or sent ``finals``
    final (result/error) frames.

    Closing our write side is an EOF to the daemon, which cancels what we asked for
    (schema/rpc.md), so requests that expect answers keep it open.
    """
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(str(t.socket))
    frames: list[dict[str, Any]] = []
    try:
        s.sendall(data)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        buf = b""
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            buf += chunk
            while len(buf) >= 4:
                (n,) = struct.unpack(">I", buf[:4])
                if len(buf) < 4 + n:
                    break
                frames.append(json.loads(buf[4 : 4 + n]))
                buf = buf[4 + n :]
            if finals and sum("result" in f or "error" in f for f in frames) >= finals:
                break
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        s.close()
    return frames


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode() if not isinstance(obj, bytes) else obj
    return struct.pack(">I", len(body)) + body


def alive(t: Tsuku) -> None:
    assert t.call("ping")["pong"] is True


def no_internal_errors(frames: list[dict[str, Any]]) -> None:
    for f in frames:
        if "error" in f:
            err = f["error"]
            assert set(err) >= {"code", "message", "hint"}
            assert err["code"] != "internal", err


@FUZZ
@given(st.binary(max_size=4096))
def test_random_bytes(live: Tsuku, data: bytes) -> None:
    no_internal_errors(raw(live, data))
    alive(live)


@FUZZ
@given(st.integers(min_value=1, max_value=4096), st.data())
def test_truncated_frames(live: Tsuku, n: int, data: st.DataObject) -> None:
    cut = data.draw(st.integers(min_value=0, max_value=n - 1))
    frames = raw(live, struct.pack(">I", n) + b"{" * cut)
    assert frames == []  # nothing to answer: the body never arrived
    alive(live)


@FUZZ
@given(st.integers(min_value=MAX_FRAME + 1, max_value=2**32 - 1))
def test_oversize_length_prefix(live: Tsuku, n: int) -> None:
    frames = raw(live, struct.pack(">I", n) + b"x" * 16, half_close=False, finals=1)
    assert [f["error"]["code"] for f in frames] == ["frame_too_large"]
    alive(live)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@FUZZ
@given(json_values)
def test_wrong_json_types(live: Tsuku, value: Any) -> None:
    frames = raw(live, frame(value), half_close=False, finals=1)
    assert len(frames) == 1 and "error" in frames[0]
    no_internal_errors(frames)
    alive(live)


@FUZZ
@given(
    st.one_of(st.integers(min_value=-(2**53), max_value=2**53), st.text(max_size=40)),
    st.sampled_from(METHODS),
    st.dictionaries(
        st.sampled_from(
            [
                "filter",
                "limit",
                "by",
                "events",
                "amount_usd",
                "key",
                "reservation",
                "durable",
                "actual_usd",
                "confirmed",
                "x",
            ]
        ),
        json_values,
        max_size=4,
    ),
)
def test_real_methods_with_random_params(
    live: Tsuku, rid: Any, method: str, params: dict[str, Any]
) -> None:
    frames = raw(
        live, frame({"id": rid, "method": method, "params": params}), half_close=False, finals=1
    )
    final = [f for f in frames if "result" in f or "error" in f]
    assert len(final) == 1
    no_internal_errors(frames)
    if len(str(rid)) <= 128 or isinstance(rid, int):
        assert final[0]["id"] == rid
    alive(live)


@FUZZ
@given(st.text(min_size=1, max_size=300))
def test_unknown_methods(live: Tsuku, name: str) -> None:
    # Hypothesis also draws string constants from loaded modules: real method names too.
    if name in LIVE_METHODS:
        return
    frames = raw(live, frame({"id": 7, "method": name}), half_close=False, finals=1)
    assert [(f["id"], f["error"]["code"]) for f in frames] == [(7, "unknown_method")]
    alive(live)


def test_many_requests_pipelined_on_one_connection(live: Tsuku) -> None:
    data = b"".join(frame({"id": i, "method": "ping"}) for i in range(500))
    frames = raw(live, data, half_close=False, finals=500)
    assert sorted(f["id"] for f in frames) == list(range(500))


def test_bad_frame_then_good_frame_on_same_connection(live: Tsuku) -> None:
    data = frame(b"not json") + frame({"id": "x", "method": "ping"})
    frames = raw(live, data, half_close=False, finals=2)
    assert frames[0]["error"]["code"] == "bad_request" and frames[0]["id"] is None
    assert frames[1]["id"] == "x" and frames[1]["result"]["pong"] is True


def test_invalid_params_name_the_field(live: Tsuku) -> None:
    req = {"id": 1, "method": "events.list", "params": {"limit": "ten"}}
    frames = raw(live, frame(req), half_close=False, finals=1)
    err = frames[0]["error"]
    assert err["code"] == "invalid_params" and "$.params.limit" in err["message"]


# ---- issue 17: frames that used to end the daemon, and hostile params for every method --


def exchange(t: Tsuku, body: bytes) -> list[dict[str, Any]]:
    """One frame on a new connection; frames until its final one (questions refused)."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(30)
    s.connect(str(t.socket))
    talk = hostile.Conversation()
    try:
        s.sendall(hostile.frame(body))
        while not talk.done and (chunk := s.recv(65536)):
            if reply := talk.feed(chunk):
                s.sendall(reply)
    finally:
        s.close()
    return talk.frames


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":1,"method":"\xff"}',
        b'{"id":1,"method":"events.list","params":{"filter":{"session":"\xed\xa0\x80"}}}',
        rb'{"id":1,"method":"\ud800"}',
        b"[" * 100_000,
        b'{"id":1,"method":"config.get","params":{"key":' + b"[" * 100_000 + b"}}",
    ],
    ids=["invalid-utf8", "utf8-surrogate", "escaped-surrogate", "deep", "deep-params"],
)
def test_issue_17_frames_get_bad_request_and_the_daemon_stays(live: Tsuku, body: bytes) -> None:
    pid = live.daemon_pid()
    frames = exchange(live, body)
    assert [f["error"]["code"] for f in frames] == ["bad_request"]
    assert live.daemon_pid() == pid


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":1,"method":"ping","method":"daemon.stop"}',
        b'{"id":1,"method":"ping","metho\\u0064":"daemon.stop"}',
        b'{"id":1,"method":"config.set","params":{"key":"llm.daily_budget",'
        b'"value":"1","value":"1000"}}',
    ],
    ids=["method", "escaped-method", "params"],
)
def test_issue_31_a_key_named_twice_is_a_bad_request_and_the_daemon_stays(
    live: Tsuku, body: bytes
) -> None:
    # A reader of the first key sees a ping; msgspec, like most parsers, keeps the last.
    pid = live.daemon_pid()
    frames = exchange(live, body)
    assert [f["error"]["code"] for f in frames] == ["bad_request"]
    assert "same key twice" in frames[0]["error"]["message"]
    assert live.daemon_pid() == pid
    assert live.call("ping") is not None
    budget = live.call("config.get", {"key": "llm.daily_budget"})
    assert budget["source"] == "default" and budget["value"] not in ("1", "1000", 1, 1000)


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": 2**63}, "limit 9223372036854775808 is out of range"),
        ({"limit": 10**40}, "is out of range"),
        ({"filter": {"types": [f"t{i}" for i in range(20_000)]}}, "20000 type filters"),
    ],
)
def test_issue_17_events_list_limits_are_invalid_params(
    live: Tsuku, params: dict[str, Any], field: str
) -> None:
    frames = exchange(live, hostile.encode({"id": 9, "method": "events.list", "params": params}))
    (final,) = [f for f in frames if hostile.is_final(f)]
    assert final["id"] == 9 and final["error"]["code"] == "invalid_params"
    assert field in final["error"]["message"] and final["error"]["hint"]


def test_events_with_large_payloads_are_listed_in_frames_within_the_cap(live: Tsuku) -> None:
    # Found by the 100,000-case run (in process then): 500 events of a few KB each made
    # one progress frame over 1 MiB, and events.list answered internal from then on.
    big = "x" * 400_000
    for i in range(4):
        live.call(
            "events.append", {"events": [{"type": "client.big", "payload": {"v": big, "i": i}}]}
        )
    frames = exchange(
        live,
        hostile.encode(
            {
                "id": 1,
                "method": "events.list",
                "params": {"filter": {"types": ["client.big"]}, "limit": 0},
            }
        ),
    )
    listed = [e["payload"]["i"] for f in frames if "progress" in f for e in f["progress"]["events"]]
    assert listed == [0, 1, 2, 3]
    assert frames[-1] == {"id": 1, "result": {"count": 4}}

    # One event too large to list at all (it filled its own request frame) is a typed error.
    huge = "y" * (MAX_FRAME - 200)
    live.call("events.append", {"events": [{"type": "client.huge", "payload": {"v": huge}}]})
    frames = exchange(
        live,
        hostile.encode(
            {"id": 2, "method": "events.list", "params": {"filter": {"types": ["client.huge"]}}}
        ),
    )
    (final,) = [f for f in frames if hostile.is_final(f)]
    assert final["error"]["code"] == "frame_too_large"
    assert (
        final["error"]["hint"] == "The answer is too large for one frame; ask for less at a time."
    )


# The daemon under test must survive to be asked: daemon.stop and config.set only refused.
# The slow set's 100,000 frames over the socket are tests/integration/test_rpc_hostile_socket.py.
LIVE_REFUSED = hostile.ONLY_REFUSED | {"config.set"}


def hostile_bodies(refused: frozenset[str]) -> st.SearchStrategy[bytes]:
    requests = hostile.requests(LIVE_METHODS, refused)
    return hostile.non_requests | requests | requests


def answered(live: Tsuku, body: bytes) -> None:
    if hostile.sendable(body):
        hostile.check_answer(body, exchange(live, body))


# Among the slowest tests (issue 26): hostile frames over the real socket to a real tsukud,
# each on its own connection (examples() counts).
@FUZZ
@given(hostile_bodies(LIVE_REFUSED))
def test_hostile_frames_for_every_method(live: Tsuku, body: bytes) -> None:
    answered(live, body)


def test_the_daemon_answers_status_after_all_of_it(live: Tsuku) -> None:
    first = live.procs[0]
    assert first.poll() is None
    status = live.call("status")
    assert status["pid"] == first.pid
    assert live.call("events.verify")["ok"] is True
