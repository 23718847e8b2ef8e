"""The RPC server over real sockets, where it reads and writes the descriptor itself
(``os.read``/``os.write``) and goes through trio only to wait: what that path promises
that trio's stream methods used to give for free."""

from __future__ import annotations

import json
import socket
import struct
import time
from typing import Any

import msgspec
import trio

from tsukud.launch import FrameReader
from tsukud.rpc.registry import NoParams
from tsukud.rpc.server import Call, Connection, Method, RpcServer
from tsukud.secrets import Redactor

HEADER = struct.Struct(">I")


class Echo(msgspec.Struct, forbid_unknown_fields=True):
    text: str = ""


async def ping(ctx: object, p: NoParams, call: Call) -> dict[str, Any]:
    return {"pong": True}


async def echo(ctx: object, p: Echo, call: Call) -> dict[str, Any]:
    await trio.lowlevel.checkpoint()
    return {"text": p.text}


METHODS = {
    "ping": Method("ping", NoParams, ping, inline=True),
    "echo": Method("echo", Echo, echo),
}


def frame(obj: object) -> bytes:
    body = json.dumps(obj).encode()
    return HEADER.pack(len(body)) + body


def serve(server: RpcServer, nursery: trio.Nursery) -> socket.socket:
    """A connection served over a real socket pair; the client's end, blocking."""
    ours, theirs = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(ours))
    nursery.start_soon(server.handle, stream)
    return theirs


async def test_frames_already_read_do_not_hold_the_loop() -> None:
    """Frames that arrived together are read from the connection's buffer without
    waiting on the socket: the reader yields every few frames anyway, so a client that
    keeps its socket full cannot keep the loop (another client's ``status``) waiting."""
    ours, theirs = socket.socketpair()
    frames = 1000
    theirs.sendall(b"".join(frame({"id": i, "method": "ping"}) for i in range(frames)))
    conn = Connection(trio.SocketStream(trio.socket.from_stdlib_socket(ours)), Redactor([]))
    others_ran = 0

    async def other() -> None:
        nonlocal others_ran
        while True:
            await trio.lowlevel.checkpoint()
            others_ran += 1

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            await trio.lowlevel.checkpoint()  # let it start
            ran_before = others_ran
            for i in range(frames):
                assert json.loads(await conn.read_frame())["id"] == i
            yielded = others_ran - ran_before
            nursery.cancel_scope.cancel()
    finally:
        ours.close()
        theirs.close()
    assert yielded >= 10, yielded  # every 32 frames: about 30 times


async def test_answers_of_pipelined_requests_are_whole_frames_in_order_of_finishing() -> None:
    """Many answers written by many tasks, some larger than the socket takes at once,
    arrive as whole frames: a partly written answer finishes before the next starts."""
    server = RpcServer(METHODS, object(), uid=1000, peer=lambda s: None, redactor=Redactor([]))
    big = "x" * 300_000  # more than a socket buffer: written in parts
    async with trio.open_nursery() as nursery:
        client = serve(server, nursery)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        requests = [
            {"id": i, "method": "echo", "params": {"text": big if i % 3 else "s"}}
            for i in range(30)
        ]

        def exchange() -> list[dict[str, Any]]:
            client.settimeout(10)
            client.sendall(b"".join(frame(r) for r in requests))
            frames = FrameReader(client)
            out = []
            for _ in requests:
                time.sleep(0.005)  # a slow reader: the server's writes fill the socket
                out.append(frames.read())
            return out

        try:
            answers = await trio.to_thread.run_sync(exchange)
        finally:
            client.close()
            nursery.cancel_scope.cancel()
    assert sorted(a["id"] for a in answers) == list(range(30))
    for a in answers:
        assert a["result"]["text"] == (big if a["id"] % 3 else "s")
