"""discovery: one full discovery against loopback fakes, with a realistic model, and what
it costs beyond the model.

A real daemon (its own TSUKU_HOME) is pointed at fake servers: GitHub (the repository
API and latest release for verification, the registry and its discovery entries), the
five package registries (no match, so every probe runs), the search engines, and the
fake Anthropic API, which plays a real five-turn web-search conversation: four turns
that each run a server web search and report (``pause_turn``), then the
``extract_source`` call. Each turn answers after the time the real model would take
(:func:`turn_seconds`): time to first token, plus its output tokens at the provider's
output throughput, plus the server search. The output tokens are taken from the size
of the turn's own content (about 4 characters a token), and that content is hand-written
test content (``tests/integration/discover/helpers.py``: a one-line text, the search
call, the ``extract_source`` arguments), not a recorded model turn: a real model writes
more, so the model's time here is a floor. The throughput figures are the providers'
published orders of magnitude for a Sonnet-class model, printed with the result. Each
round asks the daemon ``discover`` over the socket for a new name and records the wall time:

    overhead = wall time - the model's time (the sum of its turns)

which holds name normalisation, the registry lookup, five ecosystem probes, the budget
reservation and settlement, the SDK requests and parsing, the GitHub verification and
release check, the decision and the durable events. The first discovery loads the
Anthropic SDK (about a second) and is reported apart; the conversation is also checked
against the LLM stage's default budget (``discover.llm_timeout_s``). Goal: overhead <=
200 ms.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from typing import Any

from _common import BIN, REPO, fmt, goal, header, median, note, parse_args, percentile, temp_home

NAME = "discovery"
GOAL_MS = 200.0
# Published orders of magnitude for a Sonnet-class model with server web search.
TTFT_S = 0.8  # time to first token
OUTPUT_TPS = 70.0  # output tokens per second
SEARCH_S = 1.2  # one server-side web search
CHARS_PER_TOKEN = 4
SEARCH_TURNS = 4  # then a fifth turn extracts: MAX_TURNS in all


def tokens_of(content: list[dict[str, Any]]) -> int:
    """The output tokens of a turn: its text and tool-call content, ~4 characters each
    (search result blocks are the server's, not the model's output)."""
    written = [b for b in content if b.get("type") in ("text", "tool_use", "server_tool_use")]
    return max(1, len(json.dumps(written)) // CHARS_PER_TOKEN)


def turn_seconds(content: list[dict[str, Any]], searches: int) -> float:
    return TTFT_S + tokens_of(content) / OUTPUT_TPS + searches * SEARCH_S


def conversation(claude: Any, anth: Any, helpers: Any, *, realistic: bool) -> float:
    """Script one five-turn conversation; the model's total time."""
    total = 0.0
    queries = ["stripe-cli github", "stripe cli official repository", "stripe cli releases"]
    for i in range(SEARCH_TURNS):
        query = queries[i % len(queries)]
        content = helpers.claude_search_blocks([(helpers.STRIPE_URL, "Stripe CLI - GitHub")], query)
        content.append(anth.text(f"Search {i + 1} points to github.com/stripe/stripe-cli."))
        delay = turn_seconds(content, 1) if realistic else 0.0
        total += delay
        usage = anth.usage(2400 * (i + 1), tokens_of(content), web_searches=1)
        claude.reply(content, "pause_turn", usage_=usage, delay=delay)
    final = [anth.tool_use("toolu_05", "extract_source", helpers.extract_args("stripe/stripe-cli"))]
    delay = turn_seconds(final, 0) if realistic else 0.0
    total += delay
    claude.reply(final, "tool_use", usage_=anth.usage(12000, tokens_of(final)), delay=delay)
    return total


def main() -> int:
    args = parse_args(__doc__ or "")
    header(NAME, args.quick)
    sys.path.insert(0, str(REPO))
    from tests.fakes import anthropic_server as anth
    from tests.fakes.anthropic_server import FakeAnthropic
    from tests.fakes.ecosystems import FakeEcosystems
    from tests.fakes.github import FakeGitHub
    from tests.fakes.search import FakeSearch
    from tests.integration.discover import helpers
    from tests.integration.discover.helpers import CLAUDE_KEY, set_repo, stripe_world

    rounds = 2 if args.quick else 4  # each round is a real conversation's length

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

        def one(tool: str, *, realistic: bool = True) -> tuple[float, float, dict[str, Any]]:
            model_s = conversation(claude, anth, helpers, realistic=realistic)
            t0 = time.perf_counter()
            with h.client() as c:
                res = c.call("discover", {"tool": tool, "yes": True})
            dt = time.perf_counter() - t0
            if res["source"] != "stripe/stripe-cli" or res["searches"] != SEARCH_TURNS:
                raise RuntimeError(f"unexpected discovery: {res}")
            return dt, model_s, res

        cold, _m, _r = one("warmup-tool", realistic=False)
        walls: list[float] = []
        overheads: list[float] = []
        model_times: list[float] = []
        stages: dict[str, list[int]] = {}
        for i in range(rounds):
            dt, model_s, res = one(f"bench-tool-{i}")
            walls.append(dt)
            model_times.append(model_s)
            overheads.append((dt - model_s) * 1000)
            for k, v in res["timings_ms"].items():
                stages.setdefault(k, []).append(v)

        cli_walls: list[float] = []
        for i in range(1 if args.quick else 2):
            cli_model = conversation(claude, anth, helpers, realistic=False)
            assert cli_model == 0.0
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

    med = median(overheads)
    model_ms = median(model_times) * 1000
    note(
        NAME,
        f"median of {rounds} discoveries over the socket after 1 warm-up; fake Claude plays "
        f"{SEARCH_TURNS} search turns (pause_turn) and an extract_source turn, each after "
        f"TTFT {TTFT_S * 1000:.0f} ms + its output tokens (the characters of its "
        f"hand-written test content / {CHARS_PER_TOKEN}, not a recorded turn) at "
        f"{OUTPUT_TPS:.0f} tokens/s + {SEARCH_S * 1000:.0f} ms per "
        "server search (published orders of magnitude for a Sonnet-class model); fake "
        "GitHub, registries and search engines on loopback; a new tool name each round",
    )
    print(
        f"{NAME}: {fmt(med)} ms overhead beyond the model (p90 {fmt(percentile(overheads, 90))} "
        f"ms; wall {fmt(median(walls) * 1000)} ms with a {fmt(model_ms)} ms five-turn model)",
        flush=True,
    )
    parts = ", ".join(f"{k} {fmt(median([float(x) for x in v]))} ms" for k, v in stages.items())
    print(f"{NAME}.stages: {parts} (llm includes the model's {fmt(model_ms)} ms)", flush=True)
    from tsukud.discover.chain import DEFAULT_TIMEOUT_S, STAGE_TIMEOUTS

    llm_budget = STAGE_TIMEOUTS["llm"]
    print(
        f"{NAME}.budget: the conversation takes {fmt(model_ms / 1000)} s of the LLM stage's "
        f"default {llm_budget:g} s (whole discovery {DEFAULT_TIMEOUT_S:g} s)"
        + ("" if model_ms / 1000 < llm_budget else ": IT DOES NOT FIT"),
        flush=True,
    )
    print(
        f"{NAME}.cold: first discovery {fmt(cold * 1000)} ms (loads the Anthropic SDK; no model "
        f"delay); `tsukuctl discover` wall {fmt(median(cli_walls) * 1000)} ms (client process "
        "included, no model delay)",
        flush=True,
    )
    goal(NAME, med <= GOAL_MS, f"{fmt(med)} ms <= {GOAL_MS:.0f} ms beyond the model")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
