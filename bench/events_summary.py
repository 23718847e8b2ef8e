"""events_summary: ``events.summary --by day`` over a 1,000,000-event ledger.

The ledger is written directly (daemon stopped) by ``bench/_ledger.py``, with a valid
hash chain (``events verify`` passes on it). Then the daemon is started on it and the
RPC (``tsukuctl.client.Client``) is timed against running the very same SQL
(``tsukud.events.queries.summary_sql``) with sqlite3 on a fresh connection, median of
5, interleaved, after one warm-up each. Goal: <= 1.2x raw.
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path

from _common import BIN, fmt, goal, header, line, median, note, parse_args, temp_home, time_cmd
from _ledger import DAYS, build_ledger, wait_started

from tsukud.events.queries import EventFilter, summary_sql

NAME = "events_summary"
GOAL_RATIO = 1.2


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
            wait_started(c, n)
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
