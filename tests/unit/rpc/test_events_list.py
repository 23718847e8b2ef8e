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
