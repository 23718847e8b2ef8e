"""The fake HTTP server base, now in the package (``tsukud.testing.http``) because the
fake GitHub the offline demo serves is built on it. Re-exported for the tests, with
:func:`breaking_server` for downloads that break mid-body."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator

from tsukud.testing.http import (
    FakeHTTPServer,
    RecordedRequest,
    Reply,
    Responder,
    Violation,
    take_violations,
)

__all__ = [
    "FakeHTTPServer",
    "RecordedRequest",
    "Reply",
    "Responder",
    "Violation",
    "breaking_server",
    "take_violations",
]


@contextlib.contextmanager
def breaking_server(
    body: bytes, *, declared: int, reset: bool = False, path: str = "/tool-1.0.tar.gz"
) -> Iterator[str]:
    """An HTTP server on loopback that, on every connection, promises ``declared``
    bytes, sends ``body`` and then closes the connection (``reset``: with a TCP reset):
    a download that breaks in the middle of the body, each time it is tried (a retry
    meets the same break at once, not a server that stopped answering). Yields the URL
    to fetch."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    port = listener.getsockname()[1]
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed
            with conn:
                conn.settimeout(5)
                request = b""
                try:
                    while b"\r\n\r\n" not in request:
                        chunk = conn.recv(4096)
                        if not chunk:
                            break
                        request += chunk
                    conn.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % declared + body)
                except OSError:
                    continue
                if reset:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}{path}"
    finally:
        done.set()
        thread.join(timeout=5)
        listener.close()
