"""The ledger's read side: a small pool of read-only connections, one query per thread.

A query runs in a worker thread on a connection of its own, so in WAL mode it never
blocks the writer or another query. The pool is small on purpose: a CapacityLimiter
sized to it bounds how many queries run at once, so a burst of heavy summaries cannot
put dozens of CPU-bound threads on the cores and leave the event loop (which answers
``status`` from memory) waiting for a CPU. Heavy queries (whole-ledger scans) may take
all but one connection, so a quick one never waits behind a queue of them.

A query whose caller is cancelled (its client went away, the daemon is stopping) is
interrupted with ``sqlite3.Connection.interrupt`` instead of being left to run on (a
progress handler catches a cancellation that came just before the statement started,
which SQLite's interrupt ignores); its connection returns to the pool when the thread
has let go of it, never before.

A query given a ``limit`` is interrupted the same way once it has held its connection
that long (``ReadTooSlow``): time spent waiting for a connection does not count, so a
burst of summaries queued behind each other is not failed for the queue.

An interrupt is repeated until the thread has let go of its connection: PostgreSQL, like
SQLite, ignores a cancel that reaches the server before the statement has started, and
PostgreSQL has no progress handler to catch that window (a CI run's query ran on after
one such cancel and kept its connection).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from typing import TypeVar

import trio

T = TypeVar("T")
# How often (in SQLite VM instructions) a running query checks whether it was cancelled:
# a few dozen times a second for a heavy summary, too rarely to cost anything.
_PROGRESS_OPS = 100_000
# How long an interrupted query may run on before it is interrupted again.
REINTERRUPT_S = 0.25


class PoolClosed(RuntimeError):
    pass


class ReadTooSlow(Exception):
    """The query held its connection past the caller's limit and was interrupted."""

    def __init__(self, limit_s: float) -> None:
        super().__init__(f"interrupted after {limit_s:g} s")
        self.limit_s = limit_s


class _Abandoned(Exception):
    """The caller was cancelled before the thread reached SQLite: nobody wants the answer."""


class _Query:
    """One query's link between the trio task waiting for it and the thread running it."""

    def __init__(self) -> None:
        self.conn: sqlite3.Connection | None = None  # set while the thread is inside SQLite
        self.cancelled = False
        self.timed_out = False  # it held its connection past its limit
        self.released = threading.Event()  # the thread has let go of the connection


class ReadPool:
    def __init__(
        self,
        open_conn: Callable[[], sqlite3.Connection],
        size: int,
        healthy: Callable[[sqlite3.Connection], bool] | None = None,
    ) -> None:
        if size < 2:
            raise ValueError(
                "a read pool needs at least two connections (one kept for quick reads)"
            )
        self.size = size
        self._open = open_conn
        # Whether a connection back from a query may be used again (a shared ledger's
        # connection can break with the network; a broken one is closed, not pooled).
        self._healthy = healthy
        self._limiter = trio.CapacityLimiter(size)
        self._heavy = trio.CapacityLimiter(size - 1)
        self._idle: list[sqlite3.Connection] = []
        self._opened = 0
        self._lock = threading.Lock()  # guards the idle list and each _Query's conn
        self._closed = False

    @property
    def opened(self) -> int:
        """Connections opened so far (never more than ``size``)."""
        return self._opened

    @property
    def idle(self) -> int:
        return len(self._idle)

    async def run(
        self,
        fn: Callable[[sqlite3.Connection], T],
        *,
        heavy: bool = False,
        limit: float | None = None,
    ) -> T:
        """Run ``fn`` on a pooled connection in a worker thread.

        ``heavy``: the query may scan a large part of the ledger; at most ``size - 1``
        heavy queries run at once. ``limit``: seconds it may hold its connection before
        it is interrupted with ``ReadTooSlow``.
        """
        if self._closed:
            raise PoolClosed("the ledger's read pool is closed")
        if heavy:
            async with self._heavy:
                return await self._run(fn, limit)
        return await self._run(fn, limit)

    def _time_out(self, query: _Query) -> None:
        with self._lock:
            query.timed_out = True
        self._interrupt_until_released(query)

    def _interrupt_until_released(self, query: _Query) -> None:
        """Interrupt ``query`` now, and again every :data:`REINTERRUPT_S` while its
        thread still holds the connection (an interrupt before the statement started is
        ignored); a thread that never lets go is given up on after a minute."""
        for _ in range(int(60 / REINTERRUPT_S)):
            with self._lock:
                conn = query.conn
                if conn is None:
                    return
                conn.interrupt()
            if query.released.wait(REINTERRUPT_S):
                return

    async def _run(self, fn: Callable[[sqlite3.Connection], T], limit: float | None) -> T:
        query = _Query()

        def work() -> T:
            conn = self._checkout()
            timer = None
            try:
                with self._lock:
                    if query.cancelled:
                        raise _Abandoned
                    query.conn = conn
                # SQLite ignores an interrupt that comes before a statement's first step;
                # this handler catches a cancellation (or a limit) that fell in that window.
                conn.set_progress_handler(lambda: query.cancelled or query.timed_out, _PROGRESS_OPS)
                if limit is not None:
                    timer = threading.Timer(limit, self._time_out, (query,))
                    timer.daemon = True
                    timer.start()
                try:
                    return fn(conn)
                except Exception:
                    if query.timed_out:
                        raise ReadTooSlow(limit or 0.0) from None
                    raise
                finally:
                    if timer is not None:
                        timer.cancel()
                    conn.set_progress_handler(None, 0)
                    with self._lock:
                        query.conn = None
                    query.released.set()
            finally:
                self._checkin(conn)

        try:
            # The limiter's token is released only when the thread is done, abandoned
            # or not, so at most ``size`` connections are ever out.
            return await trio.to_thread.run_sync(
                work, limiter=self._limiter, abandon_on_cancel=True
            )
        except trio.Cancelled:
            with self._lock:
                query.cancelled = True
                running = query.conn is not None
            if running:  # from a thread of its own: the loop must not wait on the server
                threading.Thread(
                    target=self._interrupt_until_released, args=(query,), daemon=True
                ).start()
            raise

    def _checkout(self) -> sqlite3.Connection:
        with self._lock:
            if self._idle:
                return self._idle.pop()
            if self._closed:
                raise PoolClosed("the ledger's read pool is closed")
            self._opened += 1
        try:
            return self._open()  # in the worker thread: opening never blocks the loop
        except BaseException:
            with self._lock:
                self._opened -= 1
            raise

    def _checkin(self, conn: sqlite3.Connection) -> None:
        reusable = self._healthy is None or self._healthy(conn)
        with self._lock:
            if not self._closed and reusable:
                self._idle.append(conn)
                return
            self._opened -= 1
        conn.close()

    def close(self) -> None:
        """Close the idle connections; those still in use close when their query ends."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
        for conn in idle:
            conn.close()
