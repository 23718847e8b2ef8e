"""create_deterministic: ``tsukuctl create stern --from github:... --deterministic-only``
end to end, against fetching the same GitHub API answers with curl in the same run.

A fake GitHub on 127.0.0.1 serves many copies of stern's releases (``bench/sternN``), so
every run reads a repository the daemon has not cached. One daemon serves every run;
its first create (lazy imports of httpx2 and the pipeline) is a warm-up. Each round
times, interleaved:

* ``tsukuctl create stern --from github:bench/sternN --deterministic-only
  --skip-validation --yes --force --json``: the client, the RPC, repository + releases +
  root listing + README from the API, the matcher, static checks with replay, the
  recipe written atomically, durable events;
* ``curl -s`` of the same four API URLs for another copy (the floor: the requests alone).

Reported: the median wall time without a container (goal: at most 1 s), its ratio to
the curl floor, and the same command with container validation (busybox image, when a
runtime and the image are there).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _common import fmt, goal, header, line, median, note, parse_args, temp_home, wait_ping
from _create_world import create, docker_available, world, world_env

NAME = "create_deterministic"
GOAL_S = 1.0
IMAGE = "tsuku/validate-debian:local"  # the daemon's default validation image


def main() -> int:
    args = parse_args(__doc__ or "")
    rounds = 3 if args.quick else 9
    header(NAME, args.quick)
    copies = 3 * rounds + 4
    fake = world(copies)
    try:
        with temp_home("tkb-cd-") as h:
            h.env.update(world_env(fake))
            h.spawn()
            wait_ping(h.socket, h.proc)
            used = iter(range(copies))
            first, _ = create(
                h.env, f"bench/stern{next(used)}", "--deterministic-only", "--skip-validation"
            )

            def curl(repo: str) -> float:
                api = fake.api_url
                urls = [
                    f"{api}/repos/{repo}",
                    f"{api}/repos/{repo}/releases?per_page=10",
                    f"{api}/repos/{repo}/contents/?ref=v1.32.0",
                    f"{api}/repos/{repo}/contents/README.md?ref=v1.32.0",
                ]
                t0 = time.perf_counter()
                subprocess.run(["curl", "-sf", *urls], capture_output=True, check=True)
                return time.perf_counter() - t0

            ours: list[float] = []
            floor: list[float] = []
            with_container: list[float] = []
            container = docker_available(IMAGE)
            for _ in range(rounds):
                dt, res = create(
                    h.env, f"bench/stern{next(used)}", "--deterministic-only", "--skip-validation"
                )
                assert res["generated_by"] == "deterministic", res
                ours.append(dt)
                floor.append(curl(f"bench/stern{next(used)}"))
                if container:
                    dt, res = create(h.env, f"bench/stern{next(used)}", "--deterministic-only")
                    assert res["validation"]["status"] == "passed", res["validation"]
                    with_container.append(dt)
        m, f = median(ours), median(floor)
        note(
            NAME,
            f"median of {rounds} runs after 1 warm-up, one daemon, a fresh repository per run "
            "(no API cache hits); `tsukuctl create --deterministic-only --skip-validation "
            "--yes --json` vs `curl -s` of the same 4 API URLs",
        )
        line(NAME, m, "s", m / f, "curl of the 4 API requests", f"curl {fmt(f)} s")
        print(
            f"{NAME}.runs: "
            + ", ".join(fmt(x) for x in ours)
            + f"; first create after daemon start (lazy imports): {fmt(first)} s",
            flush=True,
        )
        if with_container:
            mc = median(with_container)
            line(
                f"{NAME}.with_container",
                mc,
                "s",
                mc / m,
                "without container",
                "validated in the busybox image",
            )
        else:
            print(f"{NAME}.with_container: skipped (no runtime or no {IMAGE})", flush=True)
        goal(NAME, m <= GOAL_S, f"{fmt(m)} s <= {GOAL_S:g} s without container")
    finally:
        fake.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
