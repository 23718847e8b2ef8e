"""Run every benchmark in sequence and repeat their goal lines at the end.

    .venv/bin/python bench/run_all.py [--quick] [--wait-idle S] [name ...]

Each benchmark runs as its own process (its own temporary TSUKU_HOME and daemon) with a
time limit; their output is passed through as it comes. The closing list has every goal
of the benchmarks run: met, NOT met, or NOT MEASURED with the reason (no container
runtime, the benchmark failed or ran out of time), never silently left out. Exit status:
1 if a benchmark failed to run (a missed goal is reported, not a failure).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# Every benchmark run_all runs, in order, with the goals it reports (the names before
# ".goal:" in its output). create_replayed compares against the deterministic create
# and has no goal of its own.
GOALS: dict[str, tuple[str, ...]] = {
    # the daemon and its ledger
    "status_wall": ("status_wall",),
    "rpc_roundtrip": ("rpc_roundtrip.server_cpu",),
    "event_append": ("event_append",),
    "events_summary": ("events_summary",),
    "concurrent_reads": (
        "concurrent_reads.status_p99",
        "concurrent_reads.status_p99_with_session",
        "concurrent_reads.answered",
    ),
    "cold_start": ("cold_start",),
    # install, create, validation, discovery, shell hook
    "install_throughput": ("install_throughput",),
    "create_deterministic": ("create_deterministic",),
    "create_replayed": (),
    "validation_overhead": ("validation_overhead",),
    "discovery": ("discovery",),
    "command_not_found": ("command_not_found",),
    # a page's visible text: headless Chromium per page vs its own start (issue 33)
    "page_render": ("page_render",),
    # a maintainer's queue: batch run at the default --jobs against --jobs 1 (issue 24);
    # three daemons on one PostgreSQL against one (issue 25)
    "batch": ("batch", "batch.pg_team"),
    # recipe accuracy (no daemon: the matcher over recorded release lists)
    "matcher_accuracy": ("matcher_accuracy.newest", "matcher_accuracy.all"),
    # what share of a recipe registry parses and installs (no goal: a measure to follow)
    "registry_coverage": (),
}
BENCHMARKS = list(GOALS)
TIME_LIMIT_S = 180
# Longer limits: a batch of 300 sources validated in the container, four times (--jobs 1
# alone takes several minutes on 2 cores).
TIME_LIMITS_S = {"batch": 2400}


def goal_name(goal_line: str) -> str:
    return goal_line.split(".goal:", 1)[0].strip()


def goal_report(ran: dict[str, str | None], goal_lines: list[str]) -> list[str]:
    """Every goal of the benchmarks in ``ran`` (name -> why it failed, or None), in
    order: the line it printed, or NOT MEASURED with the reason it printed none; then
    any goal line the table does not know, as printed."""
    printed = {goal_name(g): g for g in goal_lines}
    report = [
        printed.get(name, f"{name}.goal: NOT MEASURED ({failure or 'no result printed'})")
        for bench, failure in ran.items()
        for name in GOALS.get(bench, ())
    ]
    return report + [g for g in goal_lines if g not in report]


def _relay(proc: subprocess.Popen[str], goals: list[str]) -> None:
    assert proc.stdout is not None
    for out_line in proc.stdout:
        sys.stdout.write(out_line)
        sys.stdout.flush()
        if ".goal:" in out_line:
            goals.append(out_line.rstrip())


def busy_fraction(sample_s: float = 1.0) -> float | None:
    """Share of all CPUs busy over ``sample_s`` seconds (Linux /proc/stat; None elsewhere)."""

    def read() -> tuple[int, int]:
        with open("/proc/stat") as f:
            vals = [int(x) for x in f.readline().split()[1:]]
        idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
        return sum(vals), idle

    try:
        t0, i0 = read()
        time.sleep(sample_s)
        t1, i1 = read()
    except OSError:
        return None
    return 1.0 - (i1 - i0) / max(1, t1 - t0)


def wait_idle(limit_s: float, threshold: float = 0.15) -> None:
    """On a shared machine, wait (up to limit_s) until other work leaves the CPUs alone."""
    deadline = time.monotonic() + limit_s
    busy = busy_fraction()
    while busy is not None and busy > threshold and time.monotonic() < deadline:
        busy = busy_fraction()
    if busy is not None:
        print(f"# cpu busy before start: {busy:.0%}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes for every benchmark")
    ap.add_argument(
        "--wait-idle",
        type=float,
        default=0.0,
        metavar="S",
        help="before each benchmark, wait up to S seconds for the CPUs to be idle",
    )
    ap.add_argument(
        "names",
        nargs="*",
        metavar="name",
        help=f"bench/<name>.py to run (default: {', '.join(BENCHMARKS)})",
    )
    args = ap.parse_args()
    names = args.names or BENCHMARKS
    # Any bench/<name>.py can be named; without names, the BENCHMARKS list runs.
    unknown = sorted(n for n in names if n.startswith("_") or not (HERE / f"{n}.py").is_file())
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(unknown)}")
    goals: list[str] = []
    failed: list[str] = []
    ran: dict[str, str | None] = {}
    started = time.perf_counter()
    print(f"# load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name in names:
        argv = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if args.quick else [])]
        if args.wait_idle > 0:
            wait_idle(args.wait_idle)
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        reader = threading.Thread(target=_relay, args=(proc, goals), daemon=True)
        reader.start()
        failure = None
        limit = TIME_LIMITS_S.get(name, TIME_LIMIT_S)
        try:
            rc = proc.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            failure = f"stopped after {limit} s"
            print(f"# {name}: over {limit} s, stopping it", flush=True)
            proc.terminate()  # SIGTERM: its finally blocks stop its daemon, remove its home
            try:
                rc = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                rc = proc.wait()
        reader.join(timeout=10)
        print(f"# {name}: {time.perf_counter() - t0:.1f} s, exit {rc}", flush=True)
        if rc != 0:
            failed.append(name)
            failure = failure or f"the benchmark failed (exit {rc})"
        ran[name] = failure
    print(
        f"# all: {time.perf_counter() - started:.1f} s;"
        f" load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("# goals:")
    for g in goal_report(ran, goals):
        print(g)
    if failed:
        print(f"# FAILED to run: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
