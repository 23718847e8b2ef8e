"""A daemon double for the client's tests: a real Unix socket speaking the frame
protocol (schema/rpc.md) from a thread, answering each method with frames the test
scripts. The client under test is the real one; only the daemon's answers are canned.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import socket
import struct
import tempfile
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HEADER = struct.Struct(">I")

# A reply is the frames that answer one request, without their id: any number of
# {"progress": ...}, then one {"result": ...} or {"error": {...}}.
Reply = Callable[[dict[str, Any]], list[dict[str, Any]]]


def result(value: Any) -> Reply:
    return lambda _params: [{"result": value}]


def error(code: str, message: str, exit_code: int, hint: str = "") -> Reply:
    frame = {"code": code, "message": message, "hint": hint, "exit_code": exit_code}
    return lambda _params: [{"error": frame}]


@dataclass
class DaemonDouble:
    path: Path
    replies: dict[str, Reply] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    hang_up_after: set[str] = field(default_factory=set)  # close the connection after these

    def methods(self) -> list[str]:
        return [m for m, _ in self.requests]

    def serve(self, listener: socket.socket) -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:  # closed: the test is over
                return
            threading.Thread(target=self._talk, args=(conn,), daemon=True).start()

    def _talk(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while head := reader.read(HEADER.size):
                (n,) = HEADER.unpack(head)
                request = json.loads(reader.read(n))
                method, params = request["method"], request.get("params", {})
                self.requests.append((method, params))
                reply = self.replies.get(method, error("bad_request", f"no {method}", 21))
                for frame in reply(params):
                    body = json.dumps({"id": request["id"], **frame}).encode()
                    conn.sendall(HEADER.pack(len(body)) + body)
                if method in self.hang_up_after:
                    return


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A TSUKU_HOME and TSUKU_SOCKET of the test's own (short: socket paths are ~108 bytes)."""
    base = Path(tempfile.mkdtemp(prefix="tsuku-ctl-", dir="/tmp"))
    monkeypatch.setenv("TSUKU_HOME", str(base))
    monkeypatch.setenv("TSUKU_SOCKET", str(base / "d.sock"))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def daemon(home: Path) -> Iterator[DaemonDouble]:
    double = DaemonDouble(home / "d.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(double.path))
    listener.listen()
    thread = threading.Thread(target=double.serve, args=(listener,), daemon=True)
    thread.start()
    try:
        yield double
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)
