"""validation_overhead: what container validation of all four platforms adds to
``tsukuctl create``, against ``docker run --rm <image> true`` in the same run.

Each round runs, interleaved, on fresh copies of stern's releases from a loopback fake
GitHub: ``tsukuctl create --deterministic-only`` with validation, the same with
``--skip-validation``, and ``docker run --rm tsuku/validate-debian:local true``. The
overhead is the median difference between the two creates: for each of linux/amd64,
linux/arm64, darwin/amd64 and darwin/arm64 the host-side download, sha256 and digest
check, safe extraction and assembly; then the verify command in a container with every
isolation knob on (no network, read-only rootfs, non-root, no capabilities, limits) for
linux/amd64, again for linux/arm64 (under qemu-user when the host has the binfmt
handler, otherwise reported unproven), and the Mach-O header check for darwin; the
other platforms run concurrently. The detail line says how each platform was proven.
Goal: at most 1 s added.
"""

from __future__ import annotations

import os
import sys

from _common import (
    fmt,
    goal,
    header,
    line,
    median,
    not_measured,
    note,
    parse_args,
    temp_home,
    wait_ping,
)
from _create_world import create, docker_available, docker_true, world, world_env

NAME = "validation_overhead"
IMAGE = "tsuku/validate-debian:local"
GOAL_S = 1.0


def main() -> int:
    args = parse_args(__doc__ or "")
    rounds = 3 if args.quick else 9
    header(NAME, args.quick)
    if not docker_available(IMAGE):
        not_measured(NAME, f"<= {GOAL_S:g} s added", f"no container runtime or no {IMAGE} image")
        return 0
    copies = 2 * (rounds + 1)
    fake = world(copies)
    try:
        with temp_home("tkb-vo-") as h:
            h.env.update(world_env(fake))
            h.spawn()
            wait_ping(h.socket, h.proc)
            repos = iter(f"bench/stern{i}" for i in range(copies))
            added: list[float] = []
            docker: list[float] = []
            validated: list[float] = []
            proofs = ""
            for i in range(rounds + 1):
                with_c, res = create(h.env, next(repos), "--deterministic-only")
                assert res["validation"]["status"] == "passed", res["validation"]
                proofs = ", ".join(
                    f"{p['platform']} {p.get('how') or p['status']}"
                    for p in res["validation"].get("platforms", ())
                )
                without, _ = create(h.env, next(repos), "--deterministic-only", "--skip-validation")
                baseline = docker_true(IMAGE)
                if i > 0:
                    added.append(with_c - without)
                    validated.append(with_c)
                    docker.append(baseline)
        m, d = median(added), median(docker)
        note(
            NAME,
            f"median of {rounds} rounds after 1 warm-up; (create with validation of the four "
            "platforms) - (create with --skip-validation), fresh repositories each, one "
            "daemon; baseline "
            f"`docker run --rm {IMAGE} true` in the same rounds",
        )
        line(
            NAME,
            m,
            "s added (four platforms)",
            m / d,
            "docker run --rm true",
            f"docker run {fmt(d)} s",
        )
        print(
            f"{NAME}.detail: create with validation {fmt(median(validated))} s; added per "
            "round: " + ", ".join(fmt(x) for x in added) + f"; platforms: {proofs}",
            flush=True,
        )
        goal(NAME, m <= GOAL_S, f"{fmt(m)} s <= {GOAL_S:g} s added")
    finally:
        fake.close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
