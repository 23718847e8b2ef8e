"""Connections to the shared PostgreSQL for the daemon's policy (``pg_policy``,
``pg_breakers``): psycopg's sync API on worker threads, one connection per group of
statements taken from a small idle list, each group one transaction. A lost connection
is ``ledger_unavailable`` (typed, with the store's hint); the next call reconnects."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
import trio

from tsukud import log
from tsukud.errors import LedgerUnavailable
from tsukud.events.pg_pool import PgPool
from tsukud.events.pg_store import first_line

T = TypeVar("T")
GLANCE_S = 1.0  # the longest ``status`` waits for the shared numbers


class SharedDb:
    """Connections to the shared database for policy statements, each group of them one
    transaction on a worker thread. Never run twice: a reservation whose answer was
    lost may have committed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._pool = PgPool(url)

    def run(self, work: Callable[[psycopg.Connection[Any]], T]) -> T:
        """``work`` in one transaction (blocking). ``ledger_unavailable`` when the
        database cannot be reached or refuses the statement."""

        def in_transaction(conn: psycopg.Connection[Any]) -> T:
            try:
                with conn.transaction():
                    return work(conn)
            except (psycopg.OperationalError, psycopg.InterfaceError):
                raise
            except psycopg.Error as e:
                why = first_line(e)
                log.get().error("policy.shared_refused", error=why)
                raise LedgerUnavailable(
                    f"the shared ledger refused a policy update: {why}",
                    hint="The database refused what tsukud asked (a constraint or the role's "
                    "rights); the daemon log has the statement's error.",
                    cause=why,
                ) from None

        return self._pool.run(in_transaction)

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
        self._pool.close()
