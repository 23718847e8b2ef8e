"""The event store's backends for tests that hold both to the same behaviour: SQLite in
the test's directory, and a real PostgreSQL database of the test's own (``tests/pg.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

import pytest

from tests.pg import pg_database, pg_server
from tsukud.clock import Clock
from tsukud.events.store import DEFAULT_READERS, EventStore

__all__ = ["backend", "pg_database", "pg_server"]


class StoreFactory(Protocol):
    """Makes a store (not yet opened) for a home directory: the same home means the same
    ledger (the same SQLite file; the same origin in the same database)."""

    def __call__(self, home: Path, clock: Clock, readers: int = DEFAULT_READERS) -> EventStore: ...


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> StoreFactory:
    if request.param == "sqlite":

        def sqlite(home: Path, clock: Clock, readers: int = DEFAULT_READERS) -> EventStore:
            return EventStore(home / "tsuku.db", clock=clock, readers=readers)

        return sqlite
    from tsukud.events.pg_store import PgEventStore

    url = request.getfixturevalue("pg_database").url

    def postgresql(home: Path, clock: Clock, readers: int = DEFAULT_READERS) -> EventStore:
        return PgEventStore(url, home, clock=clock, readers=readers)

    return postgresql
