"""concurrent_reads: 200 clients mixing ``status``, ``events.list`` and ``events.summary``.

A ledger of 1,000,000 events is written directly (``bench/_ledger.py``, valid chain),
the daemon started on it, and 200 connections, split over 4 load processes (one epoll
loop each, no threads), run a closed loop for a fixed window: each sends its next
request when the previous one is answered, cycling through 5 ``status``, 4
``events.list {limit: 100}`` and 1 ``events.summary {by: day, since: 3 days ago}``
(about 10% of the ledger), starting at different points of the cycle. Requests still in
flight at the end of the window are waited for; every one must be answered with a
result. Per method: p50 and p99 latency; throughput of the window.

Then the same load again with every other grouping of ``events.summary`` added to the
cycle (``by`` hour, provider, model, type and session, since 3 days ago: issue 31), and
``status`` p99 of both runs is printed beside the unloaded baseline of the same run: 200
``status`` calls one after another, on the idle daemon, before the loads. ``--events N``
sets the ledger's size (issue 31 asks for >= 500,000).

Baseline, same run: the same 200 clients as threads of one process, each with its own
read-only sqlite3 connection, running the very same SQL (``tsukud.events.queries``) for
``events.list`` and ``events.summary`` (``status`` reads no SQL) for the same window.
Daemon CPU seconds are reported too, and the event loop thread's alone (what ``status``
waits behind): wall figures are noisy on a shared machine.
Goals: p99 ``status`` <= 20 ms, every request answered.
"""

from __future__ import annotations

import json
import multiprocessing
import resource
import selectors
import socket
import sqlite3
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import cpu_seconds, fmt, goal, header, line, note, parse_args, percentile, temp_home
from _ledger import build_ledger, wait_started

from tsukud.clock import iso
from tsukud.events.queries import EventFilter, iter_list, run_summary

NAME = "concurrent_reads"
GOAL_STATUS_P99_MS = 20.0
CLIENTS = 200
PROCS = 4
CYCLE = ["status"] * 5 + ["events.list"] * 4 + ["events.summary"]
SESSION = "events.summary:session"  # a label: the method is events.summary
# Every other grouping a summary has (labels too), session among them.
OTHER_GROUPINGS = [f"events.summary:{by}" for by in ("hour", "provider", "model", "type")]
CYCLE_SESSION = [*CYCLE, *OTHER_GROUPINGS, SESSION]
IDLE_STATUS = 200
LIST_LIMIT = 100
SUMMARY_BY = "day"
SUMMARY_DAYS = 3
HEADER = struct.Struct(">I")


