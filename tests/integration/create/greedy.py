"""The greedy model of the money tests: a fake Claude (served through the real SDK) that
reads the largest files it may, in parallel, on every turn, and counts what it bills.

It can also hold calls open: a call it holds has reached the provider (so it may be
billed) but gets no answer until released, which makes "the daemon died, the client
left, the deadline passed *while a call was in flight*" deterministic.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

from tests.conftest import Tsuku
from tests.fakes import anthropic_server as anth
from tests.fakes.github import FakeGitHub, fixture_world
from tests.integration.create.helpers import STERN
from tsukud.testing.http import RecordedRequest, Reply

FILES = [f"docs/big-{i}.md" for i in range(3)]
SONNET_IN, SONNET_OUT = Decimal(2), Decimal(10)  # $ per Mtok, Claude Sonnet 5.5


class Greedy:
    """Reads the largest files it may, in parallel, on every turn; answers only when
    forced. Bills a token per 4 bytes sent and 1,000 output tokens, and counts it.

    With ``hold_from_call`` set, a run's call number ``hold_from_call`` and later (told
    apart by the conversation's length) are held: their would-be cost goes to ``held``
    and the answer waits for :meth:`release`. A held call never counts as billed; the
    ledger must charge it at least its would-be cost (estimated)."""

    def __init__(self, hold_from_call: int | None = None) -> None:
        self.lock = threading.Lock()
        self.billed: list[Decimal] = []
        self.held: list[Decimal] = []
        self.ids = 0
        self.refused_reads = 0  # file reads the daemon answered with an error
        self.hold_from_call = hold_from_call
        self._released = threading.Event()
        self._changed = threading.Condition(self.lock)

    def __call__(self, request: RecordedRequest) -> Reply:
        body = request.json()
        tokens_in, tokens_out = len(request.body) // 4, 1000
        cost = (tokens_in * SONNET_IN + tokens_out * SONNET_OUT) / 1_000_000
        # Call n of a run sends 2n - 1 messages: the prompt, then a (tool use, tool
        # results) pair per earlier call.
        call = (len(body.get("messages", [])) + 1) // 2
        hold = self.hold_from_call is not None and call >= self.hold_from_call
        refused = _refused_reads(body)
        with self.lock:
            self.refused_reads += refused
            (self.held if hold else self.billed).append(cost)
            self.ids += 1
            n = self.ids
            self._changed.notify_all()
        if hold:
            self._released.wait(300)
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

    def wait_held(self, n: int, timeout: float = 120) -> None:
        """Until ``n`` calls are held open."""
        with self._changed:
            ok = self._changed.wait_for(lambda: len(self.held) >= n, timeout)
        assert ok, f"{len(self.held)} of {n} calls held, {len(self.billed)} answered"

    def release(self) -> None:
        self._released.set()


def _refused_reads(body: dict[str, Any]) -> int:
    """The tool results in the request's last message that are errors (``ok: false``)."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return 0
    refused = 0
    for c in content:
        if c.get("type") != "tool_result":
            continue
        result = c.get("content")
        if isinstance(result, list):  # text blocks
            result = "".join(str(b.get("text", "")) for b in result)
        refused += '"ok":false' in str(result)
    return refused


def greedy_world() -> Iterator[FakeGitHub]:
    """The fixture world with three 49 KB files in stern's repository to read."""
    with fixture_world() as fake:
        repo = fake.repos["stern/stern"]
        for i, path in enumerate(FILES):
            repo.files[path] = (f"# part {i}\n" + "lorem ipsum dolor sit amet " * 1800).encode()[
                :49_000
            ]
        # The greedy must get the files it asks for. Anonymous GitHub allows 60 requests
        # an hour, and twenty creates' release and repository reads alone come close:
        # past it, a read is refused, the conversation stays small, no run outgrows its
        # reservation, and the ceiling is never reached (issue 26: a flake). GitHub's
        # limit is not these tests' subject; ``Greedy.refused_reads`` counts such reads.
        fake.limits["anonymous"] = 10_000
        yield fake


def ledger(t: Tsuku, *types: str) -> list[dict[str, Any]]:
    args = ["events", "--json", "--limit", "0"]
    for ty in types:
        args += ["--type", ty]
    return [json.loads(x) for x in t.ctl(*args, check=True, timeout=120).stdout.splitlines()]


def create_args(t: Tsuku, i: int) -> list[str]:
    """A greedy ``tsukuctl create`` (stern, LLM forced, no validation, no question)."""
    return [
        "create",
        f"stern{i}",
        "--from",
        "github:stern/stern",
        "--llm",
        "--yes",
        "--skip-validation",
        "--output",
        str(t.home / f"stern{i}.toml"),
    ]
