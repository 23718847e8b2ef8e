"""A damaged ledger through the real binaries: tsukud refuses to start on it with exit 26
and one clear message (never a traceback), and ``events verify --head`` catches what a
same-uid attacker can hide from the checkpoint."""

from __future__ import annotations

import json
import signal
import sqlite3
import time

import pytest

from tests.conftest import Tsuku
from tsukud.errors import ExitCode
from tsukud.launch import RemoteError


def append(t: Tsuku, n: int) -> None:
    t.call(
        "events.append", {"events": [{"type": "client.x", "payload": {"i": i}} for i in range(n)]}
    )


def stop(t: Tsuku) -> None:
    proc = t.procs[-1]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0


def refused_start(t: Tsuku) -> str:
    proc = t.start(wait=False)
    _, err = proc.communicate(timeout=30)
    text = err.decode()
    assert proc.returncode == ExitCode.LEDGER_CORRUPT, text
    assert "Traceback" not in text
    return text


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_tsukud_refuses_a_damaged_ledger_with_exit_26_and_what_to_do(
    tsuku: Tsuku, damage: str
) -> None:
    tsuku.start()
    append(tsuku, 30)
    stop(tsuku)
    db = tsuku.home / "tsuku.db"
    for suffix in ("-wal", "-shm"):
        (tsuku.home / f"tsuku.db{suffix}").unlink(missing_ok=True)
    db.write_bytes(b"" if damage == "truncated" else b"\x00not a database\xff" * 512)
    text = refused_start(tsuku)
    if damage == "truncated":
        assert "events 1-32 are missing (32 events)" in text  # started, 30 events, stopped
        assert "tsukuctl daemon stop; tsukud --accept-ledger" in text  # how to accept it
    else:
        assert "not a readable SQLite database" in text and ".recover" in text


def test_verify_head_catches_a_rewrite_of_database_and_checkpoint(tsuku: Tsuku) -> None:
    tsuku.start()
    append(tsuku, 10)
    noted = json.loads(tsuku.ctl("events", "verify", "--json", check=True).stdout)
    assert noted["ok"] and noted["checked"] == 11 and len(noted["head"]) == 64
    append(tsuku, 5)
    ok = tsuku.ctl("events", "verify", "--head", noted["head"][:16], check=True)
    assert "the head you gave is event 11" in ok.stdout
    bad = tsuku.ctl("events", "verify", "--head", "not-hex-at-all!!")
    assert bad.returncode == ExitCode.USAGE and "hex digits" in bad.stderr  # the user's typo
    # A client that skips that check still gets the daemon's own refusal.
    with pytest.raises(RemoteError) as refused:
        tsuku.call("events.verify", {"head": "not-hex-at-all!!"})
    assert refused.value.remote_code == "invalid_params" and "hex digits" in refused.value.message
    stop(tsuku)

    # Same uid: delete the newest rows and write the checkpoint to match.
    conn = sqlite3.connect(tsuku.home / "tsuku.db")
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE id > 6")
    (h6,) = conn.execute("SELECT hash FROM events WHERE id = 6").fetchone()
    conn.commit()
    conn.close()
    (tsuku.home / "state" / "ledger.head").write_text(json.dumps({"last_id": 6, "head": h6}))

    tsuku.start()  # nothing stored under this uid can tell (docs/events.md says so)
    assert tsuku.ctl("events", "verify").returncode == 0
    caught = tsuku.ctl("events", "verify", "--head", noted["head"])
    assert caught.returncode == ExitCode.LEDGER_CORRUPT
    assert "the head you gave" in caught.stderr and "Traceback" not in caught.stderr


def test_a_missing_checkpoint_stops_the_start_until_accept_ledger_records_the_loss(
    tsuku: Tsuku,
) -> None:
    # Issue 31: the newest rows and the checkpoint deleted together used to pass the
    # start and `verify`, visible only as a `ledger.adopted` adopted without a question.
    tsuku.start()
    append(tsuku, 6)
    stop(tsuku)
    conn = sqlite3.connect(tsuku.home / "tsuku.db")
    conn.execute("DROP TRIGGER events_no_delete")
    conn.execute("DELETE FROM events WHERE id > 5")
    conn.commit()
    conn.close()
    (tsuku.home / "state" / "ledger.head").unlink()
    text = refused_start(tsuku)
    assert "holds 5 events but its checkpoint" in text and "is missing" in text
    assert "tsukud --accept-ledger" in text

    tsuku.start("--accept-ledger")
    adopted = [
        json.loads(line)
        for line in tsuku.ctl("events", "--type", "ledger.adopted", "--json").stdout.splitlines()
    ]
    assert len(adopted) == 1 and adopted[0]["payload"]["last_id"] == 5
    assert "accept-ledger" in adopted[0]["payload"]["reason"]
    assert tsuku.ctl("events", "verify").returncode == 0
    stop(tsuku)
    tsuku.start()  # accepted once: the checkpoint follows again, no question


def test_a_failed_writer_still_stops_promptly_and_says_what_was_not_recorded(
    tsuku: Tsuku,
) -> None:
    """A write that fails for another reason than space (here a real SQLite error from a
    trigger) stops the writer; the stop must neither crash nor hang on `daemon.stopped`."""
    proc = tsuku.start()
    append(tsuku, 2)
    conn = sqlite3.connect(tsuku.home / "tsuku.db")
    conn.execute(
        "CREATE TRIGGER poison BEFORE INSERT ON events WHEN NEW.type = 'client.poison'"
        " BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    conn.commit()
    conn.close()
    with pytest.raises(RemoteError) as failed:
        tsuku.call("events.append", {"events": [{"type": "client.poison", "payload": {}}]})
    assert failed.value.remote_code == "ledger_corrupt"
    assert tsuku.ctl("status").returncode == 0  # reads still answer
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0 and time.monotonic() - t0 < 5
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read().decode()
    log = (tsuku.home / "logs" / "tsukud.log").read_text()
    assert "daemon.stop_not_recorded" in log
