"""Run every benchmark in sequence and repeat their goal lines at the end.

    .venv/bin/python bench/run_all.py [--quick] [name ...]

Each benchmark runs as its own process (its own temporary TSUKU_HOME and daemon) with a
time limit; their output is passed through as it comes. Exit status: 1 if a benchmark
failed to run (a missed goal is reported, not a failure).
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
BENCHMARKS = ["status_wall", "rpc_roundtrip", "event_append", "events_summary", "cold_start"]
TIME_LIMIT_S = 180


def _relay(proc: subprocess.Popen[str], goals: list[str]) -> None:
    assert proc.stdout is not None
    for out_line in proc.stdout:
        sys.stdout.write(out_line)
        sys.stdout.flush()
        if ".goal:" in out_line:
            goals.append(out_line.rstrip())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes for every benchmark")
    ap.add_argument("names", nargs="*", metavar="name", help=f"any of {', '.join(BENCHMARKS)}")
    args = ap.parse_args()
    names = args.names or BENCHMARKS
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(unknown)}")
    goals: list[str] = []
    failed: list[str] = []
    started = time.perf_counter()
    print(f"# load average at start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for name in names:
        argv = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if args.quick else [])]
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
        reader = threading.Thread(target=_relay, args=(proc, goals), daemon=True)
        reader.start()
        try:
            rc = proc.wait(timeout=TIME_LIMIT_S)
        except subprocess.TimeoutExpired:
            print(f"# {name}: over {TIME_LIMIT_S} s, stopping it", flush=True)
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
    print(
        f"# all: {time.perf_counter() - started:.1f} s;"
        f" load average at end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    print("# goals:")
    for g in goals:
        print(g)
    if failed:
        print(f"# FAILED to run: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
