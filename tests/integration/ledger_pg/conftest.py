"""Fixtures for the shared-ledger tests: the real PostgreSQL (``tests/pg.py``) and
daemons, each in its own home, pointed at one test database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.pg import PgDatabase, pg_database, pg_server

__all__ = ["pg_database", "pg_server", "shared_homes"]


@pytest.fixture
def shared_homes(pg_database: PgDatabase) -> Iterator[Callable[[str], Tsuku]]:
    """Make a home (not started) whose daemon uses ``url`` as its ledger; each is
    retired (daemon stopped, home removed) after the test, before the database goes."""
    made: list[Tsuku] = []

    def make(url: str) -> Tsuku:
        home = short_home()
        t = Tsuku(home, {**base_env(home), "TSUKU_LEDGER_URL": url})
        made.append(t)
        return t

    try:
        yield make
    finally:
        for t in made:
            RETIRING.retire(t)
        RETIRING.wait()
