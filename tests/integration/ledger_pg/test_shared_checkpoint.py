"""An origin's chain on the shared ledger held to its checkpoint like SQLite's: the
newest rows deleted together with the checkpoint file stop the start (issue 31), until a
person accepts the loss with ``tsukud --accept-ledger``, which is recorded."""

from __future__ import annotations

import json
from collections.abc import Callable

import psycopg

from tests.conftest import Tsuku
from tests.pg import PgDatabase
from tsukud.errors import ExitCode


def test_an_origins_rows_and_checkpoint_deleted_together_stop_the_start(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    t = shared_homes(pg_database.url)
    t.start()
    t.call(
        "events.append",
        {"events": [{"type": "client.note", "payload": {"i": i}} for i in range(4)]},
    )
    origin = t.call("status")["events"]["origin"]
    t.stop_all()
    t.procs.clear()

    # An attacker with the table's rights and the home's files: the newest rows go, the
    # recorded head follows them, and the checkpoint that would show the loss is deleted.
    with psycopg.connect(pg_database.url) as conn:
        conn.execute("ALTER TABLE tsuku.events DISABLE TRIGGER USER")
        conn.execute("DELETE FROM tsuku.events WHERE origin = %s AND seq > 3", (origin,))
        head = conn.execute(
            "SELECT hash FROM tsuku.events WHERE origin = %s AND seq = 3", (origin,)
        ).fetchone()
        assert head is not None
        conn.execute(
            "UPDATE tsuku.origins SET head_seq = 3, head_hash = %s WHERE origin = %s",
            (head[0], origin),
        )
        conn.execute("ALTER TABLE tsuku.events ENABLE TRIGGER USER")
    (t.home / "state" / "shared-ledger.head").unlink()

    proc = t.start(wait=False)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.LEDGER_CORRUPT, err.decode()
    assert "holds 3 events but its checkpoint" in err.decode()
    assert "tsukud --accept-ledger" in err.decode()

    t.start("--accept-ledger")
    cp = t.ctl("events", "--type", "ledger.adopted", "--json", "--origin", origin, check=True)
    (adopted,) = [json.loads(line) for line in cp.stdout.splitlines()]
    assert adopted["payload"]["last_id"] == 3 and "accept-ledger" in adopted["payload"]["reason"]
    assert t.ctl("events", "verify").returncode == 0
