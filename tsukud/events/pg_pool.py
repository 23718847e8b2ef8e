"""A few connections to the shared PostgreSQL for the daemon's statements outside the
event writer (the policy's and the batch queue's): psycopg's sync API, each connection
used by one worker thread at a time, kept on a small idle list. A connection the
network broke is dropped and the error is ``ledger_unavailable`` (typed, with the
store's hint); the next call connects again."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg

from tsukud.errors import LedgerUnavailable
from tsukud.events.pg_store import _connect, unreachable

T = TypeVar("T")


class PgPool:
    def __init__(self, url: str) -> None:
        self.url = url
        self._idle: list[psycopg.Connection[Any]] = []
        self._lock = threading.Lock()

    def run(self, fn: Callable[[psycopg.Connection[Any]], T], *, again: bool = False) -> T:
        """``fn`` on a pooled connection (blocking). With ``again`` (statements that may
        run twice: idempotent, or recognised when repeated), a connection that broke
        while idle, found out only when used, is replaced: every idle one is dropped
        (they went the same way) and ``fn`` runs once more on a new connection."""
        conn = self._take()
        if conn is not None:
            if not again:
                return self._use(conn, fn)
            try:
                return self._use(conn, fn)
            except LedgerUnavailable:
                self.close()
        return self._use(_connect(self.url), fn)

    def _take(self) -> psycopg.Connection[Any] | None:
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                if not (conn.closed or conn.broken):
                    return conn
        return None

    def _use(self, conn: psycopg.Connection[Any], fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        try:
            out = fn(conn)
        except (psycopg.OperationalError, psycopg.InterfaceError) as e:
            conn.close()
            raise unreachable(e) from None
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._idle.append(conn)
        return out

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            with contextlib.suppress(psycopg.Error):
                conn.close()
