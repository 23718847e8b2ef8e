"""Fixtures for the shared batch queue: a real PostgreSQL (``tests/pg.py``, a database
per test), the batch world's fakes (``tests/fakes/batch_world.py``) and daemons in
homes of their own, all pointed at the one database."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.pg import PgDatabase, pg_database, pg_server

__all__ = ["pg_database", "pg_server", "team"]

#: A short lease, so a daemon killed or paused loses its jobs within the test.
LEASE_S = 2.0

Team = Callable[..., Tsuku]


@pytest.fixture
def team(pg_database: PgDatabase) -> Iterator[Team]:
    """``team(world_env, url=None, lease=LEASE_S)``: a home (not started) whose daemon
    uses the test's database (or ``url``: the same one through a proxy) as its ledger
    and batch queue. Each is retired after the test, before the database is dropped."""
    made: list[Tsuku] = []

    def make(world_env: dict[str, str], url: str | None = None, lease: float = LEASE_S) -> Tsuku:
        home = short_home()
        env = {
            **base_env(home),
            **world_env,
            "TSUKU_LEDGER_URL": url or pg_database.url,
            "TSUKU_BATCH_LEASE_SECONDS": str(lease),
        }
        t = Tsuku(home, env)
        made.append(t)
        return t

    try:
        yield make
    finally:
        for t in made:
            RETIRING.retire(t)
        RETIRING.wait()
