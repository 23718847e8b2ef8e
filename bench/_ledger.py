"""A realistic ledger of any size, written straight to SQLite with a valid hash chain.

Benchmarks that need a big ledger (events_summary, concurrent_reads) build it here rather
than through the daemon: the rows are written in one transaction with the real chain
function ``tsukud.events.chain.link`` and the store's canonical payload encoding, so
``events verify`` passes on it. 30 days of a realistic mix, 5% ``llm.turn`` events
(provider, model, tokens, cost; 2% of turns unpriced), the rest tool calls,
validations, generations, repairs and discoveries, in sessions of ~20 events; 0.2%
``llm.cut_off`` (charged at a worst case, estimated).
Its summary rollups are folded the way a daemon opening an older ledger folds them
(``tsukud.events.rollups.catch_up``), and its checkpoint written (``state/ledger.head``:
a ledger with events and no checkpoint is refused), so the ledger is the one a daemon
would have kept.
"""

from __future__ import annotations

import bisect
import itertools
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

from tsukud.clock import iso
from tsukud.events import rollups
from tsukud.events.chain import GENESIS, link
from tsukud.events.integrity import checkpoint_path_for, write_checkpoint
from tsukud.events.store import _SCHEMA

DAYS = 30
PROVIDERS = [
    ("claude", "claude-sonnet-4-5", 3.0, 15.0),
    ("claude", "claude-haiku-4-5", 1.0, 5.0),
    ("gemini", "gemini-2.5-pro", 1.25, 10.0),
    ("gemini", "gemini-2.5-flash", 0.3, 2.5),
    ("ollama", "qwen3:8b", None, None),
]
OTHER_TYPES = [  # (type, weight) for the 95% that are not llm.turn
    ("tool.called", 40),
    ("validation.started", 8),
    ("validation.passed", 6),
    ("validation.failed", 2),
    ("generation.started", 5),
    ("generation.completed", 4),
    ("repair.attempted", 5),
    ("discovery.lookup", 20),
    ("client.note", 5),
]
TOOLS = ["fetch_file", "inspect_archive", "extract_pattern"]


def build_ledger(db: Path, n: int, seed: int = 42) -> float:
    """Write n hash-chained events spread over the last DAYS days (ending a minute ago)
    and fold their rollups; returns the seconds the fold took."""
    import msgspec

    enc = msgspec.json.Encoder(order="sorted")  # EventStore's canonical payload form
    rnd = random.Random(seed)
    types, weights = zip(*OTHER_TYPES, strict=True)
    cum = list(itertools.accumulate(weights))
    end = time.time() - 60
    start = end - DAYS * 86400
    step = (end - start) / n
    rows = []
    prev = GENESIS
    for k in range(n):
        id_ = k + 1
        ts = iso(start + k * step)
        session = f"s-{k // 20:06x}" if k % 50 else None
        r = rnd.random()
        if r < 0.05:
            type_ = "llm.turn"
            provider, model, pin, pout = PROVIDERS[rnd.randrange(len(PROVIDERS))]
            if pin is None and rnd.random() > 0.4:  # most local turns are priced at zero
                pin = pout = 0.0
            tin, tout = rnd.randint(500, 30_000), rnd.randint(50, 4_000)
            p: dict[str, object] = {
                "provider": provider,
                "model": model,
                "input_tokens": tin,
                "output_tokens": tout,
                "stop_reason": "tool_use",
                "duration_ms": rnd.randint(300, 20_000),
            }
            if pin is not None and pout is not None:
                p["cost_usd"] = round((tin * pin + tout * pout) / 1e6, 6)
        elif r < 0.052:  # a call cut off before its usage was known: its worst case
            type_ = "llm.cut_off"
            provider, model, pin, pout = PROVIDERS[rnd.randrange(2)]
            p = {
                "provider": provider,
                "model": model,
                "reservation": f"r-{k:x}",
                "call": 1 + k % 5,
                "reason": "deadline",
                "estimated": True,
                "cost_usd": round((60_000 * (pin or 0) + 8_000 * (pout or 0)) / 1e6, 6),
            }
        else:
            type_ = types[bisect.bisect(cum, rnd.random() * cum[-1])]
            if type_ == "tool.called":
                p = {
                    "name": TOOLS[k % 3],
                    "duration_ms": rnd.randint(1, 900),
                    "ok": True,
                    "bytes": rnd.randint(0, 50_000),
                }
            else:
                p = {"tool": f"tool{k % 997}", "attempt": 1 + k % 3}
        text = enc.encode(p).decode()
        h = link(prev, id_, ts, type_, session, text)
        rows.append((id_, ts, type_, session, text, h))
        prev = h
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")  # set-up only; not what is measured
    conn.executescript(_SCHEMA)
    for idx in ("events_ts", "events_type_ts", "events_session"):
        conn.execute(f"DROP INDEX {idx}")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO events (id, ts, type, session, payload, hash) VALUES (?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")
    conn.executescript(_SCHEMA)  # recreates the indexes in bulk
    t0 = time.perf_counter()
    rollups.catch_up(conn, n)
    folded = time.perf_counter() - t0
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    write_checkpoint(checkpoint_path_for(db), n, prev)
    return folded


def wait_started(client: Any, n: int) -> None:
    """Until the daemon started on an n-event ledger has made its own ``daemon.started``
    durable (it is appended just after the first ping can be answered), so every
    measured query sees the same ledger; up to 30 s."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ev = client.call("status")["events"]
        if ev["count"] > n and ev["durable"] == ev["count"]:
            return
        time.sleep(0.01)
