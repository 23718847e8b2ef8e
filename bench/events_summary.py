"""events_summary: ``events.summary --by day`` over a 1,000,000-event ledger.

The ledger is written directly (daemon stopped) with the real chain function
``tsukud.events.chain.link`` and the store's canonical payload encoding, so ``events
verify`` passes on it: 30 days of a realistic mix, 5% ``llm.turn`` events (provider,
model, tokens, cost; 2% of turns unpriced), the rest tool calls, validations,
generations, repairs and discoveries, in sessions of ~20 events. Then the daemon is
started on it and the RPC (``tsukuctl.client.Client``) is timed against running the
very same SQL (``tsukud.events.queries.summary_sql``) with sqlite3 on a fresh
connection, median of 5, interleaved, after one warm-up each. Goal: <= 1.2x raw.
"""

from __future__ import annotations

import random
import sqlite3
import sys
import time
from pathlib import Path

from _common import BIN, fmt, goal, header, line, median, note, parse_args, temp_home, time_cmd

from tsukud.clock import iso
from tsukud.events.chain import GENESIS, link
from tsukud.events.queries import EventFilter, summary_sql
from tsukud.events.store import _SCHEMA

NAME = "events_summary"
GOAL_RATIO = 1.2
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


def build_ledger(db: Path, n: int, seed: int = 42) -> None:
    """Write n hash-chained events spread over the last DAYS days (ending a minute ago)."""
    import msgspec

    enc = msgspec.json.Encoder(order="sorted")  # EventStore's canonical payload form
    rnd = random.Random(seed)
    types, weights = zip(*OTHER_TYPES, strict=True)
    cum = list(__import__("itertools").accumulate(weights))
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
        else:
            type_ = types[__import__("bisect").bisect(cum, rnd.random() * cum[-1])]
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
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()


def raw_summary(db: Path) -> list[tuple[object, ...]]:
    sql, params = summary_sql(EventFilter(), "day")
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def main() -> int:
    args = parse_args(__doc__ or "")
    n = 200_000 if args.quick else 1_000_000
    reps = 5
    header(NAME, args.quick)
    with temp_home() as h:
        t0 = time.perf_counter()
        build_ledger(h.db, n)
        built = time.perf_counter() - t0
        startup = h.start(timeout=60)
        rpc_t: list[float] = []
        raw_t: list[float] = []
        cli_t: list[float] = []
        with h.client() as c:
            # daemon.started is appended just after the first ping can be answered: let
            # it land so that every measured query sees the same ledger.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                ev = c.call("status")["events"]
                if ev["count"] > n and ev["durable"] == ev["count"]:
                    break
                time.sleep(0.01)
            params = {"by": "day", "filter": {}}
            res = c.call("events.summary", params)  # warm-up (page cache, both paths)
            raw = raw_summary(h.db)
            for _ in range(reps):
                t = time.perf_counter()
                c.call("events.summary", params)
                rpc_t.append(time.perf_counter() - t)
                t = time.perf_counter()
                raw_summary(h.db)
                raw_t.append(time.perf_counter() - t)
            cli_error = ""
            for _ in range(3):
                try:
                    cli_t.append(
                        time_cmd([str(BIN / "tsukuctl"), "events", "summary", "--by", "day"], h.env)
                    )
                except RuntimeError as e:  # the CLI figure is extra; keep the RPC one
                    cli_error = str(e).strip().splitlines()[-1]
                    break
            t = time.perf_counter()
            ver = c.call("events.verify")
            verify_s = time.perf_counter() - t
    if len(res["groups"]) != len(raw) or res["totals"]["events"] != sum(r[1] for r in raw):
        print(f"{NAME}.error: RPC and raw SQL disagree", flush=True)
        return 1
    rpc_ms, raw_ms = median(rpc_t) * 1000, median(raw_t) * 1000
    best_rpc, best_raw = min(rpc_t) * 1000, min(raw_t) * 1000
    note(
        NAME,
        f"{n:,} events over {DAYS} days ({res['totals']['llm_turns']:,} llm.turn,"
        f" {len(raw)} day groups), written directly with chain.link (build {fmt(built)} s);"
        f" median of {reps}: events.summary {{by: day}} via tsukuctl.client.Client vs"
        " summary_sql run with sqlite3 on a fresh read-only connection (connect + execute +"
        " fetchall), interleaved, warm page cache",
    )
    line(
        NAME,
        rpc_ms,
        "ms",
        rpc_ms / raw_ms,
        f"raw sqlite3 {fmt(raw_ms)} ms",
        f"best of {reps}: {fmt(best_rpc)} vs {fmt(best_raw)} ms, {best_rpc / best_raw:.2f}x",
    )
    if cli_t:
        cli_ms = median(cli_t) * 1000
        line(
            f"{NAME}.cli",
            cli_ms,
            "ms",
            cli_ms / raw_ms,
            f"raw sqlite3 {fmt(raw_ms)} ms",
            f"`tsukuctl events summary --by day` wall time, median of {len(cli_t)}",
        )
    else:
        print(f"{NAME}.cli: not measured (tsukuctl failed: {cli_error})", flush=True)
    line(
        f"{NAME}.daemon_startup",
        startup * 1000,
        "ms",
        None,
        "",
        f"spawn to first ping answered on the {n:,}-event ledger",
    )
    line(
        f"{NAME}.verify",
        verify_s * 1000,
        "ms",
        None,
        "",
        f"events.verify checked {ver['checked']:,} events, ok={ver['ok']}",
    )
    goal(NAME, rpc_ms <= GOAL_RATIO * raw_ms, f"{fmt(rpc_ms / raw_ms)}x raw <= {GOAL_RATIO}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
