"""The event store's backends for tests that hold both to the same behaviour: SQLite in
the test's directory, and a real PostgreSQL database of the test's own (``tests/pg.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.pg import pg_database, pg_server
from tsukud.clock import Clock
from tsukud.events.store import EventStore

__all__ = ["backend", "pg_database", "pg_server"]

# Makes a store (not yet opened) for a home directory: the same home means the same
# ledger (the same SQLite file; the same origin in the same database).
StoreFactory = Callable[[Path, Clock], EventStore]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request: pytest.FixtureRequest) -> StoreFactory:
    if request.param == "sqlite":
        return lambda home, clock: EventStore(home / "tsuku.db", clock=clock)
    from tsukud.events.pg_store import PgEventStore

    url = request.getfixturevalue("pg_database").url
    return lambda home, clock: PgEventStore(url, home, clock=clock)