def requests(since: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """Label -> (method, params) of every request a cycle may hold."""
    return {
        "status": ("status", {}),
        "events.list": ("events.list", {"limit": LIST_LIMIT}),
        "events.summary": ("events.summary", {"by": SUMMARY_BY, "filter": {"since": since}}),
        SESSION: ("events.summary", {"by": "session", "filter": {"since": since}}),
        **{
            label: ("events.summary", {"by": label.split(":")[1], "filter": {"since": since}})
            for label in OTHER_GROUPINGS
        },
    }


# ---- the daemon's side: load processes ------------------------------------------------------


def drive(
    path: str,
    first: int,
    count: int,
    since: str,
    start_at: float,
    seconds: float,
    out: Any,
    cycle: list[str],
) -> None:
    """One load process: ``count`` connections (clients ``first``..), closed loop, one
    request in flight each; sends ``{label: [ms, ...]}``, errors and leftovers to ``out``."""
    params = {label: requests(since)[label] for label in cycle}
    sel = selectors.DefaultSelector()
    conns = []
    for _ in range(count):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        conns.append(s)
    state: dict[socket.socket, list[Any]] = {}  # sock -> [buf, step, method, sent_at]
    lat: dict[str, list[float]] = {m: [] for m in params}
    late: dict[str, list[float]] = {m: [] for m in params}  # answered after the window
    errors: dict[str, int] = {}
    ids = iter(range(1, 1 << 62))

    def send(s: socket.socket, st: list[Any]) -> None:
        label = cycle[st[1] % len(cycle)]
        st[1] += 1
        method, p = params[label]
        body = json.dumps({"id": next(ids), "method": method, "params": p}).encode()
        st[2], st[3] = label, time.perf_counter()
        s.sendall(HEADER.pack(len(body)) + body)

    while time.time() < start_at:
        time.sleep(0.001)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    end = time.perf_counter() + seconds
    for k, s in enumerate(conns):
        state[s] = [bytearray(), first + k, "", 0.0]
        sel.register(s, selectors.EVENT_READ)
        send(s, state[s])
    inflight = len(conns)
    drain_deadline = end + 120
    while inflight and time.perf_counter() < drain_deadline:
        for key, _ in sel.select(timeout=1.0):
            s = key.fileobj
            assert isinstance(s, socket.socket)
            st = state[s]
            chunk = s.recv(1 << 20)
            if not chunk:
                errors["closed"] = errors.get("closed", 0) + 1
                sel.unregister(s)
                inflight -= 1
                continue
            buf = st[0]
            buf += chunk
            pos = 0
            final = False
            while len(buf) - pos >= 4:
                (n,) = HEADER.unpack_from(buf, pos)
                if len(buf) - pos - 4 < n:
                    break
                body = bytes(buf[pos + 4 : pos + 4 + n])
                pos += 4 + n
                at = body.index(b',"') + 2  # {"id":N,"<kind>": ...
                kind = body[at : at + 4]
                if kind == b"prog":
                    continue
                final = True
                now = time.perf_counter()
                if kind == b"resu":
                    (lat if now <= end else late)[st[2]].append((now - st[3]) * 1000)
                else:
                    code = json.loads(body).get("error", {}).get("code", "?")
                    errors[code] = errors.get(code, 0) + 1
            del buf[:pos]
            if final:
                if time.perf_counter() < end:
                    send(s, st)
                else:
                    sel.unregister(s)
                    inflight -= 1
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    for s in conns:
        s.close()
    out.send(
        {
            "lat": lat,
            "late": late,
            "errors": errors,
            "unanswered": inflight,
            "cpu": cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime,
        }
    )
    out.close()


def run_daemon_load(
    path: str, since: str, seconds: float, cycle: list[str] = CYCLE
) -> dict[str, Any]:
    ctx = multiprocessing.get_context("fork")
    per = [CLIENTS // PROCS + (1 if i < CLIENTS % PROCS else 0) for i in range(PROCS)]
    start_at = time.time() + 1.0  # after every process has connected
    pipes, procs, first = [], [], 0
    for count in per:
        recv, send = ctx.Pipe(duplex=False)
        p = ctx.Process(
            target=drive, args=(path, first, count, since, start_at, seconds, send, cycle)
        )
        p.start()
        send.close()
        pipes.append(recv)
        procs.append(p)
        first += count
    results = [r.recv() for r in pipes]
    for p in procs:
        p.join(timeout=30)
    merged: dict[str, Any] = {
        "lat": {},
        "late": {},
        "errors": {},
        "unanswered": 0,
        "cpu": 0.0,
    }
    for r in results:
        for key in ("lat", "late"):
            for m, xs in r[key].items():
                merged[key].setdefault(m, []).extend(xs)
        for code, k in r["errors"].items():
            merged["errors"][code] = merged["errors"].get(code, 0) + k
        merged["unanswered"] += r["unanswered"]
        merged["cpu"] += r["cpu"]
    return merged


def idle_status(c: Any, n: int = IDLE_STATUS) -> list[float]:
    """``status`` latencies (ms) on the idle daemon: the unloaded baseline."""
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.call("status")
        out.append((time.perf_counter() - t0) * 1000)
        time.sleep(0.002)
    return out


# ---- the baseline: the same SQL from threads ------------------------------------------------


def run_raw_load(db: Path, since: str, seconds: float) -> tuple[dict[str, list[float]], int]:
    """The same clients as threads running the same SQL directly (``status`` skipped):
    the latency of every query started in the window, and how many ended in it."""
    f_list, f_sum = EventFilter(), EventFilter(since=since)
    work: dict[str, Callable[[sqlite3.Connection], object]] = {
        "events.list": lambda c: [r for rows in iter_list(c, f_list, LIST_LIMIT) for r in rows],
        "events.summary": lambda c: run_summary(c, f_sum, SUMMARY_BY),
    }
    lat: dict[str, list[float]] = {m: [] for m in work}
    in_window = 0
    lock = threading.Lock()
    start = threading.Barrier(CLIENTS + 1)
    end_box: list[float] = []

    def client(k: int) -> None:
        nonlocal in_window
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False)
        mine: dict[str, list[float]] = {m: [] for m in work}
        done = 0
        step = k
        start.wait()
        end = end_box[0]
        try:
            while time.perf_counter() < end:
                method = CYCLE[step % len(CYCLE)]
                step += 1
                if method not in work:
                    continue
                t0 = time.perf_counter()
                work[method](conn)
                t1 = time.perf_counter()
                mine[method].append((t1 - t0) * 1000)
                done += t1 <= end
        finally:
            conn.close()
        with lock:
            in_window += done
            for m, xs in mine.items():
                lat[m].extend(xs)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    end_box.append(time.perf_counter() + seconds)
    start.wait()
    for t in threads:
        t.join()
    return lat, in_window


# ---- report -----------------------------------------------------------------------------------


def main() -> int:
    args = parse_args(__doc__ or "", ledger=True)
    n = args.events or (200_000 if args.quick else 1_000_000)
    seconds = 8.0 if args.quick else 20.0
    header(NAME, args.quick)
    since = iso(time.time() - SUMMARY_DAYS * 86400)
    with temp_home() as h:
        t0 = time.perf_counter()
        build_ledger(h.db, n)
        built = time.perf_counter() - t0
        h.start(timeout=60)
        assert h.proc is not None
        with h.client() as c:  # let daemon.started land, warm the page cache
            wait_started(c, n)
            for method, params in requests(since).values():
                c.call(method, params)
            idle = idle_status(c)
        cpu0, loop0 = cpu_seconds(h.proc.pid), cpu_seconds(h.proc.pid, h.proc.pid)
        d = run_daemon_load(h.socket, since, seconds)
        cpu1, loop1 = cpu_seconds(h.proc.pid), cpu_seconds(h.proc.pid, h.proc.pid)
        ds = run_daemon_load(h.socket, since, seconds, CYCLE_SESSION)
        try:
            with h.client() as c:
                alive = c.call("status")["pid"] == h.proc.pid
        except Exception:  # refused, closed, gone: reported below
            alive = False
        h.stop()
        raw, raw_queries = run_raw_load(h.db, since, seconds)

    note(
        NAME,
        f"{n:,} events (built directly in {fmt(built)} s); {CLIENTS} connections over"
        f" {PROCS} epoll load processes, closed loop for {seconds:g} s, cycling 5 status,"
        f" 4 events.list {{limit: {LIST_LIMIT}}}, 1 events.summary {{by: {SUMMARY_BY},"
        f" since: {SUMMARY_DAYS} days ago}}; baseline: {CLIENTS} threads running the same"
        " SQL with sqlite3 directly, same window",
    )
    answered = 0
    for method in dict.fromkeys(CYCLE):
        # Latency of every request sent in the window, including those answered after it.
        xs = d["lat"][method] + d["late"][method]
        answered += len(xs)
        short = method.removeprefix("events.")
        if not xs:
            print(f"{NAME}.{short}: no answer", flush=True)
            continue
        p50, p99 = percentile(xs, 50), percentile(xs, 99)
        count = f"{len(xs):,} answered"
        base = raw.get(method)
        if base is None:
            line(f"{NAME}.{short}.p50", p50, "ms", None, "in-memory, no SQL")
            line(f"{NAME}.{short}.p99", p99, "ms", None, "in-memory, no SQL", count)
        elif not base:
            line(f"{NAME}.{short}.p50", p50, "ms", None, "raw sqlite3: none finished")
            line(f"{NAME}.{short}.p99", p99, "ms", None, "raw sqlite3: none finished", count)
        else:
            b50, b99 = percentile(base, 50), percentile(base, 99)
            line(f"{NAME}.{short}.p50", p50, "ms", p50 / b50, f"raw sqlite3 {fmt(b50)} ms")
            line(f"{NAME}.{short}.p99", p99, "ms", p99 / b99, f"raw sqlite3 {fmt(b99)} ms", count)
    queries = sum(len(d["lat"][m]) for m in raw)
    total = sum(len(xs) for xs in d["lat"].values())
    line(
        f"{NAME}.throughput",
        queries / seconds,
        "queries/s",
        queries / max(1, raw_queries),
        f"raw sqlite3 {fmt(raw_queries / seconds)} queries/s",
        f"events.list + events.summary answered in the window; with status:"
        f" {fmt(total / seconds)} requests/s",
    )
    if cpu0 is not None and cpu1 is not None:
        line(
            f"{NAME}.daemon_cpu",
            cpu1 - cpu0,
            "s",
            None,
            "",
            f"daemon CPU over the window and drain, {fmt((cpu1 - cpu0) / max(1, answered) * 1e3)}"
            f" ms per answered request; load processes {fmt(d['cpu'])} s",
        )
    if loop0 is not None and loop1 is not None:
        # What `status` queues behind: the event loop's own work (the main thread).
        line(
            f"{NAME}.loop_cpu",
            loop1 - loop0,
            "s",
            None,
            "",
            f"the event loop thread's CPU, {fmt((loop1 - loop0) / max(1, answered) * 1e3)}"
            " ms per answered request",
        )
    failed = sum(d["errors"].values()) + d["unanswered"]
    if failed:
        print(f"{NAME}.errors: {json.dumps(d['errors'])}, unanswered {d['unanswered']}")
    failed_s = sum(ds["errors"].values()) + ds["unanswered"]
    if failed_s:
        print(
            f"{NAME}.errors_with_session: {json.dumps(ds['errors'])}, unanswered {ds['unanswered']}"
        )
    idle_p99 = percentile(idle, 99)
    unloaded = f"unloaded {fmt(idle_p99)} ms (p50 {fmt(percentile(idle, 50))} ms), same run"
    xs = ds["lat"][SESSION] + ds["late"][SESSION]
    if xs:
        line(
            f"{NAME}.summary_session.p99",
            percentile(xs, 99),
            "ms",
            None,
            f"p50 {fmt(percentile(xs, 50))} ms",
            f"{len(xs):,} answered; by session since {SUMMARY_DAYS} days ago, in the second"
            " mix (every grouping)",
        )
    p99s = {}
    for key, run, mix in (
        ("status_p99", d, "without --by session"),
        ("status_p99_with_session", ds, "every grouping, --by session too, in the mix"),
    ):
        status = run["lat"]["status"]
        p99s[key] = percentile(status, 99) if status else float("inf")
        line(f"{NAME}.{key}", p99s[key], "ms", p99s[key] / idle_p99, unloaded, mix)
    for key, p99 in p99s.items():
        goal(
            f"{NAME}.{key}",
            p99 <= GOAL_STATUS_P99_MS,
            f"status p99 {fmt(p99)} ms <= {GOAL_STATUS_P99_MS:g} ms under {CLIENTS} mixed"
            f" clients ({unloaded})",
        )
    failed += failed_s
    goal(
        f"{NAME}.answered",
        not failed and alive,
        f"{answered:,} answered, {failed} refused or unanswered, daemon"
        f" {'up' if alive else 'gone'} after the run",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
