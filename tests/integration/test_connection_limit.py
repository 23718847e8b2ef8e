"""Past the daemon's connection limit a client is told ``busy`` (retryable, exit 30),
not that it broke the protocol; once a connection closes, clients are served again."""

from __future__ import annotations

import contextlib
import socket
import time

import pytest

from tests.conftest import Tsuku
from tests.hostile_rpc import encode, frame
from tsukud.launch import FrameReader
from tsukud.rpc.server import MAX_CONNECTIONS

pytestmark = pytest.mark.ctl_process  # clients holding connections: real processes


def test_the_client_past_the_limit_gets_busy_and_exit_30(daemon: Tsuku) -> None:
    held: list[socket.socket] = []
    try:
        for _ in range(MAX_CONNECTIONS - 1):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(daemon.socket))
            held.append(s)
        # status itself is the last connection the daemon has room for.
        deadline = time.monotonic() + 30
        while daemon.call("status")["connections"] < MAX_CONNECTIONS:
            assert time.monotonic() < deadline, "the held connections were not all accepted"
            time.sleep(0.05)
        # Take the room status leaves once its handler has let go of it: a ping
        # answered (not refused as busy) proves this connection holds the last slot.
        while True:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(str(daemon.socket))
            # Refused as busy before the ping is read, the socket may be closed under the
            # send: the refusal waits to be read all the same.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                s.sendall(frame(encode({"id": 1, "method": "ping"})))
            reply = FrameReader(s).read()
            if "result" in reply:
                held.append(s)
                break
            assert reply["error"]["code"] == "busy"
            s.close()
            assert time.monotonic() < deadline

        cp = daemon.ctl("status")
        assert cp.returncode == 30, (cp.stdout, cp.stderr)
        assert f"tsukud already serves {MAX_CONNECTIONS} connections" in cp.stderr
        assert "try again in a moment" in cp.stderr
        assert "Traceback" not in cp.stderr

        held.pop().close()
        deadline = time.monotonic() + 30
        while (cp := daemon.ctl("status")).returncode != 0:
            assert time.monotonic() < deadline, cp.stderr
            time.sleep(0.05)
    finally:
        for s in held:
            s.close()
