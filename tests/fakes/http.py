"""A scriptable HTTP/1.1 server on 127.0.0.1 for talking to real clients in tests.

It runs in a background thread (stdlib ``ThreadingHTTPServer``) so it serves trio
tests, plain sync tests and daemons started as subprocesses alike. Each test queues
the replies it wants (status, headers, JSON body, delay, or a dropped connection) and
afterwards inspects ``requests``, the requests exactly as received.

    with FakeHTTPServer() as server:
        server.push(Reply(json={"ok": True}))
        ... point the client at server.url ...
        assert server.requests[0].json()["model"] == "x"
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    """One scripted answer. ``json`` wins over ``body``. ``delay`` (seconds) is waited
    before answering; ``disconnect`` closes the connection without any answer."""

    status: int = 200
    json: Any = None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    disconnect: bool = False

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.json is not None:
            headers.setdefault("content-type", "application/json")
            return json.dumps(self.json).encode(), headers
        return self.body, headers


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Responder = Reply | Callable[[RecordedRequest], Reply]


class FakeHTTPServer:
    """Replies are consumed in order; with the queue empty it answers ``fallback``
    (default: a 599 whose body says the script ran out, so a test that under-scripts
    fails loudly instead of hanging)."""

    def __init__(self, fallback: Responder | None = None) -> None:
        self._queue: deque[Responder] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.fallback = fallback
        self.requests: list[RecordedRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread: threading.Thread | None = None

    # ---------------------------------------------------------------- lifecycle
    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping on a delay
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---------------------------------------------------------------- scripting
    def push(self, *replies: Responder) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def last_json(self) -> Any:
        return self.requests[-1].json()

    def _next(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            responder = self._queue.popleft() if self._queue else self.fallback
        if responder is None:
            return Reply(599, json={"error": f"fake server: no reply scripted for {request.path}"})
        return responder(request) if callable(responder) else responder

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Without this, keep-alive requests stall ~40 ms on delayed ACKs.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                request = RecordedRequest(
                    method=self.command,
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                reply = fake._next(request)
                if reply.delay and fake._closing.wait(reply.delay):
                    self.close_connection = True
                    return
                if reply.disconnect:
                    self.close_connection = True
                    return
                payload, headers = reply.encoded()
                try:
                    self.send_response(reply.status)
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout, cancel)

            do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        return Handler
