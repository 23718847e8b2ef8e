"""The test helpers themselves: the worker's PostgreSQL answers, each test gets a database
of its own, and the TCP proxy forwards, cuts and restores the way a network fails."""

from __future__ import annotations

import psycopg
import pytest

from tests.pg import PgDatabase, PgServer
from tests.tcp_proxy import TcpProxy
from tests.waiting import wait_until


def test_server_answers_on_loopback_as_a_non_root_user(pg_database: PgDatabase) -> None:
    with psycopg.connect(pg_database.url) as conn:
        row = conn.execute(
            "SELECT current_database(), inet_server_addr()::text, "
            "(SELECT usename FROM pg_user WHERE usesysid = "
            "(SELECT datdba FROM pg_database WHERE datname = current_database()))"
        ).fetchone()
        assert row is not None
        assert row[0] == pg_database.name
        assert row[1].startswith("127.0.0.1")
        version = conn.execute("SHOW server_version_num").fetchone()
        assert version is not None and int(version[0]) >= 130000
    # The server process does not run as root (initdb and postgres refuse it).
    owner = pg_database.server.data.stat().st_uid
    assert owner != 0


def test_a_wrong_password_is_refused(pg_server: PgServer) -> None:
    bad = pg_server.admin_url().replace(pg_server.password, "not-the-password")
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(bad, connect_timeout=5)


def test_each_test_gets_a_fresh_database(pg_server: PgServer) -> None:
    first = pg_server.create_database()
    second = pg_server.create_database()
    try:
        assert first != second
        with psycopg.connect(pg_server.admin_url(first), autocommit=True) as conn:
            conn.execute("CREATE TABLE marker (x int)")
        with psycopg.connect(pg_server.admin_url(second)) as conn:
            found = conn.execute("SELECT to_regclass('marker') IS NULL").fetchone()
            assert found == (True,)
    finally:
        pg_server.drop_database(first)
        pg_server.drop_database(second)
    with psycopg.connect(pg_server.admin_url()) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname = ANY(%s)", ([first, second],)
        ).fetchone()
        assert left == (0,)


def test_proxy_forwards_cuts_and_restores(pg_database: PgDatabase) -> None:
    server = pg_database.server
    with TcpProxy(("127.0.0.1", server.port)) as proxy:
        url = pg_database.url_via(proxy.port)
        conn = psycopg.connect(url, autocommit=True, connect_timeout=5)
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert proxy.open_connections == 1

        proxy.cut()
        assert proxy.open_connections == 0
        # The live connection is gone: the next statement fails, it does not hang.
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT 1")
        conn.close()
        # New connections are refused while cut.
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(url, connect_timeout=5)
        assert proxy.refused >= 1

        proxy.restore()
        with psycopg.connect(url, autocommit=True, connect_timeout=5) as again:
            assert again.execute("SELECT 2").fetchone() == (2,)
        wait_until(lambda: proxy.open_connections == 0, "the proxy closing a finished pair")


def test_server_survives_an_immediate_stop(pg_database: PgDatabase) -> None:
    """``pg_ctl stop -m immediate`` is a crash: committed rows are there after recovery."""
    server = pg_database.server
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (x int)")
        conn.execute("INSERT INTO kept VALUES (42)")
    server.stop("immediate")
    try:
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(pg_database.url, connect_timeout=2)
    finally:
        server.restart_stopped()
    with psycopg.connect(pg_database.url) as conn:
        assert conn.execute("SELECT x FROM kept").fetchone() == (42,)
