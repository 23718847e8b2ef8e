"""batch: ``tsukuctl batch run --deterministic-only`` over a queue of sources from the
fakes, at the default ``--jobs`` against ``--jobs 1`` in the same run.

The world (``tests/fakes/batch_world.py``) is a maintainer's queue: GitHub releases
(the human recipes renamed per tool), npm packages, PyPI wheels and Homebrew bottles,
one source in twelve broken on purpose. Every fake answer waits ``LATENCY_S``, as a
registry across the internet does, so the work is I/O-bound the way a real batch is.
Recipes are validated in the real container unless no runtime is there (then
``--skip-validation``, said in the output).

Each mode runs in a fresh home with a fresh daemon: ``batch add -`` of the whole queue,
then a timed ``batch run``. Reported: jobs per second of each mode, their ratio (goal:
at least 1.8x on 2 cores), and the machine's use during each run (CPU busy %, from
/proc/stat: the share of all cores' time not idle).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import Any

from _common import BIN, fmt, goal, header, line, note, parse_args, temp_home, wait_ping

NAME = "batch"
GOAL_RATIO = 1.8
LATENCY_S = 0.05


def cpu_times() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores so far."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def docker_available() -> bool:
    cp = subprocess.run(["docker", "info"], capture_output=True, check=False)
    return cp.returncode == 0


def ctl(env: dict[str, str], *args: str, stdin: str | None = None) -> Any:
    cp = subprocess.run(
        [str(BIN / "tsukuctl"), "batch", *args, "--json"],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    if cp.returncode not in (0, 1):  # 1: the run ended with failed jobs, as expected
        raise RuntimeError(f"tsukuctl batch {args[0]} failed ({cp.returncode}): {cp.stderr}")
    return json.loads(cp.stdout.strip().splitlines()[-1])


def run_once(world: Any, jobs: int | None, validate: bool) -> tuple[float, float, dict[str, Any]]:
    """Seconds of one ``batch run``, the CPU busy share during it, and its result."""
    with temp_home("tkb-batch-") as h:
        h.env.update(world.env())
        h.spawn()
        wait_ping(h.socket, h.proc)
        ctl(h.env, "add", "-", stdin=world.queue_text())
        argv = ["run", "--deterministic-only", "--yes"]
        if not validate:
            argv.append("--skip-validation")
        if jobs is not None:
            argv += ["--jobs", str(jobs)]
        busy0, total0 = cpu_times()
        t0 = time.perf_counter()
        result = ctl(h.env, *argv)
        wall = time.perf_counter() - t0
        busy1, total1 = cpu_times()
        status = ctl(h.env, "status")
    busy = (busy1 - busy0) / max(1, total1 - total0)
    return wall, busy, {"run": result, "status": status}


def main() -> int:
    import sys

    from _common import REPO

    sys.path.insert(0, str(REPO))
    from tests.fakes.batch_world import batch_world

    args = parse_args(__doc__ or "")
    n = 60 if args.quick else 300
    header(NAME, args.quick)
    validate = docker_available()
    world = batch_world(n)
    world.set_latency(LATENCY_S)
    note(
        NAME,
        f"{n} sources ({len(world.expected('failed'))} broken on purpose), every fake answer "
        f"{LATENCY_S * 1000:.0f} ms late, "
        + (
            "validated in the container" if validate else "--skip-validation (no container runtime)"
        ),
    )
    with world:
        results = {}
        for label, jobs in (("jobs1", 1), ("default", None)):
            wall, busy, out = run_once(world, jobs, validate)
            counts = out["status"].get("counts", {})
            want = (len(world.expected("done")), len(world.expected("failed")))
            if (counts.get("done"), counts.get("failed")) != want:
                raise RuntimeError(f"{label}: expected done/failed {want}, got {counts}")
            rate = n / wall
            results[label] = rate
            line(
                f"{NAME}.{label}",
                rate,
                "jobs/s",
                None,
                f"{fmt(wall)} s for {n}",
                f"CPU busy {busy * 100:.0f}% of {os.cpu_count()} cores; {json.dumps(counts)}",
            )
    ratio = results["default"] / results["jobs1"]
    line(f"{NAME}.speedup", ratio, "x", None, "default --jobs over --jobs 1")
    goal(
        NAME,
        ratio >= GOAL_RATIO,
        f"{ratio:.2f}x the jobs per second of --jobs 1; goal {GOAL_RATIO}x",
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
