"""``events.list`` over the real RPC server and a real ledger: a listing shows every event
sequenced before it was asked for, even one its writer has not committed yet (the
``ledger.adopted`` of a start, listed at once, went missing in a CI run)."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass
from pathlib import Path

import trio
import trio.testing

from tsukud.clock import FixedClock
from tsukud.events.store import EventStore
from tsukud.rpc.registry import load_methods
from tsukud.rpc.server import RpcServer
from tsukud.secrets import Redactor

HEADER = struct.Struct(">I")


@dataclass
class Ledgered:
    """What ``events.list`` and ``events.summary`` need of the services: the store, and
    the settings in force (the summary's time limit: the default). It stands for the
    daemon too: the server hands a method ``context.services`` (or ``.control``)."""

    store: EventStore

    @property
    def services(self) -> Ledgered:
        return self

    @property
    def control(self) -> Ledgered:
        return self

    def config(self) -> dict[str, object]:
        from tsukud.config import KEYS

        return {"events.summary_timeout_seconds": KEYS["events.summary_timeout_seconds"].default}


async def read_frame(stream: trio.abc.Stream, buf: bytearray) -> dict[str, object]:
    while True:
        if len(buf) >= 4:
            (n,) = HEADER.unpack(buf[:4])
            if len(buf) >= 4 + n:
                body = bytes(buf[4 : 4 + n])
                del buf[: 4 + n]
                out: dict[str, object] = json.loads(body)
                return out
        chunk = await stream.receive_some(65536)
        assert chunk, "the server closed the connection"
        buf += chunk


async def ask_before_the_writer_runs(tmp_path: Path, method: str) -> list[dict[str, object]]:
    """Sequence one event with the writer not running, ask ``method``, give a request
    that did not wait time to read the empty ledger, then start the writer: every frame
    of the answer, the final one last."""
    store = EventStore(tmp_path / "t.db", clock=FixedClock(1_800_000_000.0))
    store.open()
    frames: list[dict[str, object]] = []
    try:
        store.append_nowait("client.sequenced", {"i": 1})  # the writer is not running yet
        server = RpcServer(load_methods(), Ledgered(store), uid=1000, redactor=Redactor([]))
        async with trio.open_nursery() as nursery:
            client, daemon_end = trio.testing.memory_stream_pair()
            nursery.start_soon(server.handle, daemon_end)
            body = json.dumps({"id": 1, "method": method, "params": {}}).encode()
            await client.send_all(HEADER.pack(len(body)) + body)
            await trio.sleep(0.2)  # a request that did not wait has read the empty ledger
            await nursery.start(store.run)
            buf = bytearray()
            with trio.fail_after(10):
                while not frames or "progress" in frames[-1]:
                    frames.append(await read_frame(client, buf))
            store.close()
            nursery.cancel_scope.cancel()
    finally:
        store.close_connection()
    return frames


async def test_a_listing_includes_an_event_its_writer_has_not_committed_yet(
    tmp_path: Path,
) -> None:
    *progress, final = await ask_before_the_writer_runs(tmp_path, "events.list")
    events: list[str] = []
    for frame in progress:
        body = frame["progress"]
        assert isinstance(body, dict)
        events += [e["type"] for e in body["events"]]
    assert final.get("result") == {"count": 1}, final
    assert events == ["client.sequenced"]


async def test_a_summary_counts_an_event_its_writer_has_not_committed_yet(
    tmp_path: Path,
) -> None:
    """The same for ``events.summary``: ``tsukuctl events summary`` right after a start
    counted nothing once (the start's own events were not yet committed)."""
    (frame,) = await ask_before_the_writer_runs(tmp_path, "events.summary")
    result = frame.get("result")
    assert isinstance(result, dict), frame
    assert result["totals"]["events"] == 1, result


def test_a_listing_written_by_sqlite_is_the_one_python_writes(tmp_path: Path) -> None:
    """A short listing's events are written by SQLite (``queries.list_json_sql``), a
    streamed one's by Python (``_events_chunk``): the same objects, oldest first, for
    rows with and without a session, escapes, non-ASCII text and nested payloads."""
    import sqlite3

    from tsukud.events import queries
    from tsukud.events.store import _SCHEMA
    from tsukud.rpc.methods import _events_chunk

    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    conn.executescript(_SCHEMA)
    payloads = [{"i": 1}, {"q": 'a "quoted"\\ line\nnext', "n": [1, {"x": None}]}, {"é": "ü→"}]
    rows = [
        (k + 1, f"2026-01-0{k + 1}T00:00:00.000000Z", "client.x", session, json.dumps(p), "ab" * 32)
        for k, (session, p) in enumerate(zip([None, "s-1", 'odd "s"'], payloads, strict=True))
    ]
    conn.executemany("INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", rows)
    sql, params = queries.list_json_sql(queries.EventFilter(), 100)
    count, joined = conn.execute(sql, params).fetchone()
    listed = conn.execute(*queries.list_sql(queries.EventFilter(), 100)).fetchall()
    conn.close()
    assert count == 3
    written = json.loads("[" + joined + "]")
    assert written == json.loads(bytes(_events_chunk(listed)))["events"]
    assert [e["id"] for e in written] == [1, 2, 3]
    assert written[1]["payload"] == payloads[1]
