"""One fake HTTP/1.1 server on 127.0.0.1, the base of every fake service.

It runs in a background thread (stdlib ``ThreadingHTTPServer``, port 0) so it serves
trio tests, plain sync tests and daemons started as subprocesses alike. It records
every request exactly as received (method, path with query, lower-cased headers,
body) and answers from, in order: a queue of scripted :class:`Reply` objects
(:meth:`FakeHTTPServer.push`), then ``fallback`` (a reply, or a function of the
request: the routing of a fake service). With neither it answers 599 "no reply
scripted", so an under-scripted test fails loudly instead of hanging.

A :class:`Reply` can also inject the failures real networks produce: ``delay``
before answering, ``disconnect`` without an answer, a body trickled at ``rate``
bytes per second, one that stalls after ``stall_after`` bytes until the server
closes, or one cut off after ``cut_after`` bytes (the connection closes early).
``file`` serves a body from disk (sendfile) without reading it into memory.

    with FakeHTTPServer() as server:
        server.push(Reply(json={"ok": True}))
        ... point the client at server.url ...
        assert server.requests[0].json()["model"] == "x"

**Rejecting loudly.** A fake must answer a request the real service would refuse
(bad credentials, a token sent to the wrong host, a missing ``User-Agent``...) the way
the real service does, so the product's error path runs; and the test must not pass
by accident because the product copes with the refusal. The hook for fakes is::

    reply = server.reject(request, "why the real service refuses this", Reply(401, ...))

which records a :class:`Violation` in ``server.violations`` and returns ``reply`` for
the fake to send. A fake checks requests in its ``fallback`` (routing) or, to check
scripted replies too, by overriding :meth:`FakeHTTPServer.handle` and calling
``super().handle(request)`` once the request passes.

Violations are collected, per test, by :func:`take_violations` (the tests' autouse
fixture fails the test at teardown if any were recorded) and by leaving a ``with``
block (an ``AssertionError`` unless the block already failed). A test that provokes a
refusal on purpose claims it with ``server.take_violations()`` and asserts on it.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol, Self
from urllib.parse import parse_qs, urlsplit

_CHUNK = 16 * 1024


@dataclass
class Reply:
    """One answer. ``json`` wins over ``body``, ``file`` over both."""

    status: int = 200
    json: Any = None
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds waited before answering
    disconnect: bool = False  # close the connection without any answer
    file: Path | None = None  # body read from this file
    rate: float | None = None  # body trickled at this many bytes per second
    stall_after: int | None = None  # body bytes sent before hanging until close
    cut_after: int | None = None  # body bytes sent before closing (content-length says all)

    def encoded(self) -> tuple[bytes, dict[str, str]]:
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.json is not None:
            headers.setdefault("content-type", "application/json")
            return json.dumps(self.json).encode(), headers
        return self.body, headers


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str  # as sent: path and query
    headers: dict[str, str]  # lower-cased names
    body: bytes = b""
    role: str = ""  # which fake received it (several fakes can share one journal)

    @property
    def route(self) -> str:
        """The path without the query."""
        return urlsplit(self.path).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.path).query)

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass(frozen=True)
class Violation:
    """A request the real service would have refused."""

    request: RecordedRequest
    reason: str

    def __str__(self) -> str:
        r = self.request
        return f"{r.role or 'fake'}: {r.method} {r.route}: {self.reason}"


Responder = Reply | Callable[[RecordedRequest], Reply]

_live: weakref.WeakSet[FakeHTTPServer] = weakref.WeakSet()
_live_lock = threading.Lock()


def take_violations() -> list[Violation]:
    """Every violation recorded by any running fake since the last call (and forget
    them): what a test fixture checks at teardown."""
    with _live_lock:
        servers = list(_live)
    return [v for s in servers for v in s.take_violations()]


class FakeHTTPServer:
    def __init__(
        self,
        fallback: Responder | None = None,
        *,
        role: str = "",
        journal: list[RecordedRequest] | None = None,
    ) -> None:
        self._queue: deque[Responder] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        # Delayed answers wait on this; ``hurry()`` ends the waits begun before it.
        self._hurry = threading.Condition()
        self._hurried = 0
        self.fallback = fallback
        self.role = role
        self.requests: list[RecordedRequest] = [] if journal is None else journal
        self.violations: list[Violation] = []
        # Seconds every answer waits, as a registry across the internet would: a
        # benchmark's I/O-bound world (bench/batch.py), not a failure (``Reply.delay``).
        self.latency = 0.0
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

    @property
    def closing(self) -> threading.Event:
        """Set when the server closes: fakes wait on it instead of sleeping."""
        return self._closing

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
            with _live_lock:
                _live.add(self)
        return self

    def hurry(self) -> None:
        """Send now the answers waiting out a ``delay`` (or the latency). A test that
        made a registry slow to hold a worker busy at one moment lets it go once that
        moment has passed, instead of sleeping out the rest of the delay; answers asked
        for afterwards wait as before."""
        with self._hurry:
            self._hurried += 1
            self._hurry.notify_all()

    def _wait_out(self, seconds: float) -> bool:
        """Wait ``seconds`` before answering, or less after ``hurry()``; True when the
        server is closing instead (the handler drops the connection)."""
        deadline = time.monotonic() + seconds
        with self._hurry:
            began = self._hurried
            while not self._closing.is_set() and self._hurried == began:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._hurry.wait(left)
        return self._closing.is_set()

    def close(self) -> None:
        self._closing.set()  # wakes handlers sleeping on a delay or a stall
        with self._hurry:
            self._hurry.notify_all()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
        self._server.server_close()
        with _live_lock:
            _live.discard(self)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        leave(self, failed=exc_type is not None)

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

    # ---------------------------------------------------------------- strictness
    def reject(self, request: RecordedRequest, reason: str, reply: Reply) -> Reply:
        """Record that the real service would refuse ``request`` and return ``reply``,
        the refusal as the real service words it."""
        with self._lock:
            self.violations.append(Violation(request, reason))
        return reply

    def take_violations(self) -> list[Violation]:
        with self._lock:
            taken, self.violations = self.violations, []
        return taken

    # ---------------------------------------------------------------- answering
    def handle(self, request: RecordedRequest) -> Reply:
        """The answer to ``request`` (already recorded): scripted, else the fallback."""
        with self._lock:
            responder = self._queue.popleft() if self._queue else self.fallback
        if responder is None:
            return Reply(599, json={"error": f"fake server: no reply scripted for {request.path}"})
        return responder(request) if callable(responder) else responder

    def _receive(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
        return self.handle(request)

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
                    role=fake.role,
                )
                reply = fake._receive(request)
                delay = max(reply.delay, fake.latency)
                if delay and fake._wait_out(delay):
                    self.close_connection = True
                    return
                if reply.disconnect:
                    self.close_connection = True
                    return
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client gave up (timeout, cancel)

            def _send(self, reply: Reply) -> None:
                payload, headers = reply.encoded()
                size = reply.file.stat().st_size if reply.file is not None else len(payload)
                self.send_response(reply.status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(size))
                self.end_headers()
                if self.command == "HEAD":
                    return
                if reply.cut_after is not None:
                    whole = reply.file.read_bytes() if reply.file is not None else payload
                    self.wfile.write(whole[: reply.cut_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                shaped = reply.rate is not None or reply.stall_after is not None
                if reply.file is not None and not shaped:
                    self.wfile.flush()
                    with reply.file.open("rb") as f:
                        self.connection.sendfile(f)
                    return
                data = reply.file.read_bytes() if reply.file is not None else payload
                if not shaped:
                    self.wfile.write(data)
                    return
                self._trickle(data, reply.rate, reply.stall_after)

            def _trickle(self, data: bytes, rate: float | None, stall_after: int | None) -> None:
                sent = 0
                while sent < len(data):
                    if stall_after is not None and sent >= stall_after:
                        fake._closing.wait(3600)  # hang until the fake closes
                        self.close_connection = True
                        return
                    size = _CHUNK if stall_after is None else min(_CHUNK, stall_after - sent)
                    piece = data[sent : sent + size]
                    self.wfile.write(piece)
                    self.wfile.flush()
                    sent += len(piece)
                    if rate and fake._closing.wait(len(piece) / rate):
                        return

            do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = _serve

        return Handler


class Strict(Protocol):
    """A fake (or a group of fakes) that records refusals."""

    def close(self) -> None: ...
    def take_violations(self) -> list[Violation]: ...


class FakeGroup:
    """Several fakes that make one service (an API, a web origin, an asset host): they
    start, stop and report their refusals together. Subclasses set ``_servers``."""

    _servers: tuple[FakeHTTPServer, ...] = ()

    @property
    def servers(self) -> tuple[FakeHTTPServer, ...]:
        return self._servers

    def start(self) -> Self:
        for server in self._servers:
            server.start()
        return self

    def close(self) -> None:
        for server in self._servers:
            server.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        leave(self, failed=exc_type is not None)

    @property
    def violations(self) -> list[Violation]:
        return [v for server in self._servers for v in server.violations]

    def take_violations(self) -> list[Violation]:
        """The refusals recorded so far (forgotten here): a test that provokes one on
        purpose claims it with this."""
        return [v for server in self._servers for v in server.take_violations()]


def leave(fake: Strict, *, failed: bool) -> None:
    """Close ``fake``; unless the block already ``failed``, fail on unclaimed refusals."""
    fake.close()
    left = fake.take_violations()
    if left and not failed:
        raise AssertionError(unclaimed(left))


def unclaimed(violations: list[Violation]) -> str:
    """The failure message for violations no test claimed."""
    lines = "\n".join(f"  - {v}" for v in violations)
    return (
        "a fake service saw requests the real service would refuse (claim expected ones "
        f"with take_violations()):\n{lines}"
    )
