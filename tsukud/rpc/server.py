"""Serving RPC over a listening Unix socket.

One task per connection reads frames. Quick methods run inline in that task; the others
run as tasks of the connection's nursery, so a client may pipeline requests (appends
then share one fsync) and gets answers as they finish. A client that goes away cancels
everything it asked for. A malformed frame gets a structured error; a frame we cannot
even delimit (oversize length, truncated body) gets an error and the connection is
closed, because the stream cannot be resynchronised. Nothing a client sends can stop
the daemon.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import msgspec
import trio

from tsukud import log
from tsukud.errors import (
    Busy,
    Forbidden,
    InternalError,
    InvalidParams,
    ProtocolError,
    RequestCancelled,
    ShuttingDown,
    TsukuError,
    UnknownMethod,
)
from tsukud.net import notices
from tsukud.policy import spent
from tsukud.rpc import protocol
from tsukud.rpc.peercred import peer_uid
from tsukud.secrets import REDACTOR, Redactor

# Who is on the other end of a stream: a uid, or None when the transport cannot tell.
PeerCheck = Callable[[trio.abc.Stream], "int | None"]
# What surrounds one request's handler: the daemon checks the request's home and applies
# its caller's environment for exactly that long (``Daemon.request_scope``); it may
# refuse the request with a typed error.
RequestScope = Callable[[protocol.Request], AbstractContextManager[object]]


_NOTHING = nullcontext()
# What an inline request settles: nothing (see ``RpcServer._answer``); never entered.
_UNCOUNTED = spent.Tally()


def _no_scope(req: protocol.Request) -> AbstractContextManager[object]:
    return _NOTHING


# A frame that has started must finish within this time; idle between frames is fine.
FRAME_TIMEOUT_S = 30.0
MAX_CONNECTIONS = 512
# A connection with nothing running on it and no byte received for this long is closed,
# so idle clients cannot hold every one of the MAX_CONNECTIONS slots (``busy`` for all).
IDLE_TIMEOUT_S = 300.0
_RECV = 65536


class Call:
    """What a handler knows about the request it serves."""

    def __init__(self, conn: Connection, rid: protocol.RequestId) -> None:
        self.conn = conn
        self.id = rid
        self.after_reply: list[Callable[[], None]] = []

    async def progress(self, body: Any) -> None:
        await self.conn.send(protocol.progress_frame(self.id, body))

    async def progress_encoded(self, frames: bytes) -> None:
        """Progress frames encoded elsewhere (a worker thread: the event loop, which
        answers ``status``, then only moves the bytes), sent as they are."""
        await self.conn.send_encoded(frames)


Handler = Callable[[Any, Any, Call], Awaitable[Any]]


@dataclass(frozen=True)
class Method:
    name: str
    params: type[msgspec.Struct]
    handler: Handler
    inline: bool = False  # never awaits anything slow: run in the reader task
    doc: str = ""
    # What the handler receives: this attribute of the server's context ("" for the
    # context itself), looked up on first use (``RpcServer.context_for``).
    takes: str = ""


class ConnectionClosed(Exception):
    pass


# Frames read back to back without the reader task yielding (the socket had more):
# then it yields once, so a client that keeps its socket full cannot hold the loop.
_FRAMES_PER_YIELD = 32


class Connection:
    """One client's stream. On a socket (every real client) bytes move with ``os.read``
    and ``os.write`` on its descriptor, waiting through trio only when the socket has
    nothing to read or no room to write: trio's stream methods cost two checkpoints and
    several layers per call, the largest part of the daemon's CPU per ``ping``. Any
    other stream (tests' memory streams) goes through trio's methods."""

    def __init__(self, stream: trio.abc.Stream, redactor: Redactor) -> None:
        self.stream = stream
        self._fd = stream.socket.fileno() if isinstance(stream, trio.SocketStream) else None
        self._buf = bytearray()
        self._send_lock = trio.Lock()
        self._redactor = redactor
        self.closed = False
        self.running: dict[protocol.RequestId, trio.CancelScope] = {}
        self.last_heard = trio.current_time()
        self._unyielded = 0  # frames read since the reader task last yielded
        self._drained = False  # the socket had no more bytes at the last read

    def cancel(self, rid: protocol.RequestId) -> bool:
        """Cancel the request ``rid`` still running on this connection; False if none."""
        scope = self.running.get(rid)
        if scope is None:
            return False
        scope.cancel()
        return True

    async def _fill(self, n: int) -> None:
        while len(self._buf) < n:
            chunk = await self._receive()
            if not chunk:
                raise ConnectionClosed
            self.last_heard = trio.current_time()
            self._buf += chunk

    async def _receive(self) -> bytes | bytearray:
        if self._fd is None:
            return await self.stream.receive_some(_RECV)
        while True:
            if self._drained:  # the last read emptied the socket: wait before reading
                self._unyielded = 0
                await trio.lowlevel.wait_readable(self._fd)  # a checkpoint
            try:
                chunk = os.read(self._fd, _RECV)
            except BlockingIOError:
                self._drained = True
                continue
            except OSError:  # reset by the peer: gone, as an empty read says
                return b""
            # Less than asked for: nothing more was there (a read that would only say
            # so costs a system call and an exception).
            self._drained = len(chunk) < _RECV
            return chunk

    async def close_when_idle(self, idle_s: float, stop: trio.CancelScope) -> None:
        """Cancel ``stop`` (the connection's reading) once nothing has run on it and
        nothing came from it for ``idle_s``. One timer per connection, not a cancel
        scope per frame. A request still running (a long create) is not idleness."""
        while True:
            await trio.sleep_until(self.last_heard + idle_s)
            if self.running:
                self.last_heard = trio.current_time()  # busy: count again from now
            elif trio.current_time() >= self.last_heard + idle_s:
                stop.cancel()
                return

    async def read_frame(self) -> bytes:
        self._unyielded += 1
        if self._unyielded > _FRAMES_PER_YIELD:
            self._unyielded = 0
            await trio.lowlevel.checkpoint()
        await self._fill(4)  # idle wait: no timeout
        n = protocol.frame_length(bytes(self._buf[:4]))
        if len(self._buf) < 4 + n:  # a cancel scope per frame costs ~20% of server CPU
            with trio.fail_after(FRAME_TIMEOUT_S):
                await self._fill(4 + n)
        with memoryview(self._buf) as view:  # one copy of the body, not two
            body = bytes(view[4 : 4 + n])
        del self._buf[: 4 + n]
        return body

    async def send(self, frame: dict[str, Any]) -> None:
        if "error" in frame:
            frame = self._redactor.value(frame)
        await self.send_encoded(protocol.encode_frame(frame))

    async def send_encoded(self, data: bytes) -> None:
        """Send whole frames; frames from the connection's tasks never interleave. On a
        socket with room for them (nearly always) that is one ``write`` and no wait."""
        if self._fd is not None and not self._send_lock.locked():
            # Nobody is part-way through a frame, and nothing awaits between this check
            # and the write, so nothing can cut in; what the socket did not take goes
            # on under the lock, taken before anything awaits.
            if self.closed:
                return
            try:
                sent = os.write(self._fd, data)
            except BlockingIOError:
                sent = 0
            except OSError:  # the client went away
                self.closed = True
                return
            if sent == len(data):
                return
            self._send_lock.acquire_nowait()
            try:
                await self._send_all(memoryview(data)[sent:])
            finally:
                self._send_lock.release()
            return
        async with self._send_lock:
            if self.closed:
                return
            await self._send_all(data)

    async def _send_all(self, data: bytes | memoryview) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.closed = True


class RpcServer:
    def __init__(
        self,
        methods: Mapping[str, Method],
        context: Any,
        *,
        uid: int | None = None,
        redactor: Redactor = REDACTOR,
        peer: PeerCheck | None = None,
        max_connections: int = MAX_CONNECTIONS,
        idle_timeout_s: float = IDLE_TIMEOUT_S,
        before_request: Callable[[], None] | None = None,
        scope: RequestScope = _no_scope,
    ) -> None:
        # Looked up per request, so a table that loads methods on first use (the
        # daemon's ``registry.MethodTable``) is served as it grows.
        self.methods = methods
        # Each params Struct's reader, built at its first request: a request's params
        # are decoded from the frame's bytes straight into the method's Struct.
        self._readers: dict[type[msgspec.Struct], protocol.ParamsReader] = {}
        self.context = context
        # Each handler's first argument (``Method.takes``: the context, or one of its
        # attributes), found on first use and then kept: not per call.
        self._contexts: dict[str, Any] = {"": context}
        # The daemon's check for an edited config file: it may raise the file's error.
        self.before_request = before_request
        self.scope = scope
        self.uid = os.getuid() if uid is None else uid
        self.redactor = redactor
        self.peer = socket_peer_uid if peer is None else peer
        self.stopping = False
        self._limiter = trio.CapacityLimiter(max_connections)
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.connections = 0

    def context_for(self, method: Method) -> Any:
        """What ``method``'s handler receives first (see ``Method.takes``)."""
        found = self._contexts.get(method.takes)
        if found is None:
            found = self._contexts[method.takes] = getattr(self.context, method.takes)
        return found

    def reader_for(self, name: str) -> protocol.ParamsReader | None:
        """The params reader of the method ``name`` (None: no such method)."""
        method = self.methods.get(name)
        if method is None:
            return None
        reader = self._readers.get(method.params)
        if reader is None:
            reader = self._readers[method.params] = protocol.ParamsReader(method.params)
        return reader

    async def serve(self, listeners: list[trio.SocketListener]) -> None:
        await trio.serve_listeners(self.handle, listeners)

    async def handle(self, stream: trio.abc.Stream) -> None:
        """Serve one client until it goes away (any ``trio.abc.Stream``)."""
        conn = Connection(stream, self.redactor)
        try:
            if self._limiter.available_tokens == 0:
                await conn.send(
                    protocol.error_frame(
                        None,
                        Busy(f"tsukud already serves {self.max_connections} connections"),
                    )
                )
                return
            async with self._limiter:
                self.connections += 1
                try:
                    uid = self.peer(stream)
                    if uid is not None and uid != self.uid:
                        log.get().warning("rpc.refused", peer_uid=uid)
                        await conn.send(
                            protocol.error_frame(
                                None, Forbidden(f"uid {uid} may not use this daemon")
                            )
                        )
                        return
                    await self._serve_connection(conn)
                except Exception:
                    # A bug on the connection's own path (handlers have their own net):
                    # this client is told and hung up on; the daemon and others go on.
                    log.get().exception("rpc.connection_error")
                    error = InternalError("internal error on this connection")
                    await conn.send(protocol.error_frame(None, error))
                finally:
                    self.connections -= 1
        finally:
            conn.closed = True
            with trio.CancelScope(shield=True):
                await stream.aclose()

    async def _serve_connection(self, conn: Connection) -> None:
        async with trio.open_nursery() as nursery:
            reading = trio.CancelScope()
            if self.idle_timeout_s > 0:
                nursery.start_soon(conn.close_when_idle, self.idle_timeout_s, reading)
            try:
                with reading:
                    await self._read_requests(conn, nursery)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass
            if reading.cancelled_caught:
                log.get().info("rpc.idle_closed", idle_s=self.idle_timeout_s)
            # The client is gone (or broke the protocol, or idled): cancel what it asked for.
            nursery.cancel_scope.cancel()

    async def _read_requests(self, conn: Connection, nursery: trio.Nursery) -> None:
        """Frames in, requests started, until the client goes away or breaks the protocol."""
        while True:
            try:
                body = await conn.read_frame()
            except ConnectionClosed:
                break
            except trio.TooSlowError:
                await conn.send(protocol.error_frame(None, ProtocolError("frame body timed out")))
                break
            except TsukuError as e:  # oversize length prefix
                await conn.send(protocol.error_frame(None, e))
                break
            try:
                req, params = protocol.decode_call(body, self.reader_for)
            except protocol.BadRequest as bad:
                await conn.send(protocol.error_frame(bad.request_id, bad.error))
                continue
            method = self.methods.get(req.method)
            if method is None or method.inline:
                # Answered before the next frame is read, so no ``cancel`` can reach it:
                # no cancel scope of its own (entering one costs more than a ping).
                await self._run(conn, method, req, params, None)
            else:
                # Tracked before the task starts: a ``cancel`` right behind it finds it.
                scope = conn.running[req.id] = trio.CancelScope()
                nursery.start_soon(self._run, conn, method, req, params, scope)

    async def _run(
        self,
        conn: Connection,
        method: Method | None,
        req: protocol.Request,
        params: Any,
        scope: trio.CancelScope | None,
    ) -> None:
        """Answer ``req`` within its request scope, so even its error frame is redacted
        with the caller's secrets in mind; a request scope that refuses the request
        answers for it. ``scope``: the cancel scope a ``cancel`` finds it by (None for
        an inline request)."""
        try:
            with self.scope(req):
                if method is None:
                    unknown = UnknownMethod(
                        f"unknown method {req.method[:64]!r}",
                        hint="schema/rpc.md lists the methods.",
                    )
                    await conn.send(protocol.error_frame(req.id, unknown))
                    return
                await self._answer(conn, method, req, params, scope)
        except TsukuError as e:  # raised by the scope itself: nothing ran
            await conn.send(protocol.error_frame(req.id, e))
        finally:
            if scope is not None and conn.running.get(req.id) is scope:
                del conn.running[req.id]

    async def _answer(
        self,
        conn: Connection,
        method: Method,
        req: protocol.Request,
        params: Any,
        scope: trio.CancelScope | None,
    ) -> None:
        """Run ``method`` on ``params`` (``protocol.decode_call``'s: the Struct, or the
        error that refused them) and send its answer."""
        started = time.perf_counter()
        outcome = "ok"
        counting = spent.tally() if scope is not None else None
        tally = _UNCOUNTED if counting is None else counting.counted
        try:
            if isinstance(params, msgspec.ValidationError):
                raise InvalidParams(f"{method.name}: {params}".replace("`$", "`$.params"))
            call = Call(conn, req.id)
            if self.before_request is not None:
                self.before_request()
            if scope is None or counting is None:
                # Inline: it awaits nothing slow, so it neither spends (an LLM call is
                # slow) nor retries a download that would tell the person.
                result = await method.handler(self.context_for(method), params, call)
            else:
                with counting, notices.to(call.progress), scope:
                    result = await method.handler(self.context_for(method), params, call)
            if scope is not None and scope.cancelled_caught:
                raise RequestCancelled(
                    f"{method.name} was cancelled; its runs spent ${tally.usd:.4f}",
                    spent_usd=float(tally.usd),
                )
            await conn.send(protocol.result_frame(req.id, result))
            for fn in call.after_reply:
                fn()
        except TsukuError as e:
            outcome = e.code
            await conn.send(protocol.error_frame(req.id, e))
        except BaseException as exc:
            # A typed error from a handler's own nursery arrives wrapped: unwrap it.
            typed = _the_typed_error(exc) if isinstance(exc, BaseExceptionGroup) else None
            if typed is not None:
                outcome = typed.code
                await conn.send(protocol.error_frame(req.id, typed))
                return
            cancelled = _cancellation(exc)
            if cancelled is not None:
                outcome = "cancelled"
                if self.stopping:
                    with trio.CancelScope(shield=True), trio.move_on_after(0.5):
                        await conn.send(
                            protocol.error_frame(req.id, ShuttingDown("tsukud is stopping"))
                        )
                if cancelled is exc:
                    raise
                raise cancelled from None
            if not isinstance(exc, Exception):
                raise
            outcome = "internal"
            log.get().exception("rpc.internal_error", method=method.name, request_id=str(req.id))
            await conn.send(
                protocol.error_frame(
                    req.id, InternalError(f"internal error in {method.name} (request {req.id})")
                )
            )
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            if elapsed > 1000 or outcome != "ok":
                # A client that went away is told nothing: the log says what its runs spent.
                money = {"spent_usd": float(tally.usd)} if tally.settlements else {}
                log.get().info(
                    "rpc.call",
                    method=method.name,
                    outcome=outcome,
                    duration_ms=round(elapsed, 1),
                    **money,
                )


def socket_peer_uid(stream: trio.abc.Stream) -> int | None:
    """The peer's uid for a Unix socket stream; None for anything else."""
    if isinstance(stream, trio.SocketStream):
        return peer_uid(stream.socket)  # type: ignore[arg-type]
    return None


def _the_typed_error(group: BaseExceptionGroup[BaseException]) -> TsukuError | None:
    """The ``TsukuError`` when it is all ``group`` holds (a cancellation beside it must
    go on propagating, so such a group is not unwrapped)."""
    typed, rest = group.split(TsukuError)
    if typed is None or rest is not None:
        return None
    leaves = list(_leaves(typed))
    return leaves[0] if len(leaves) == 1 else None  # type: ignore[return-value]


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for e in exc.exceptions for leaf in _leaves(e)]
    return [exc]


def _cancellation(exc: BaseException) -> BaseException | None:
    """What to re-raise when ``exc`` is the request being cancelled, else None:
    Cancelled, or a group (from a handler's own nursery) holding only Cancelled, or
    Cancelled beside typed errors its tasks raised as they were torn down (a connection
    attempt cut short), which nobody is left to be told and which must not escape as a
    failure of the connection: then only the cancellation goes on."""
    if isinstance(exc, trio.Cancelled):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        cancelled, rest = exc.split(trio.Cancelled)
        if cancelled is None:
            return None
        if rest is None:
            return exc
        if rest.split(TsukuError)[1] is None:
            return cancelled
    return None
