"""``events.append`` through the real daemon: a request's events are one whole. An event
the daemon refuses is named by its index, and nothing of the request reaches the ledger,
not even the events before it."""

from __future__ import annotations

import sqlite3

import pytest

from tests.conftest import Tsuku
from tsukud.launch import RemoteError

REFUSED = [
    ({"type": "llm.turn", "payload": {}}, "events[2].type: event type 'llm.turn' is reserved"),
    ({"type": "client.Bad!"}, "events[2].type: invalid event type 'client.Bad!'"),
    ({"type": "client.x", "session": "s" * 129}, "events[2].session: invalid session id"),
]


def test_a_refused_event_is_named_by_its_index_and_nothing_of_its_request_is_written(
    daemon: Tsuku,
) -> None:
    sent = [{"type": "client.refused", "payload": {"i": i}} for i in range(4)]
    for bad, message in REFUSED:  # one daemon for all three: a start costs more than a call
        with pytest.raises(RemoteError) as e:
            daemon.call("events.append", {"events": [*sent[:2], bad, *sent[2:]]})
        assert e.value.remote_code == "invalid_params"
        assert message in e.value.message and e.value.hint
    done = daemon.call("events.append", {"events": [{"type": "client.ok"}]})
    conn = sqlite3.connect(f"file:{daemon.home / 'tsuku.db'}?mode=ro", uri=True)
    try:
        kept = conn.execute("SELECT type FROM events WHERE type LIKE 'client.%'").fetchall()
    finally:
        conn.close()
    assert kept == [("client.ok",)]  # not even the events before the refused one
    assert done["durable"] is True
    daemon.ctl("events", "verify", check=True)  # no hash was handed out for them either
