"""The real PostgreSQL fixtures (``tests/pg.py``) for the shared-ledger tests."""

from __future__ import annotations

from tests.pg import pg_database, pg_server

__all__ = ["pg_database", "pg_server"]
