"""The RPC server over in-memory streams: framing, pipelining, errors, cancellation on
disconnect, the peer check and the connection limit, without sockets or a daemon."""

from __future__ import annotations

import json
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import msgspec
import pytest
import structlog.testing
import trio
import trio.testing

from tsukud.errors import NotFound
from tsukud.policy import spent
from tsukud.rpc.methods import CancelParams, cancel
from tsukud.rpc.protocol import MAX_FRAME
from tsukud.rpc.server import IDLE_TIMEOUT_S, Call, Method, RpcServer
from tsukud.secrets import Redactor

HEADER = struct.Struct(">I")
SECRET = "sk-test-0123456789abcdef0123456789"


class Echo(msgspec.Struct, forbid_unknown_fields=True):
    text: str = ""


class Wait(msgspec.Struct, forbid_unknown_fields=True):
    name: str


class World:
    """The handlers' context: what they saw and what they are waiting for."""

    def __init__(self) -> None:
        self.gates: dict[str, trio.Event] = {}
        self.cancelled: list[str] = []
        self.started: list[str] = []
        self.settled: list[float] = []  # every settlement a handler made, in order

    def gate(self, name: str) -> trio.Event:
        return self.gates.setdefault(name, trio.Event())


async def echo(w: World, p: Echo, call: Call) -> dict[str, Any]:
    await call.progress({"stage": "echoing"})
    return {"text": p.text}


async def wait(w: World, p: Wait, call: Call) -> dict[str, Any]:
    w.started.append(p.name)
    try:
        await w.gate(p.name).wait()
    except trio.Cancelled:
        w.cancelled.append(p.name)
        raise
    return {"name": p.name}


async def costly(w: World, p: Wait, call: Call) -> dict[str, Any]:
    """A run that settles what it spent on the way out, as an LLM run does."""

    async def settle(usd: float) -> None:
        await trio.lowlevel.checkpoint()
        spent.record(usd)
        w.settled.append(usd)

    async with trio.open_nursery() as nursery:  # a task of the request's own counts too
        nursery.start_soon(settle, 0.125)
    w.gate(f"{p.name}:settled").set()
    try:
        await w.gate(p.name).wait()
    finally:
        with trio.CancelScope(shield=True):
            await settle(0.0625)
    return {"name": p.name}


async def boom(w: World, p: Echo, call: Call) -> dict[str, Any]:
    raise RuntimeError(f"unexpected: {SECRET}")


async def missing(w: World, p: Echo, call: Call) -> dict[str, Any]:
    raise NotFound(f"no such thing {p.text!r}", hint="look elsewhere")


METHODS = {
    "echo": Method("echo", Echo, echo, inline=True),
    "wait": Method("wait", Wait, wait),
    "boom": Method("boom", Echo, boom),
    "costly": Method("costly", Wait, costly),
    "cancel": Method("cancel", CancelParams, cancel, inline=True),
    "missing": Method("missing", Echo, missing),
}


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return HEADER.pack(len(body)) + body


