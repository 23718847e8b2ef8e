"""One database role per daemon (``events/roles_pg.sql``): each daemon logs in as its own
role, does its normal work through row-level security, and the database itself refuses a
role that writes an event into (or moves the head of) another daemon's origin."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import trio

from tests.conftest import Tsuku
from tests.integration.ledger_pg.test_shared_ledger import annotate, listed
from tests.pg import PgDatabase, url
from tsukud.clock import FixedClock
from tsukud.events.chain import GENESIS
from tsukud.events.pg_store import PgEventStore, migrate
from tsukud.events.queries import EventFilter
from tsukud.events.summary import summarise


@pytest.fixture
def daemon_roles(pg_database: PgDatabase) -> Iterator[list[str]]:
    """Two login roles (password = name), granted a daemon's rights on a schema the
    admin (its owner) migrated; dropped after the test."""
    roles = [f"ra_{pg_database.name}", f"rb_{pg_database.name}"]
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        migrate(conn)
        for role in roles:
            conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{role}'".encode())
            conn.execute("SELECT tsuku.grant_daemon(%s)", (role,))
    try:
        yield roles
    finally:
        for role in roles:
            pg_database.server.execute(f"DROP OWNED BY {role}", pg_database.name)
            pg_database.server.execute(f"DROP ROLE {role}")


def test_a_daemons_role_cannot_write_another_origins_events(
    pg_database: PgDatabase,
    shared_homes: Callable[[str], Tsuku],
    daemon_roles: list[str],
) -> None:
    port, db = pg_database.server.port, pg_database.name
    ra, rb = daemon_roles
    url_a, url_b = url(ra, ra, port, db), url(rb, rb, port, db)
    a, b = shared_homes(url_a), shared_homes(url_b)
    a.start()
    b.start()
    origin_a = a.call("status")["events"]["origin"]
    origin_b = b.call("status")["events"]["origin"]
    annotate(a, 3, "a")  # each daemon's normal work, through the policies
    annotate(b, 3, "b")
    with psycopg.connect(pg_database.url) as conn:
        owners = dict(conn.execute("SELECT origin, role FROM tsuku.origins").fetchall())
    assert owners == {origin_a: ra, origin_b: rb}

    forged = (1_000_000, "2026-01-01T00:00:00.000000Z", "client.note", None, "{}", GENESIS)
    insert = (
        "INSERT INTO tsuku.events (origin, seq, ts, type, session, payload, hash)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)"
    )
    with psycopg.connect(url_a) as conn:
        # a's role may insert into its own origin (rolled back: the right is what is shown)
        with conn.transaction(force_rollback=True):
            conn.execute(insert, (origin_a, *forged))
        # ... and the database refuses the same row under b's origin.
        refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security")
        with refused, conn.transaction():
            conn.execute(insert, (origin_b, *forged))
        # b's head cannot be moved by a's role either (the policy hides the row).
        with conn.transaction():
            moved = conn.execute(
                "UPDATE tsuku.origins SET head_seq = 1 WHERE origin = %s", (origin_b,)
            ).rowcount
        assert moved == 0
        # Nor can a role claim an origin in another role's name.
        refused = pytest.raises(psycopg.errors.InsufficientPrivilege, match="row-level security")
        with refused, conn.transaction():
            conn.execute(
                "INSERT INTO tsuku.origins (origin, first_seen, role) VALUES ('x', 'now', %s)",
                (rb,),
            )

    # Both daemons go on; every chain and anchor verifies; the team's listing shows both.
    annotate(a, 2, "a again")
    annotate(b, 2, "b again")
    res = json.loads(a.ctl("events", "verify", "--all-origins", "--json", check=True).stdout)
    assert {o["origin"] for o in res["origins"]} == {origin_a, origin_b}
    assert {e["origin"] for e in listed(b, "--type", "client.note")} == {origin_a, origin_b}
    assert all(e["origin"] != origin_b or e["seq"] < 1_000_000 for e in listed(a))


def test_a_daemons_role_does_not_migrate_and_refuses_an_older_schema(
    pg_database: PgDatabase,
    shared_homes: Callable[[str], Tsuku],
    daemon_roles: list[str],
) -> None:
    ra = daemon_roles[0]
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        conn.execute("UPDATE tsuku.meta SET value = '1' WHERE key = 'schema_version'")
    t = shared_homes(url(ra, ra, pg_database.server.port, pg_database.name))
    proc = t.start(wait=False)
    _out, err = proc.communicate(timeout=60)
    text = err.decode()
    assert proc.returncode == 5, text
    assert "schema is version 1; this tsukud needs 3" in text
    assert "connecting as the schema's owner" in text  # the hint
    assert "Traceback" not in text


def test_an_upgrade_that_adds_tables_grants_them_to_the_daemons_roles(
    pg_database: PgDatabase, daemon_roles: list[str], tmp_path: Path
) -> None:
    """A team on schema 2 (no summary rollups), its daemons on roles granted then: the
    owner's migration to 3 grants the rollups to those roles, so a daemon restarted on
    the new version writes (and counts) its events without the owner calling
    grant_daemon again."""
    ra = daemon_roles[0]
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        for table in ("rollups", "session_rollups", "rollup_marks"):
            conn.execute(f"REVOKE ALL ON tsuku.{table} FROM {ra}".encode())
        conn.execute("UPDATE tsuku.meta SET value = '2' WHERE key = 'schema_version'")
    owner = PgEventStore(pg_database.url, tmp_path / "owner", clock=FixedClock(0))
    owner.open()  # migrates
    owner.close_connection()
    port, db = pg_database.server.port, pg_database.name
    store = PgEventStore(url(ra, ra, port, db), tmp_path / "a", clock=FixedClock(0))

    async def note() -> None:
        store.open()
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(store.run)
                await store.append("client.note", {"n": 1})
                store.close()
        finally:
            store.close_connection()

    trio.run(note)
    answer = store.read_sync(lambda conn: summarise(conn, EventFilter(), "type", shared=True))
    assert answer.source == "rollups" and answer.totals.events == 1
