"""Anchors on a shared ledger: a daemon records every origin's head in its own chain, and
``events verify --anchors`` (or ``--all-origins``) run by another daemon catches an origin
whose newest rows were deleted below an anchored head, even when the attacker also moved
the head the database records for it (so each chain alone still verifies)."""

from __future__ import annotations

import json
from collections.abc import Callable

import psycopg

from tests.conftest import Tsuku
from tests.integration.ledger_pg.test_shared_ledger import annotate
from tests.pg import PgDatabase
from tests.waiting import wait_until


def _anchored_seq(url: str, by: str, origin: str) -> int:
    """The highest head of ``origin`` that an anchor in ``by``'s chain recorded (0: none)."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT max(h.seq) FROM tsuku.events a,"
            " jsonb_to_recordset(a.payload::jsonb -> 'heads') AS h(origin text, seq bigint)"
            " WHERE a.type = 'ledger.anchor' AND a.origin = %s AND h.origin = %s",
            (by, origin),
        ).fetchone()
    return int(row[0] or 0) if row else 0


def test_a_chain_truncated_below_an_anchored_head_fails_verify_from_another_daemon(
    pg_database: PgDatabase, shared_homes: Callable[..., Tsuku]
) -> None:
    url = pg_database.url
    a = shared_homes(url, {"TSUKU_LEDGER_ANCHOR_SECONDS": "0.2"})
    b = shared_homes(url, {"TSUKU_LEDGER_ANCHOR_SECONDS": "0"})  # idle: writes nothing more
    a.start()
    b.start()
    origin_a = a.call("status")["events"]["origin"]
    origin_b = b.call("status")["events"]["origin"]
    annotate(b, 6, "b")
    b_head = int(b.call("status")["events"]["durable"])
    wait_until(lambda: _anchored_seq(url, origin_a, origin_b) == b_head, "a anchors b", timeout=20)

    intact = json.loads(a.ctl("events", "verify", "--all-origins", "--json", check=True).stdout)
    assert intact["anchors"]["checked"] >= 2
    a.ctl("events", "verify", "--anchors", check=True)

    # An attacker with the table's rights drops b's newest rows and moves the head the
    # database records for b to the new last row: b's chain alone still verifies.
    keep = b_head - 3
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE tsuku.events DISABLE TRIGGER events_append_only")
        conn.execute("DELETE FROM tsuku.events WHERE origin = %s AND seq > %s", (origin_b, keep))
        conn.execute("ALTER TABLE tsuku.events ENABLE TRIGGER events_append_only")
        conn.execute(
            "UPDATE tsuku.origins SET head_seq = %s,"
            " head_hash = (SELECT hash FROM tsuku.events WHERE origin = %s AND seq = %s)"
            " WHERE origin = %s",
            (keep, origin_b, keep, origin_b),
        )

    a.ctl("events", "verify", check=True)  # a's own chain is untouched
    for flag in ("--anchors", "--all-origins"):
        cp = a.ctl("events", "verify", flag)
        assert cp.returncode == 26, cp.stdout + cp.stderr
        assert f"origin {origin_b}'s chain no longer reaches event {b_head}" in cp.stderr
        assert f"events {keep + 1}-{b_head} are missing" in cp.stderr
        assert "Traceback" not in cp.stderr
        assert "hint" in cp.stderr.lower() or "restore" in cp.stderr
