"""rpc_roundtrip: ``ping`` latency and throughput through tsukud's RPC server.

Latency: 10,000 sequential ``ping`` calls over one connection with the real client
(``tsukuctl.client.Client``), each timed alone; p50 and p99. Throughput: 50 concurrent
connections driven by closed-loop load-generator processes (bench/_load.py): first with
one request in flight per connection (50 clients each waiting for its answer), then with
8 pipelined requests per connection. Every figure is also measured against a minimal
stdlib server with the same framing (bench/_echo.py: one thread, selectors, json), so
the ratio is the daemon's own overhead. Goal (issue 32): server CPU per call <= 3.0x the
echo server's, same run (CPU time: wall time on a shared machine is noise).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from _common import (
    PY,
    Client,
    cpu_seconds,
    fmt,
    goal,
    header,
    line,
    not_measured,
    note,
    parse_args,
    percentile,
    running_daemon,
    wait_ping,
)

NAME = "rpc_roundtrip"
HERE = Path(__file__).resolve().parent
GOAL_RATIO = 3.0  # server CPU per call / the echo server's
CLIENTS = 50


def sequential(connect: Callable[[], Client], n: int) -> list[float]:
    """Milliseconds per call of n sequential pings over one connection (after warm-up)."""
    clock = time.perf_counter_ns
    out = []
    with connect() as c:
        for _ in range(500):
            c.call("ping")
        for _ in range(n):
            t0 = clock()
            c.call("ping")
            out.append((clock() - t0) / 1e6)
    return out


def throughput(
    path: str, pid: int, procs: int, depth: int, seconds: float
) -> tuple[float, int, float | None]:
    """(calls/s, error frames, server CPU us per call) with CLIENTS connections split over
    ``procs`` load processes."""
    cpu0 = cpu_seconds(pid)
    per = [CLIENTS // procs + (1 if i < CLIENTS % procs else 0) for i in range(procs)]
    start_at = time.time() + 0.5  # after every process has connected
    ps = [
        subprocess.Popen(
            [
                PY,
                str(HERE / "_load.py"),
                path,
                str(k),
                str(depth),
                repr(start_at),
                str(seconds),
                "ping",
            ],
            stdout=subprocess.PIPE,
        )
        for k in per
    ]
    calls = errors = 0
    for p in ps:
        out, _ = p.communicate(timeout=seconds + 30)
        if p.returncode != 0:
            raise RuntimeError(f"load generator failed ({p.returncode})")
        r = json.loads(out)
        calls += r["calls"]
        errors += r["errors"]
    cpu1 = cpu_seconds(pid)
    # CPU over the whole run (connects, window, drain) / calls in the window: a slight
    # overestimate, the same for both servers.
    per_call = None if cpu0 is None or cpu1 is None or not calls else (cpu1 - cpu0) / calls * 1e6
    return calls / seconds, errors, per_call


class EchoServer:
    def __init__(self, path: str) -> None:
        self.path = path
        self.proc = subprocess.Popen([PY, str(HERE / "_echo.py"), path])
        wait_ping(path, self.proc, timeout=10)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)
        if os.path.exists(self.path):
            os.unlink(self.path)


def main() -> int:
    args = parse_args(__doc__ or "")
    n = 2_000 if args.quick else 10_000
    secs = 1.5 if args.quick else 3.0
    header(NAME, args.quick)
    with running_daemon() as h:
        echo = EchoServer(str(h.path / "echo.sock"))
        try:
            assert h.proc is not None
            servers = {"tsukud": h.socket, "echo": echo.path}
            pids = {"tsukud": h.proc.pid, "echo": echo.proc.pid}
            lat = {
                k: sequential(lambda p=p: Client.connect(p, autostart=False), n)
                for k, p in servers.items()
            }
            layouts = [(1, 1), (2, 1), (4, 1), (2, 8)]  # (processes, depth)
            rps: dict[tuple[str, int, int], float] = {}
            cpu: dict[tuple[str, int, int], float | None] = {}
            errs = 0
            for procs, depth in layouts:
                for k, p in servers.items():
                    r, e, c = throughput(p, pids[k], procs, depth, secs)
                    rps[(k, procs, depth)] = r
                    cpu[(k, procs, depth)] = c
                    errs += e
        finally:
            echo.close()

    p50 = {k: percentile(v, 50) for k, v in lat.items()}
    p99 = {k: percentile(v, 99) for k, v in lat.items()}
    note(
        NAME,
        f"latency: {n:,} sequential pings on one connection with tsukuctl.client.Client,"
        " each timed alone, after 500 warm-up calls; throughput: 50 connections split over"
        " N load-generator processes (bench/_load.py, one epoll loop each, no threads),"
        f" closed loop, {secs:g} s window; baseline: bench/_echo.py, a one-thread stdlib"
        " selectors+json server with the same framing and answer",
    )
    line(
        f"{NAME}.p50",
        p50["tsukud"],
        "ms",
        p50["tsukud"] / p50["echo"],
        f"echo server {fmt(p50['echo'])} ms",
    )
    line(
        f"{NAME}.p99",
        p99["tsukud"],
        "ms",
        p99["tsukud"] / p99["echo"],
        f"echo server {fmt(p99['echo'])} ms",
    )
    for procs, depth in layouts:
        d, e = rps[("tsukud", procs, depth)], rps[("echo", procs, depth)]
        what = (
            f"{CLIENTS} connections over {procs} process{'es' if procs > 1 else ''},"
            f" {depth} request{'s' if depth > 1 else ''} in flight each"
        )
        line(
            f"{NAME}.throughput_{procs}p_depth{depth}",
            d,
            "calls/s",
            d / e,
            f"echo server {fmt(e)} calls/s",
            what,
        )
    best = max(
        (procs for procs, depth in layouts if depth == 1), key=lambda p: rps[("tsukud", p, 1)]
    )
    head, head_echo = rps[("tsukud", best, 1)], rps[("echo", best, 1)]
    line(
        f"{NAME}.throughput_50_clients",
        head,
        "calls/s",
        head / head_echo,
        f"echo server {fmt(head_echo)} calls/s",
        f"best of the one-request-in-flight layouts: {best} load process(es)",
    )
    dc, ec = cpu[("tsukud", best, 1)], cpu[("echo", best, 1)]
    if dc is not None and ec is not None:
        line(
            f"{NAME}.server_cpu",
            dc,
            "us/call",
            dc / ec,
            f"echo server {fmt(ec)} us/call",
            f"server process CPU per answered call in the {best}-process layout; less noisy"
            " than wall time on a shared machine",
        )
    if errs:
        print(f"{NAME}.errors: {errs} error frames during the throughput runs", flush=True)
    if dc is None or ec is None:
        not_measured(f"{NAME}.server_cpu", f"<= {GOAL_RATIO}x the echo server's", "no /proc")
    else:
        goal(
            f"{NAME}.server_cpu",
            dc / ec <= GOAL_RATIO,
            f"server CPU per call {fmt(dc)} us = {dc / ec:.2f}x the echo server's"
            f" {fmt(ec)} us <= {GOAL_RATIO}x, same run",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
