"""discovery: one full discovery against loopback fakes, and what it costs beyond the model.

A real daemon (its own TSUKU_HOME) is pointed at fake servers: GitHub (the repository
API for verification, the registry and its discovery entries), the five package
registries (no match, so every probe runs), the search engines, and the fake Anthropic
API, which answers each discovery with a server web search result and an
``extract_source`` call after a fixed ``MODEL_S`` delay: the model's time. Each round
asks the daemon ``discover`` over the socket for a new name (no cache shortcuts for the
registry entry or the probes) and records the wall time:

    overhead = wall time - MODEL_S

which holds name normalisation, the registry lookup, five ecosystem probes (seven
requests), the budget reservation and settlement, the SDK request and parsing, the
GitHub verification, the decision and the durable ``discovery.*`` / ``llm.turn`` events.
The first discovery loads the Anthropic SDK (about a second) and is reported apart.
``tsukuctl discover`` (a fresh client process) is timed too. Goal: overhead <= 200 ms.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from _common import BIN, REPO, fmt, goal, header, median, note, parse_args, percentile, temp_home

NAME = "discovery"
MODEL_S = 0.25
GOAL_MS = 200.0


def main() -> int:
    args = parse_args(__doc__ or "")
    rounds = 5 if args.quick else 20
    header(NAME, args.quick)
    sys.path.insert(0, str(REPO))
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.ecosystems import FakeEcosystems
    from tests.fakes.github import FakeGitHub
    from tests.fakes.search import FakeSearch
    from tests.integration.discover.helpers import (
        CLAUDE_KEY,
        claude_finds,
        extract_args,
        set_repo,
        stripe_world,
    )

    with (
        FakeGitHub() as gh,
        FakeEcosystems() as eco,
        FakeSearch() as search,
        FakeAnthropic() as claude,
        temp_home("tkb-disc-") as h,
    ):
        stripe_world(gh)
        set_repo(gh, "stripe/stripe-cli")
        h.env.update(
            {
                **gh.env(),
                **eco.env(),
                **search.env(),
                "ANTHROPIC_API_KEY": CLAUDE_KEY,
                "ANTHROPIC_BASE_URL": claude.url,
                "TSUKU_LLM_PROVIDER": "claude",
                "TSUKU_LLM_DAILY_BUDGET": "1000",
            }
        )
        h.start()

        def one(tool: str) -> tuple[float, dict[str, int]]:
            claude_finds(claude, extract_args("stripe/stripe-cli"), delay=MODEL_S)
            t0 = time.perf_counter()
            with h.client() as c:
                res = c.call("discover", {"tool": tool, "yes": True})
            dt = time.perf_counter() - t0
            if res["source"] != "stripe/stripe-cli":
                raise RuntimeError(f"unexpected discovery: {res}")
            return dt, res["timings_ms"]

        cold, _ = one("warmup-tool")
        walls: list[float] = []
        stages: dict[str, list[int]] = {}
        for i in range(rounds):
            dt, timings = one(f"bench-tool-{i}")
            walls.append(dt)
            for k, v in timings.items():
                stages.setdefault(k, []).append(v)

        cli_walls: list[float] = []
        for i in range(max(3, rounds // 4)):
            claude_finds(claude, extract_args("stripe/stripe-cli"), delay=MODEL_S)
            t0 = time.perf_counter()
            cp = subprocess.run(
                [str(BIN / "tsukuctl"), "discover", f"cli-tool-{i}", "--yes", "--json"],
                env=h.env,
                capture_output=True,
                text=True,
            )
            cli_walls.append(time.perf_counter() - t0)
            if cp.returncode != 0:
                raise RuntimeError(f"tsukuctl discover failed: {cp.stderr}\n{h.stderr_tail()}")

    overheads = [(w - MODEL_S) * 1000 for w in walls]
    med = median(overheads)
    note(
        NAME,
        f"median of {rounds} discoveries over the socket after 1 warm-up; fake Claude answers "
        f"after {MODEL_S * 1000:.0f} ms with a server web search and extract_source; fake "
        "GitHub, registries and search engines on loopback; a new tool name each round",
    )
    print(
        f"{NAME}: {fmt(med)} ms overhead beyond the model (p90 {fmt(percentile(overheads, 90))} "
        f"ms; wall {fmt(median(walls) * 1000)} ms with a {MODEL_S * 1000:.0f} ms model)",
        flush=True,
    )
    parts = ", ".join(f"{k} {fmt(median([float(x) for x in v]))} ms" for k, v in stages.items())
    print(f"{NAME}.stages: {parts} (llm includes the model's {MODEL_S * 1000:.0f} ms)", flush=True)
    print(
        f"{NAME}.cold: first discovery {fmt(cold * 1000)} ms (loads the Anthropic SDK); "
        f"`tsukuctl discover` wall {fmt(median(cli_walls) * 1000)} ms (client process included)",
        flush=True,
    )
    goal(NAME, med <= GOAL_MS, f"{fmt(med)} ms <= {GOAL_MS:.0f} ms beyond the model")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
