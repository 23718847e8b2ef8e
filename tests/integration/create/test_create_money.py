"""The money promise end to end: 20 concurrent ``tsukuctl create … --llm --yes`` against
a real tsukud, the fake GitHub and a greedy fake Claude (real SDK) that reads three
49 KB files on every turn, with a daily budget for about three typical runs."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub, fixture_world
from tests.integration.create.helpers import CLAUDE_KEY, STERN
from tsukud.errors import ExitCode
from tsukud.testing.http import RecordedRequest, Reply

FILES = [f"docs/big-{i}.md" for i in range(3)]
SONNET_IN, SONNET_OUT = Decimal(2), Decimal(10)  # $ per Mtok, Claude Sonnet 5.5


class Greedy:
    """Reads the largest files it may, in parallel, on every turn; answers only when
    forced. Bills a token per 4 bytes sent and 1,000 output tokens, and counts it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.billed: list[Decimal] = []
        self.ids = 0

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json()
        tokens_in, tokens_out = len(request.body) // 4, 1000
        with self.lock:
            self.billed.append((tokens_in * SONNET_IN + tokens_out * SONNET_OUT) / 1_000_000)
            self.ids += 1
            n = self.ids
        if body.get("tool_choice", {}).get("type") == "tool":
            content = [anth.tool_use(f"toolu_a{n}", "extract_pattern", STERN)]
        else:
            content = [
                anth.tool_use(f"toolu_{n}_{i}", "fetch_file", {"path": path})
                for i, path in enumerate(FILES)
            ]
        return Reply(
            json=anth.message(content, "tool_use", usage_=anth.usage(tokens_in, tokens_out))
        )


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    with fixture_world() as fake:
        repo = fake.repos["stern/stern"]
        for i, path in enumerate(FILES):
            repo.files[path] = (f"# part {i}\n" + "lorem ipsum dolor sit amet " * 1800).encode()[
                :49_000
            ]
        yield fake


def test_twenty_greedy_creates_never_pass_the_budget(world: FakeGitHub) -> None:
    greedy = Greedy()
    path = short_home()
    with FakeAnthropic(fallback=greedy) as claude:
        t = Tsuku(
            path,
            {
                **base_env(path),
                **world.env(),
                "ANTHROPIC_API_KEY": CLAUDE_KEY,
                "ANTHROPIC_BASE_URL": claude.url,
                "TSUKU_LLM_DAILY_BUDGET": "1.50",
                "TSUKU_LLM_HOURLY_LIMIT": "100",
            },
        )
        try:
            t.start()
            codes: list[int] = []

            def one(i: int) -> None:
                cp = t.ctl(
                    "create",
                    f"stern{i}",
                    "--from",
                    "github:stern/stern",
                    "--llm",
                    "--yes",
                    "--skip-validation",
                    "--output",
                    str(path / f"stern{i}.toml"),
                    timeout=300,
                )
                codes.append(cp.returncode)

            threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            billed = sum(greedy.billed, Decimal(0))
            assert 0 < billed <= Decimal("1.50")
            assert codes.count(ExitCode.BUDGET) >= 17, codes
            evs = [
                json.loads(x)
                for x in t.ctl("events", "--json", "--limit", "0", check=True).stdout.splitlines()
            ]
            turns = [e["payload"] for e in evs if e["type"] == "llm.turn"]
            assert len(turns) == len(greedy.billed)
            ledger = sum((Decimal(str(p["cost_usd"])) for p in turns), Decimal(0))
            assert round(ledger, 2) == round(billed, 2)
            # Each run's terminal event carries its true total, and no run spent more
            # than it reserved (its first reservation and every extension).
            by_session: dict[str, dict[str, Any]] = {}
            for e in evs:
                run = by_session.setdefault(e["session"] or "", {"reserved": 0.0, "spent": 0.0})
                if e["type"] == "budget.reserved":
                    run["reserved"] += e["payload"]["amount_usd"]
                elif e["type"] == "llm.turn":
                    run["spent"] += e["payload"]["cost_usd"]
                elif e["type"] in ("generation.completed", "generation.failed"):
                    run["terminal"] = e["payload"]["run_cost_usd"]
            for session, run in by_session.items():
                assert run["spent"] <= run["reserved"] + 1e-6, session
                if "terminal" in run:
                    assert run["terminal"] == pytest.approx(run["spent"], abs=1e-6), session
            stopped = [
                e["payload"]
                for e in evs
                if e["type"] == "generation.failed"
                and e["payload"]["error_code"] == "budget_exceeded"
                and e["payload"]["run_cost_usd"]
            ]
            assert stopped, "a greedy run is stopped at its ceiling after spending"
            status = json.loads(t.ctl("status", "--json", check=True).stdout)["budget"]
            assert status["reserved_usd"] == 0 and status["spent_usd"] <= 1.50
            assert status["spent_usd"] == pytest.approx(float(billed), abs=1e-5)
        finally:
            t.stop_all()
            shutil.rmtree(path, ignore_errors=True)
