"""Connections to the shared PostgreSQL for the daemon's policy (``pg_policy``,
``pg_breakers``): psycopg's sync API on worker threads, one connection per group of
statements taken from a small idle list, each group one transaction. A lost connection
is ``ledger_unavailable`` (typed, with the store's hint); the next call reconnects."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import trio

from tsukud import log
from tsukud.errors import LedgerUnavailable
from tsukud.events.pg_store import _connect as connect
from tsukud.events.pg_store import first_line, unreachable

T = TypeVar("T")
GLANCE_S = 1.0  # the longest ``status`` waits for the shared numbers


class SharedDb:
    """Connections to the shared database for policy statements, each group of them one
    transaction on a worker thread."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()

    def _take(self) -> psycopg.Connection[Any]:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not (conn.closed or conn.broken):
                    return conn
        return connect(self.url)

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` in one transaction (blocking). ``ledger_unavailable`` when the
        database cannot be reached or refuses the statement."""
        conn = self._take()
        try:
            with conn.transaction():
                result = work(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            conn.close()
            raise unreachable(e) from None
        except psycopg.Error as e:
            conn.close()
            why = first_line(e)
            log.get().error("policy.shared_refused", error=why)
            raise LedgerUnavailable(
                f"the shared ledger refused a policy update: {why}",
                hint="The database refused what tsukud asked (a constraint or the role's "
                "rights); the daemon log has the statement's error.",
                cause=why,
            ) from None
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._idle.append(conn)
        return result

    async def call(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        return await trio.to_thread.run_sync(self.run, work)

    async def glance(self, work: Callable[[psycopg.Connection[Any]], T]) -> T | None:
        """A read for ``status``, which must answer at once: given up after
        ``GLANCE_S`` (the thread finishes on its own), or None when out of reach."""
        with trio.move_on_after(GLANCE_S):
            try:
                return await trio.to_thread.run_sync(self.run, work, abandon_on_cancel=True)
            except LedgerUnavailable:
                return None
        return None

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(psycopg.Error):
                conn.close()
