"""Fixtures for the shared-ledger tests: the real PostgreSQL (``tests/pg.py``) and
daemons, each in its own home, pointed at one test database."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home, start_together
from tests.pg import PgDatabase, pg_database, pg_server

__all__ = ["SharedHomes", "pg_database", "pg_server", "shared_homes"]


class SharedHomes(Protocol):
    def __call__(self, url: str, env: dict[str, str] | None = None) -> Tsuku: ...


@pytest.fixture
def shared_homes(pg_database: PgDatabase) -> Iterator[SharedHomes]:
    """Make a home (not started) whose daemon uses ``url`` as its ledger, with ``env``
    added to its environment; each is retired (daemon stopped, home removed) after the
    test, before the database goes."""
    made: list[Tsuku] = []

    def make(url: str, env: dict[str, str] | None = None) -> Tsuku:
        home = short_home()
        t = Tsuku(home, {**base_env(home), "TSUKU_LEDGER_URL": url, **(env or {})})
        made.append(t)
        return t

    try:
        yield make
    finally:
        for t in made:
            RETIRING.retire(t)
        RETIRING.wait()


def started(make: SharedHomes, url: str, n: int, env: dict[str, str]) -> list[Tsuku]:
    """``n`` daemons on the ledger ``url``, each in a home of its own, started at once
    (their start-ups, schema migration included, overlap as a team's may; each answers
    before this returns)."""
    daemons = [make(url, env) for _ in range(n)]
    start_together(*daemons)
    return daemons