class Peer:
    """The client end of one connection."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.buf = b""

    async def send(self, rid: int | str, method: str, **params: Any) -> None:
        await self.stream.send_all(frame({"id": rid, "method": method, "params": params}))

    async def _exact(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    async def read(self) -> dict[str, Any]:
        with trio.fail_after(5):
            head = await self._exact(4)
            assert head is not None, "the server closed the connection"
            body = await self._exact(HEADER.unpack(head)[0])
            assert body is not None
        out: dict[str, Any] = json.loads(body)
        return out

    async def final(self, rid: int | str) -> dict[str, Any]:
        """The answer to ``rid``, skipping its progress frames."""
        while True:
            f = await self.read()
            if f["id"] == rid and "progress" not in f:
                return f

    async def closed_by_server(self) -> bool:
        with trio.fail_after(5):
            return await self._exact(1) is None


@asynccontextmanager
async def serving(
    *,
    peer: Callable[[trio.abc.Stream], int | None] = lambda _s: None,
    max_connections: int = 8,
    uid: int = 1000,
    idle_timeout_s: float = IDLE_TIMEOUT_S,
) -> AsyncIterator[tuple[RpcServer, World, Callable[[], Any]]]:
    world = World()
    server = RpcServer(
        METHODS,
        world,
        uid=uid,
        redactor=Redactor([SECRET]),
        peer=peer,
        max_connections=max_connections,
        idle_timeout_s=idle_timeout_s,
    )
    async with trio.open_nursery() as nursery:

        async def connect() -> Peer:
            client, daemon_end = trio.testing.memory_stream_pair()
            nursery.start_soon(server.handle, daemon_end)
            await trio.testing.wait_all_tasks_blocked()
            return Peer(client)

        yield server, world, connect
        nursery.cancel_scope.cancel()


async def test_a_frame_split_into_single_bytes_is_one_request() -> None:
    async with serving() as (_server, _world, connect):
        c = await connect()
        for byte in frame({"id": 1, "method": "echo", "params": {"text": "hé"}}):
            await c.stream.send_all(bytes([byte]))
        assert await c.read() == {"id": 1, "progress": {"stage": "echoing"}}
        assert await c.read() == {"id": 1, "result": {"text": "hé"}}


async def test_two_frames_in_one_write_get_two_answers() -> None:
    async with serving() as (_server, _world, connect):
        c = await connect()
        req = {"method": "echo", "params": {"text": "x"}}
        await c.stream.send_all(frame({"id": "a", **req}) + frame({"id": "b", **req}))
        assert (await c.final("a"))["result"] == {"text": "x"}
        assert (await c.final("b"))["result"] == {"text": "x"}


async def test_pipelined_requests_are_answered_as_they_finish() -> None:
    async with serving() as (_server, world, connect):
        c = await connect()
        await c.send(1, "wait", name="slow")
        await c.send(2, "wait", name="fast")
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(world.started) == ["fast", "slow"]  # both run at once
        world.gate("fast").set()
        assert await c.read() == {"id": 2, "result": {"name": "fast"}}
        world.gate("slow").set()
        assert await c.read() == {"id": 1, "result": {"name": "slow"}}


async def test_protocol_errors_answer_and_keep_the_connection() -> None:
    async with serving() as (_server, _world, connect):
        c = await connect()
        await c.stream.send_all(HEADER.pack(5) + b"{nope")
        bad_json = await c.read()
        assert bad_json["id"] is None and bad_json["error"]["code"] == "bad_request"

        await c.send(7, "no.such.method")
        unknown = await c.read()
        assert unknown["id"] == 7 and unknown["error"]["code"] == "unknown_method"

        await c.send(8, "echo", text=3)
        invalid = await c.read()
        assert invalid["id"] == 8 and invalid["error"]["code"] == "invalid_params"
        assert "$.params.text" in invalid["error"]["message"]

        await c.send(9, "missing", text="x")
        typed = await c.read()
        assert typed["error"]["code"] == "not_found"
        assert typed["error"]["hint"] == "look elsewhere"

        await c.send(10, "echo", text="still here")
        assert (await c.final(10))["result"] == {"text": "still here"}


async def test_an_oversize_length_is_answered_then_the_connection_closed() -> None:
    async with serving() as (_server, _world, connect):
        c = await connect()
        await c.stream.send_all(HEADER.pack(MAX_FRAME + 1))
        err = await c.read()
        assert err["error"]["code"] == "frame_too_large"
        assert await c.closed_by_server()


async def test_an_unexpected_exception_is_one_internal_frame_and_serving_goes_on() -> None:
    async with serving() as (_server, _world, connect):
        c = await connect()
        await c.send(1, "boom")
        err = await c.read()
        assert err["id"] == 1
        assert err["error"]["code"] == "internal"
        assert err["error"]["message"] == "internal error in boom (request 1)"
        assert SECRET not in json.dumps(err)  # the exception text never reaches the client
        # The same connection, and a new one, are served as before.
        await c.send(2, "echo", text="after")
        assert (await c.final(2))["result"] == {"text": "after"}
        other = await connect()
        await other.send(3, "echo", text="other")
        assert (await other.final(3))["result"] == {"text": "other"}


async def test_a_client_that_goes_away_cancels_what_it_asked_for() -> None:
    async with serving() as (server, world, connect):
        c = await connect()
        await c.send(1, "wait", name="a")
        await c.send(2, "wait", name="b")
        await trio.testing.wait_all_tasks_blocked()
        assert server.connections == 1
        await c.stream.aclose()
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(world.cancelled) == ["a", "b"]
        assert server.connections == 0


async def test_a_cancelled_request_says_what_its_runs_spent() -> None:
    async with serving() as (_server, world, connect):
        c = await connect()
        await c.send(1, "costly", name="run")
        await c.send(2, "wait", name="other")
        await c.send(3, "cancel", id=1)  # right behind it: the request is already tracked
        assert await c.final(3) == {"id": 3, "result": {"cancelled": True}}
        error = (await c.final(1))["error"]
        assert error["code"] == "cancelled" and error["exit_code"] == 130
        # Trio's scheduler decides where the cancel lands: before the handler ran, inside
        # its first settlement, or after it (then the shielded settlement on the way out
        # runs too). Wherever it lands, the error names exactly what was settled: nothing
        # missed, nothing invented.
        assert error["data"]["spent_usd"] == sum(world.settled)
        assert sum(world.settled) in (0.0, 0.125, 0.1875)
        await c.send(4, "cancel", id=1)  # already over
        assert await c.final(4) == {"id": 4, "result": {"cancelled": False}}
        world.gate("other").set()  # the other request on the connection went on
        assert await c.final(2) == {"id": 2, "result": {"name": "other"}}


async def test_a_cancelled_request_counts_every_settlement_of_its_runs() -> None:
    async with serving() as (_server, world, connect):
        c = await connect()
        await c.send(1, "costly", name="run")
        await world.gate("run:settled").wait()
        await c.send(2, "cancel", id=1)
        assert await c.final(2) == {"id": 2, "result": {"cancelled": True}}
        error = (await c.final(1))["error"]
        assert error["data"] == {"spent_usd": 0.1875}


async def test_a_peer_of_another_uid_is_refused() -> None:
    seen: list[trio.abc.Stream] = []

    def other_user(stream: trio.abc.Stream) -> int:
        seen.append(stream)
        return 4242

    async with serving(peer=other_user, uid=1000) as (server, world, connect):
        c = await connect()
        err = await c.read()
        assert err == {
            "id": None,
            "error": {
                **err["error"],
                "code": "forbidden",
                "message": "uid 4242 may not use this daemon",
            },
        }
        assert len(seen) == 1
        assert await c.closed_by_server()
        assert server.connections == 0 and world.started == []


async def test_the_own_uid_and_an_unknown_peer_are_served() -> None:
    for uid in (1000, None):
        async with serving(peer=lambda _s, uid=uid: uid, uid=1000) as (_srv, _w, connect):
            c = await connect()
            await c.send(1, "echo", text="ok")
            assert (await c.final(1))["result"] == {"text": "ok"}


async def test_past_the_connection_limit_a_client_is_told_and_closed() -> None:
    async with serving(max_connections=2) as (server, world, connect):
        first, second = await connect(), await connect()
        await first.send(1, "wait", name="hold")
        await trio.testing.wait_all_tasks_blocked()
        assert server.connections == 2

        third = await connect()
        err = await third.read()
        assert err["id"] is None
        assert err["error"]["code"] == "busy"
        assert err["error"]["message"] == "tsukud already serves 2 connections"
        assert err["error"]["retryable"] is True and err["error"]["exit_code"] == 30
        assert await third.closed_by_server()
        assert server.connections == 2

        # Once one leaves, a new client is served again.
        await second.stream.aclose()
        await trio.testing.wait_all_tasks_blocked()
        fourth = await connect()
        await fourth.send(2, "echo", text="room")
        assert (await fourth.final(2))["result"] == {"text": "room"}
        world.gate("hold").set()
        assert (await first.final(1))["result"] == {"name": "hold"}


async def test_idle_clients_are_closed_so_they_cannot_hold_every_slot() -> None:
    async with serving(max_connections=2, idle_timeout_s=0.3) as (server, world, connect):
        idle, busy = await connect(), await connect()
        await idle.send(1, "echo", text="once")
        assert (await idle.final(1))["result"] == {"text": "once"}
        await busy.send(2, "wait", name="long")  # a long request is not idleness
        await trio.sleep(0.9)
        assert await idle.closed_by_server()
        assert server.connections == 1
        newcomer = await connect()  # the idle one's slot is free again
        await newcomer.send(3, "echo", text="room")
        assert (await newcomer.final(3))["result"] == {"text": "room"}
        world.gate("long").set()
        assert (await busy.final(2))["result"] == {"name": "long"}
        assert world.cancelled == []


@pytest.mark.parametrize("stopping", [True, False])
async def test_a_stop_answers_in_flight_requests_with_shutting_down(stopping: bool) -> None:
    async with serving() as (server, _world, connect):
        c = await connect()
        await c.send(1, "wait", name="x")
        await trio.testing.wait_all_tasks_blocked()
        server.stopping = stopping
    # serving() cancelled the handlers: only a stopping server says why.
    if stopping:
        err = await c.read()
        assert err["id"] == 1 and err["error"]["code"] == "shutting_down"
    else:
        assert await c.closed_by_server()


async def test_a_bug_on_a_connections_own_path_ends_that_connection_only() -> None:
    calls = 0

    def flaky_peer(_stream: trio.abc.Stream) -> int | None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError(f"peer lookup failed {SECRET}")
        return None

    async with serving(peer=flaky_peer) as (server, _world, connect):
        broken = await connect()
        err = await broken.read()
        assert err["id"] is None and err["error"]["code"] == "internal"
        assert SECRET not in json.dumps(err)
        assert await broken.closed_by_server()
        assert server.connections == 0
        fine = await connect()
        await fine.send(1, "echo", text="served")
        assert (await fine.final(1))["result"] == {"text": "served"}


@pytest.mark.parametrize(
    "body",
    [
        b'{"id":1,"method":"\xff"}',
        b"[" * 100_000,
        b'{"id":2,"method":"echo","params":' + b"[" * 70 + b"]" * 70 + b"}",
    ],
)
async def test_frames_that_used_to_end_the_daemon_are_answered(body: bytes) -> None:
    async with serving() as (_server, _world, connect):
        c = await connect()
        await c.stream.send_all(HEADER.pack(len(body)) + body)
        err = await c.read()
        assert err["error"]["code"] == "bad_request"
        await c.send(3, "echo", text="still here")
        assert (await c.final(3))["result"] == {"text": "still here"}


async def nursery_typed(w: World, p: Echo, call: Call) -> dict[str, Any]:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep_forever)
        raise NotFound(f"inside a nursery: {p.text}", hint="unwrapped")


async def test_a_typed_error_from_a_handlers_nursery_keeps_its_code() -> None:
    methods = {**METHODS, "nursery": Method("nursery", Echo, nursery_typed)}
    server = RpcServer(methods, World(), uid=1000, redactor=Redactor([SECRET]))
    server.peer = lambda _s: None
    async with trio.open_nursery() as nursery:
        client, daemon_end = trio.testing.memory_stream_pair()
        nursery.start_soon(server.handle, daemon_end)
        c = Peer(client)
        await c.send(1, "nursery", text="x")
        err = await c.read()
        assert err["error"]["code"] == "not_found"
        assert err["error"]["message"] == "inside a nursery: x"
        assert err["error"]["hint"] == "unwrapped"
        nursery.cancel_scope.cancel()


async def torn_down_typed(w: World, p: Wait, call: Call) -> dict[str, Any]:
    """A task that fails with a typed error as it is cancelled (as the sandbox's
    connection attempt does when the request is torn down mid-way)."""

    async def connecting() -> None:
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            raise NotFound("cannot reach it", hint="torn down") from None

    async with trio.open_nursery() as nursery:
        nursery.start_soon(connecting)
        w.started.append(p.name)
        await trio.sleep_forever()
    return {}


async def test_a_typed_error_raised_while_the_client_goes_away_is_no_connection_error() -> None:
    # Found by the hostile-frame run over the socket (a client walking away from
    # sandbox.status): the group of the cancellation and the typed error escaped the
    # request's net and was logged as a failure of the connection.
    methods = {**METHODS, "torn": Method("torn", Wait, torn_down_typed)}
    server = RpcServer(methods, World(), uid=1000, redactor=Redactor([SECRET]))
    server.peer = lambda _s: None
    with structlog.testing.capture_logs() as logged:
        async with trio.open_nursery() as nursery:
            client, daemon_end = trio.testing.memory_stream_pair()
            nursery.start_soon(server.handle, daemon_end)
            c = Peer(client)
            await c.send(1, "torn", name="t")
            await trio.testing.wait_all_tasks_blocked()
            assert server.context.started == ["t"]
            await client.aclose()
            await trio.testing.wait_all_tasks_blocked()
            assert server.connections == 0
    events = [e["event"] for e in logged]
    assert "rpc.connection_error" not in events and "rpc.internal_error" not in events, logged
    assert any(e["event"] == "rpc.call" and e["outcome"] == "cancelled" for e in logged), logged
