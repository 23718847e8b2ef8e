"""cold_start: from spawning tsukud to its first answered request.

Each run spawns ``python -m tsukud --foreground`` on the same TSUKU_HOME (created by a
first, untimed run, so each timed start opens an existing small ledger as a restarted
daemon does), polls the socket every millisecond with connect + ``ping`` until one is
answered, and takes the time from spawn to that answer; the daemon is then stopped
(untimed). Median of 10, interleaved with the baselines: ``python -c "import trio,
msgspec, structlog, sqlite3"`` (the import floor of the daemon) and ``python -c pass``.
Goal (issue 32): <= 1.15x the import floor of the same run, a ratio that holds on any
machine (the absolute 250 ms it replaces was set on a faster one).
"""

from __future__ import annotations

import sys
import time

from _common import (
    PY,
    delta,
    fmt,
    goal,
    header,
    line,
    median,
    note,
    parse_args,
    temp_home,
    time_cmd,
    wait_ping,
)

NAME = "cold_start"
GOAL_RATIO = 1.15
IMPORTS = "import trio, msgspec, structlog, sqlite3"


def main() -> int:
    args = parse_args(__doc__ or "")
    n = 5 if args.quick else 10
    header(NAME, args.quick)
    starts: list[float] = []
    floor: list[float] = []
    bare: list[float] = []
    with temp_home() as h:
        h.start()  # creates the ledger and the byte-code caches
        h.stop()
        for _ in range(n):
            t0 = time.perf_counter()
            proc = h.spawn()
            wait_ping(h.socket, proc, timeout=30, poll=0.001)
            starts.append(time.perf_counter() - t0)
            h.stop()
            floor.append(time_cmd([PY, "-c", IMPORTS]))
            bare.append(time_cmd([PY, "-c", "pass"]))
    s, f, b = median(starts) * 1000, median(floor) * 1000, median(bare) * 1000
    note(
        NAME,
        f"median of {n}: spawn of `python -m tsukud --foreground` on an existing small"
        " ledger until the first `ping` is answered (1 ms connect polling), interleaved with"
        " the baselines (subprocess wall time)",
    )
    line(NAME, s, "ms", s / f, f"import floor {fmt(f)} ms", f"{delta(s - f)} ms over it")
    line(
        f"{NAME}.vs_python_pass",
        s,
        "ms",
        s / b,
        f"python -c pass {fmt(b)} ms",
        f"{delta(s - b)} ms over it",
    )
    line(
        f"{NAME}.baseline_import_floor",
        f,
        "ms",
        f / b,
        f"python -c pass {fmt(b)} ms",
        f'`python -c "{IMPORTS}"`',
    )
    goal(
        NAME,
        s / f <= GOAL_RATIO,
        f"{fmt(s)} ms = {s / f:.2f}x the import floor {fmt(f)} ms <= {GOAL_RATIO:.2f}x",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
