"""A discovery cut off by its run deadline while the provider call is in flight, end to
end (real tsukud and tsukuctl, the fake Claude behind the real SDK holding the answer
open): the call is charged at its worst case, marked estimated and never less than what
it would have billed, and the run's terminal event and settlement carry that total."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import threading
from decimal import Decimal
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tests.fakes import anthropic_server as anth
from tests.integration.discover.helpers import World, claude_search_blocks, extract_args
from tsukud.llm.pricing import default_table
from tsukud.llm.types import Usage
from tsukud.testing.http import RecordedRequest, Reply

USAGE = Usage(input_tokens=2400, output_tokens=180, web_search_requests=1)


class Held:
    """One Claude answer (a search and an extraction) held until released; counts the
    call it was sent and what that call would have billed."""

    def __init__(self) -> None:
        self.arrived = threading.Event()
        self.released = threading.Event()
        price = default_table().price(anth.MODEL, dt.datetime.now(dt.UTC).date())
        assert price is not None
        self.would_bill = price.cost(USAGE)

    def __call__(self, _request: RecordedRequest) -> Reply:
        self.arrived.set()
        self.released.wait(120)
        content = claude_search_blocks([("https://github.com/stripe/stripe-cli", "Stripe CLI")])
        content.append(
            anth.tool_use("toolu_01", "extract_source", extract_args("stripe/stripe-cli"))
        )
        usage = anth.usage(USAGE.input_tokens, USAGE.output_tokens, web_searches=1)
        return Reply(json=anth.message(content, "tool_use", usage_=usage))


# Among the slowest tests (issue 26): waits out a real deadline with an LLM call in flight
# (time is the subject).
@pytest.mark.slow  # real-time deadline with a call in flight; test_discover_chain stays
def test_deadline_with_a_call_in_flight_ends_the_run_at_its_true_total(world: World) -> None:
    held = Held()
    home = short_home()
    env = {**base_env(home), **world.env(home, "claude", TSUKU_DISCOVER_TIMEOUT="4")}
    env["HOME"] = os.environ.get("HOME", str(home))
    t = Tsuku(home, env)
    try:
        t.start()
        # A first call builds the adapter (the SDK's import and first connection take
        # seconds on a loaded machine), so the deadline below falls in the held call.
        world.claude.reply([anth.text("OK")], usage_=anth.usage(10, 1))
        t.ctl("llm", "test", "--yes", check=True)
        world.claude.push(held)
        cp = t.ctl("discover", "stripe-cli", "--yes", timeout=60)
        assert held.arrived.is_set(), cp.stderr
        assert cp.returncode == 1 and "did not finish within 4 s" in cp.stderr, cp.stderr
        events = [
            e["payload"] | {"type": e["type"]}
            for e in map(json.loads, t.ctl("events", "--json", "--limit", "0").stdout.splitlines())
            if (e["session"] or "").startswith("discover-")
        ]

        def of(type_: str) -> list[dict[str, Any]]:
            return [e for e in events if e["type"] == type_]

        assert not of("llm.turn")
        (cut,) = of("llm.cut_off")
        assert cut["reason"] == "cancelled" and cut["estimated"] is True
        charged = Decimal(str(cut["cost_usd"]))
        assert held.would_bill is not None and charged >= held.would_bill
        (failed,) = of("discovery.failed")
        assert failed["error_code"] == "discovery_timeout"
        assert failed["spent_usd"] == pytest.approx(float(charged))
        (settled,) = of("budget.settled")
        assert settled["actual_usd"] == pytest.approx(float(charged))
        assert t.call("status")["budget"]["reserved_usd"] == 0
    finally:
        held.released.set()
        t.stop_all()
        shutil.rmtree(home, ignore_errors=True)
