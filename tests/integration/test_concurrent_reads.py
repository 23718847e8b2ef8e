"""Reads in parallel, against a real daemon: while 20 clients each run a heavy
``events.summary`` over a large ledger, ``status`` (answered from memory) is no more
than a few ms slower than with nothing else going on.

The comparison is with the same daemon idle, measured just before and just after, not
with a fixed figure: the machine running the tests may be busy with other work."""

from __future__ import annotations

import sqlite3
import statistics
import threading
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest

from tests.conftest import Tsuku
from tsukuctl.client import Client
from tsukud.clock import iso
from tsukud.events.chain import GENESIS, link
from tsukud.events.integrity import checkpoint_path_for, write_checkpoint
from tsukud.events.store import _SCHEMA

EVENTS = 60_000
SUMMARY_CLIENTS = 20
# How much slower `status` may be under the summaries than idle. The summary running
# takes CPU from the event loop's share of the machine, so on a machine shared with
# other work (load average 10 on 2 cores) status is +5..11 ms slower at the median;
# these bounds leave room for that and still fail a daemon whose reads compete with
# its event loop (before the read pool: +28 ms median, +130 ms p90 on that machine).
EXTRA_MEDIAN_MS = 15
EXTRA_P90_MS = 50


def write_ledger(db: Path, n: int, per_session: int = 20, prefix: str = "s-") -> None:
    """n hash-chained ``client.usage`` events over the last 30 days, ``per_session`` to
    a session, written directly (through the daemon it would take minutes), with their
    checkpoint: what a summary has to scan."""
    enc = msgspec.json.Encoder(order="sorted")
    end = time.time() - 60
    step = 30 * 86400 / n
    rows = []
    prev = GENESIS
    for k in range(n):
        id_, ts = k + 1, iso(end - (n - k) * step)
        payload = enc.encode({"input_tokens": k % 900, "output_tokens": k % 70}).decode()
        session = f"{prefix}{k // per_session}"
        h = link(prev, id_, ts, "client.usage", session, payload)
        rows.append((id_, ts, "client.usage", session, payload, h))
        prev = h
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(_SCHEMA)
        conn.execute("BEGIN")
        conn.executemany(
            "INSERT INTO events (id, ts, type, session, payload, hash) VALUES (?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.execute("COMMIT")
    finally:
        conn.close()
    write_checkpoint(checkpoint_path_for(db), n, prev)  # as the daemon keeps it


def status_latencies(c: Client, n: int) -> list[float]:
    """n ``status`` round trips, ms each, paced so the daemon is not kept busy by them."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.call("status")
        out.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.005)
    return out


def p90(xs: list[float]) -> float:
    return sorted(xs)[int(len(xs) * 0.9)]


# Among the slowest tests (issue 26): twenty clients' heavy summaries over a large ledger
# (the load is the subject).
@pytest.mark.slow  # 20 clients running heavy summaries; its sibling stays
def test_status_stays_quick_while_20_clients_run_heavy_summaries(tsuku: Tsuku) -> None:
    write_ledger(tsuku.home / "tsuku.db", EVENTS)
    tsuku.start()
    # by session: thousands of groups, so turning rows into an answer is work too; with a
    # type filter, which the session rollups cannot apply, so every event is read
    params = {"by": "session", "filter": {"types": ["client.*"]}}
    outstanding = SUMMARY_CLIENTS
    lock = threading.Lock()
    go = threading.Barrier(SUMMARY_CLIENTS + 1)
    results: list[Any] = []

    def summarise() -> None:
        nonlocal outstanding
        with tsuku.client() as c:
            go.wait()
            try:
                results.append(c.call("events.summary", params))
            except Exception as e:  # reported by the assertion below
                results.append(e)
            finally:
                with lock:
                    outstanding -= 1

    with tsuku.client() as c:
        c.call("events.summary", params)  # warm the page cache: CPU is what is contended
        idle = status_latencies(c, 100)
        threads = [threading.Thread(target=summarise) for _ in range(SUMMARY_CLIENTS)]
        for t in threads:
            t.start()
        go.wait()
        time.sleep(0.05)  # the summaries are in the daemon's hands
        loaded: list[float] = []
        while outstanding and len(loaded) < 1000:
            loaded += status_latencies(c, 1)
        for t in threads:
            t.join(timeout=120)
        idle += status_latencies(c, 100)

    assert all(isinstance(r, dict) for r in results), results
    assert len(results) == SUMMARY_CLIENTS
    assert all(r["totals"]["events"] == EVENTS for r in results)
    # 3,000 sessions: the 2,000 costing most listed, the others summed in ``rest``
    assert all(len(r["groups"]) + r["rest"]["groups"] >= EVENTS // 20 for r in results)
    # Every loaded sample was taken while summaries were still unanswered.
    assert len(loaded) >= 30, len(loaded)
    busy, calm = statistics.median(loaded), statistics.median(idle)
    report = (
        f"status under load: median {busy:.1f} ms, p90 {p90(loaded):.1f} ms;"
        f" idle: median {calm:.1f} ms, p90 {p90(idle):.1f} ms"
    )
    assert busy <= calm + EXTRA_MEDIAN_MS, report
    assert p90(loaded) <= p90(idle) + EXTRA_P90_MS, report


def listing(c: Client, **params: Any) -> tuple[list[dict[str, Any]], int, int]:
    """events.list's events, its count, and how many progress frames carried them."""
    frames: list[Any] = []
    result = c.call("events.list", params, on_progress=frames.append)
    return [e for f in frames for e in f["events"]], result["count"], len(frames)


def test_short_listings_in_one_read_say_what_streamed_listings_say(tsuku: Tsuku) -> None:
    """A listing of up to 1000 events is read and encoded in one trip to a worker
    thread; a longer one streams chunk by chunk. Both give the same events; a short
    listing that would hold too much in memory (clients' large payloads) streams."""
    write_ledger(tsuku.home / "tsuku.db", 3000)
    tsuku.start()
    with tsuku.client() as c:
        usage = {"types": ["client.usage"]}  # not the daemon's own events, still arriving
        short, count, _ = listing(c, limit=1000, filter=usage)
        longer, count_longer, _ = listing(c, limit=1001, filter=usage)
        assert count == len(short) == 1000 and count_longer == len(longer) == 1001
        assert short == longer[1:]  # the newest, oldest first
        assert [e["id"] for e in short] == list(range(2001, 3001))
        assert short[0]["type"] == "client.usage" and "input_tokens" in short[0]["payload"]
        few, n, frames = listing(c, limit=5, filter={"session": "s-3"})
        assert n == 5 and frames == 1 and {e["session"] for e in few} == {"s-3"}
        assert listing(c, limit=5, filter={"session": "none"}) == ([], 0, 0)

        big = "x" * 700_000  # seven of these pass what a short listing keeps in memory
        for k in range(7):
            c.call(
                "events.append",
                {"events": [{"type": "client.note", "payload": {"k": k, "text": big}}]},
            )
        notes, n, frames = listing(c, limit=10, filter={"types": ["client.note"]})
        assert n == 7 and frames == 7  # streamed: one frame each, under the frame cap
        assert [e["payload"]["k"] for e in notes] == [0, 1, 2, 3, 4, 5, 6]
        assert all(e["payload"]["text"] == big for e in notes)

    # Which path those took: the short read gives up past its memory bound.
    from tsukud.events.queries import EventFilter
    from tsukud.rpc.methods import ListParams, _quick_list

    notes_only = EventFilter(types=["client.note"])
    conn = sqlite3.connect(f"file:{tsuku.home / 'tsuku.db'}?mode=ro", uri=True)
    try:
        assert _quick_list(ListParams(notes_only, limit=10), 1, conn) is None
        three = _quick_list(ListParams(notes_only, limit=3), 1, conn)
        assert three is not None and three[0] == 3 and len(three[1]) > 3 * 700_000
    finally:
        conn.close()
