"""events_summary: ``events.summary`` over a 1,000,000-event ledger, answered from rollups.

The ledger is written directly (daemon stopped) by ``bench/_ledger.py``, with a valid
hash chain (``events verify`` passes on it) and its summary rollups folded as a daemon
opening an older ledger folds them (that fold is timed too). Then the daemon is started
on it and ``events.summary {by: day}`` (answered from the rollups) is timed through the
RPC (``tsukuctl.client.Client``) against the same summary computed from the raw events
with sqlite3 on a fresh connection (``tsukud.events.queries.summary_sql``, the SQL the
rollups are held to), median of 5, interleaved, after one warm-up each. Both answers
must be identical. Also: the other groupings the rollups answer (once each: the raw
side takes seconds), a ``since`` inside an hour (rollups + the part-hour from the
events), and ``tsukuctl events summary``'s wall time. Goal: <= 100 ms over 1 M events
(``--quick``: 200 k).
"""

from __future__ import annotations

import sqlite3
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
from _common import BIN, fmt, goal, header, line, median, note, parse_args, temp_home, time_cmd
from _ledger import DAYS, build_ledger, wait_started

from tsukud.clock import iso
from tsukud.events.queries import EventFilter, SummaryRow, run_summary

NAME = "events_summary"
GOAL_MS = 100.0
REPS = 5


def raw_summary(db: Path, f: EventFilter, by: str) -> list[SummaryRow]:
    """The summary from the raw events: connect, execute, fetch (no rollups)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return run_summary(conn, f, by)
    finally:
        conn.close()


def timed(
    c: Any, db: Path, filt: dict[str, Any], by: str, reps: int = REPS
) -> tuple[list[float], list[float]]:
    """RPC and raw seconds, interleaved, after one warm-up each; raises when they differ."""
    params = {"by": by, "filter": filt}
    res = c.call("events.summary", params)
    raw = msgspec.to_builtins(raw_summary(db, EventFilter(**filt), by))
    listed = res["groups"]
    rest = res.get("rest", {}).get("groups", 0)  # past the most one answer lists
    kept = {g["key"] for g in listed}
    if listed != [g for g in raw if g["key"] in kept] or len(raw) != len(listed) + rest:
        raise SystemExit(f"{NAME}.error: rollups and raw SQL disagree (by {by}, {filt})")
    rpc_t: list[float] = []
    raw_t: list[float] = []
    for _ in range(reps):
        t = time.perf_counter()
        c.call("events.summary", params)
        rpc_t.append(time.perf_counter() - t)
        t = time.perf_counter()
        raw_summary(db, EventFilter(**filt), by)
        raw_t.append(time.perf_counter() - t)
    return rpc_t, raw_t


def main() -> int:
    args = parse_args(__doc__ or "")
    n = 200_000 if args.quick else 1_000_000
    header(NAME, args.quick)
    others: dict[str, tuple[list[float], list[float], str]] = {}
    with temp_home() as h:
        t0 = time.perf_counter()
        fold_s = build_ledger(h.db, n)
        built = time.perf_counter() - t0
        startup = h.start(timeout=60)
        with h.client() as c:
            wait_started(c, n)
            res = c.call("events.summary", {"by": "day"})
            rpc_t, raw_t = timed(c, h.db, {}, "day")
            for by in ("provider", "model", "type"):
                others[by] = (*timed(c, h.db, {}, by, 1), "whole ledger, once")
            # By session: since a whole hour 3 days ago (the whole ledger's thousands of
            # sessions would not fit one answer frame).
            hour = iso(time.time() - 3 * 86400)[:13]
            src = c.call("events.summary", {"by": "session", "filter": {"since": hour}})["source"]
            others["session_since"] = (
                *timed(c, h.db, {"since": hour}, "session", 1),
                f"since a whole hour 3 days ago: {src}, once",
            )
            since = iso(time.time() - 3 * 86400 - 3600)  # inside a day
            src = c.call("events.summary", {"by": "day", "filter": {"since": since}})["source"]
            others["day_since"] = (
                *timed(c, h.db, {"since": since}, "day"),
                f"since 3 days ago: {src}, median of {REPS}",
            )
            cli_error = ""
            cli_t: list[float] = []
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
    rpc_ms, raw_ms = median(rpc_t) * 1000, median(raw_t) * 1000
    note(
        NAME,
        f"{n:,} events over {DAYS} days ({res['totals']['llm_turns']:,} llm.turn,"
        f" {len(res['groups'])} day groups, source {res['source']}), written directly with"
        f" chain.link (build {fmt(built)} s); median of {REPS}: events.summary via"
        " tsukuctl.client.Client vs summary_sql over the raw events run with sqlite3 on a"
        " fresh read-only connection (connect + execute + fetchall), interleaved, warm page"
        " cache; both answers identical",
    )
    line(
        NAME,
        rpc_ms,
        "ms",
        rpc_ms / raw_ms,
        f"raw sqlite3 {fmt(raw_ms)} ms",
        f"by day; best of {REPS}: {fmt(min(rpc_t) * 1000)} vs {fmt(min(raw_t) * 1000)} ms",
    )
    for key, (r, b, what) in others.items():
        ms, base = median(r) * 1000, median(b) * 1000
        line(f"{NAME}.{key}", ms, "ms", ms / base, f"raw sqlite3 {fmt(base)} ms", what)
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
        f"{NAME}.rollup_fold",
        fold_s * 1000,
        "ms",
        None,
        "",
        f"folding the rollups of {n:,} events from scratch (what a daemon does once when it"
        " opens a ledger from before rollups)",
    )
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
    goal(
        NAME,
        rpc_ms <= GOAL_MS,
        f"{fmt(rpc_ms)} ms <= {GOAL_MS:g} ms over {n:,} events, {fmt(rpc_ms / raw_ms)}x raw SQL",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
