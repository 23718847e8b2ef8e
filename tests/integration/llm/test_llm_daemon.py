"""The LLM service inside the real daemon: status, test calls, failover, money, questions.

Real SDKs against the loopback fakes; the daemon is a real process.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from tests.conftest import Tsuku
from tests.fakes import anthropic_server as anth
from tests.fakes import gemini_server as gem
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.integration.llm.wires import html_body, truncated_body
from tsukuctl.client import RemoteError
from tsukud.errors import ExitCode

CLAUDE_KEY = "sk-ant-api03-DAEMONCANARY0123456789abcdef"
GEMINI_KEY = "AIzaDAEMONCANARY0123456789abcdef"


@pytest.fixture
def claude() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as f:
        yield f


@pytest.fixture
def gemini() -> Iterator[FakeGemini]:
    with FakeGemini() as f:
        yield f


def with_providers(t: Tsuku, claude: FakeAnthropic | None, gemini: FakeGemini | None) -> Tsuku:
    if claude is not None:
        t.env.update({"ANTHROPIC_API_KEY": CLAUDE_KEY, "ANTHROPIC_BASE_URL": claude.url})
    if gemini is not None:
        t.env.update({"GOOGLE_API_KEY": GEMINI_KEY, "TSUKU_GEMINI_BASE_URL": gemini.url})
    return t


def events(t: Tsuku, *types: str) -> list[dict]:  # type: ignore[type-arg]
    args = ["events", "--json", "--limit", "0"]
    for ty in types:
        args += ["--type", ty]
    return [json.loads(x) for x in t.ctl(*args, check=True).stdout.splitlines()]


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_status_and_test_without_keys_say_what_is_missing(tsuku: Tsuku) -> None:
    st = tsuku.ctl("llm", "status", check=True).stdout
    assert "claude" in st and "gemini" in st and "(not set)" in st
    assert "ANTHROPIC_API_KEY" in st and "GOOGLE_API_KEY" in st
    assert "$2/$10 per Mtok" in st  # Sonnet 5.5's published price
    cp = tsuku.ctl("llm", "test")
    assert cp.returncode == ExitCode.PROVIDER_UNAVAILABLE
    assert "no LLM provider is configured" in cp.stderr and "hint:" in cp.stderr


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_status_shows_a_long_context_tier(tsuku: Tsuku) -> None:
    tsuku.env["TSUKU_GEMINI_MODEL"] = "gemini-2.5-pro"
    st = tsuku.ctl("llm", "status", check=True).stdout
    assert "$1.25/$10 per Mtok ($2.5/$15 above 200,000 prompt tokens)" in st
    assert "$2/$10 per Mtok\n" in st  # Sonnet 5.5: one tier, nothing added
    status = json.loads(tsuku.ctl("llm", "status", "--json", check=True).stdout)
    (gem,) = [p for p in status["providers"] if p["name"] == "gemini"]
    assert gem["price"]["above_tokens"] == 200_000
    assert gem["price"]["input_above_per_mtok"] == 2.5


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_llm_test_records_a_priced_turn(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    with_providers(tsuku, claude, None).start()
    claude.reply([anth.text("OK")], usage_=anth.usage(1000, 200))
    out = json.loads(tsuku.ctl("llm", "test", "--json", check=True).stdout)
    # 1000 input at $2/M + 200 output at $10/M
    assert out["provider"] == "claude" and out["text"] == "OK"
    assert out["cost_usd"] == pytest.approx(0.004)
    (turn,) = events(tsuku, "llm.turn")
    p = turn["payload"]
    assert p["provider"] == "claude" and p["model"] == "claude-sonnet-5-5"
    assert (p["input_tokens"], p["output_tokens"]) == (1000, 200)
    assert p["cost_usd"] == pytest.approx(0.004) and p["stop_reason"] == "end_turn"
    assert turn["session"] == out["session"]
    reserved, settled = (e["payload"] for e in events(tsuku, "budget.*"))
    assert reserved["reservation"] == settled["reservation"]
    assert settled["actual_usd"] == pytest.approx(0.004)
    summary = json.loads(tsuku.ctl("events", "summary", "--by", "provider", "--json").stdout)
    (group,) = [g for g in summary["groups"] if g["key"] == "claude"]
    assert group["llm_turns"] == 1 and group["cost_usd"] == pytest.approx(0.004)
    human = tsuku.ctl("events", "summary", "--by", "provider", check=True).stdout
    assert "claude" in human and "$0.0040" in human
    # The request the fake saw carried the key in a header only.
    assert claude.requests and CLAUDE_KEY not in claude.requests[-1].body.decode()


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_failover_timeline_and_breaker_recovery(
    tsuku: Tsuku, claude: FakeAnthropic, gemini: FakeGemini
) -> None:
    tsuku.env["TSUKU_BREAKER_RESET_SECONDS"] = "1"
    with_providers(tsuku, claude, gemini).start()
    for _ in range(3):
        claude.error(529, "overloaded_error", "Overloaded")
    for _ in range(4):
        gemini.reply([gem.text("OK")])
    for i in range(4):
        out = json.loads(tsuku.ctl("llm", "test", "--json", check=True).stdout)
        assert out["provider"] == "gemini", i
    assert len(claude.requests) == 3  # the 4th call skipped claude: its circuit is open
    st = json.loads(tsuku.ctl("status", "--json").stdout)
    (cb,) = [b for b in st["breakers"] if b["provider"] == "claude"]
    assert cb["state"] == "open" and cb["consecutive_failures"] == 3

    time.sleep(1.2)
    claude.reply([anth.text("OK")])
    out = json.loads(tsuku.ctl("llm", "test", "--json", check=True).stdout)
    assert out["provider"] == "claude"  # the half-open probe succeeded

    timeline = [
        (e["type"], e["payload"].get("provider") or e["payload"].get("from"))
        for e in events(tsuku, "llm.turn", "llm.failed", "provider.*", "breaker.*")
    ]
    # Each request was announced (write-ahead) before it was sent.
    assert len(events(tsuku, "llm.call_started")) == len(claude.requests) + len(gemini.requests)
    assert timeline == [
        ("llm.failed", "claude"),
        ("provider.failover", "claude"),
        ("llm.turn", "gemini"),
        ("llm.failed", "claude"),
        ("provider.failover", "claude"),
        ("llm.turn", "gemini"),
        ("llm.failed", "claude"),
        ("breaker.opened", "claude"),
        ("provider.failover", "claude"),
        ("llm.turn", "gemini"),
        ("provider.failover", "claude"),
        ("llm.turn", "gemini"),
        ("breaker.half_opened", "claude"),
        ("llm.turn", "claude"),
        ("breaker.closed", "claude"),
    ]
    for f in (tsuku.home / "tsuku.db", tsuku.home / "logs" / "tsukud.log"):
        data = f.read_bytes()
        assert CLAUDE_KEY.encode() not in data and GEMINI_KEY.encode() not in data


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_broken_replies_fail_over_and_are_charged_at_their_worst_case(
    tsuku: Tsuku, claude: FakeAnthropic, gemini: FakeGemini
) -> None:
    """Claude's 200s break: the body cut off mid-way, then a page that is not JSON. Each
    is an outage for the breaker and a reason to fail over, and neither is a turn (no
    usage came back). The request was sent, so the provider may bill it: each is an
    ``llm.cut_off`` charged at the call's worst case, marked estimated, and the run's
    cost is Gemini's answer plus that, never less than what may have been billed."""
    with_providers(tsuku, claude, gemini).start()
    truncated_body(claude)
    html_body(claude)
    for _ in range(2):
        gemini.reply([gem.text("OK")], usage_=gem.usage(1000, 100))
    run_costs = []
    for n in range(2):
        out = json.loads(tsuku.ctl("llm", "test", "--json", check=True).stdout)
        assert out["provider"] == "gemini"
        run_costs.append(out["cost_usd"])
        cut = events(tsuku, "llm.cut_off")
        assert len(cut) == n + 1
        charged = cut[-1]["payload"]
        assert charged["provider"] == "claude" and charged["estimated"] is True
        assert charged["reason"] == ("connection_broken", "unreadable_answer")[n]
        assert charged["cost_usd"] > 0
        # 1000 in at $0.75/M + 100 out at $3.75/M (Gemini 3.8 Flash until 2026-12-31)
        assert out["cost_usd"] == pytest.approx(0.001125 + charged["cost_usd"])
    failed = [e["payload"] for e in events(tsuku, "llm.failed")]
    assert [(f["provider"], f["error_type"], f["breaker"]) for f in failed] == [
        ("claude", "provider_unavailable", True)
    ] * 2
    turns = events(tsuku, "llm.turn")
    assert [t["payload"]["provider"] for t in turns] == ["gemini", "gemini"]
    st = json.loads(tsuku.ctl("status", "--json").stdout)
    (cb,) = [b for b in st["breakers"] if b["provider"] == "claude"]
    assert cb["state"] == "closed" and cb["consecutive_failures"] == 2
    # Each run settles its reservations (one per provider it may fail over to) at
    # shares of what it spent: together, exactly the runs' costs.
    settled = [e["payload"]["actual_usd"] for e in events(tsuku, "budget.settled")]
    assert sum(settled) == pytest.approx(sum(run_costs))


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_all_providers_down_says_when_the_first_is_retried(
    tsuku: Tsuku, claude: FakeAnthropic
) -> None:
    with_providers(tsuku, claude, None).start()
    for _ in range(3):
        claude.error(500, "api_error", "boom")
    for _ in range(3):
        assert tsuku.ctl("llm", "test").returncode == ExitCode.PROVIDER_UNAVAILABLE
    cp = tsuku.ctl("llm", "test")
    assert cp.returncode == ExitCode.PROVIDER_UNAVAILABLE
    assert "circuit is open until" in cp.stderr and "retried at" in cp.stderr
    assert len(claude.requests) == 3


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_auth_error_is_not_retried_and_not_counted(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    with_providers(tsuku, claude, None).start()
    for _ in range(4):
        claude.error(401, "authentication_error", "invalid x-api-key")
    for _ in range(4):
        cp = tsuku.ctl("llm", "test")
        assert cp.returncode == ExitCode.CONFIG  # the user's key to fix, not an outage
        assert "ANTHROPIC_API_KEY" in cp.stderr
    st = json.loads(tsuku.ctl("status", "--json").stdout)
    assert all(b["state"] == "closed" for b in st["breakers"])
    assert len(claude.requests) == 4


def test_twenty_concurrent_runs_never_overspend(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    # One llm test reserves 64 in x $2/M + 16 out x $10/M = $0.000288; the budget fits 3.
    tsuku.env["TSUKU_LLM_DAILY_BUDGET"] = "0.0009"
    with_providers(tsuku, claude, None).start()
    for _ in range(20):
        claude.reply([anth.text("OK")], usage_=anth.usage(10, 2), delay=0.8)
    results: list[int] = []

    def one() -> None:
        results.append(tsuku.ctl("llm", "test", "--json").returncode)

    threads = [threading.Thread(target=one) for _ in range(20)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(results).count(0) == 3
    assert sorted(results).count(ExitCode.BUDGET) == 17
    assert len(claude.requests) == 3
    st = json.loads(tsuku.ctl("status", "--json").stdout)["budget"]
    assert st["reserved_usd"] == 0 and 0 < st["spent_usd"] <= 0.0009
    assert len(events(tsuku, "budget.denied")) == 17


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_confirmation_over_threshold(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    tsuku.env["TSUKU_LLM_CONFIRM_THRESHOLD"] = "0"
    with_providers(tsuku, claude, None).start()
    cp = tsuku.ctl("llm", "test")  # no terminal, no --yes
    assert cp.returncode == ExitCode.NOT_INTERACTIVE and "--yes" in cp.stderr
    assert claude.requests == []

    asked: list[dict] = []  # type: ignore[type-arg]
    with tsuku.client() as c, pytest.raises(RemoteError) as e:
        c.call("llm.test", {"can_ask": True}, on_confirm=lambda q: asked.append(q) or False)
    assert e.value.remote_code == "declined" and e.value.exit_status == ExitCode.USER_DECLINED
    assert "above the confirmation threshold" in asked[0]["message"]

    claude.reply([anth.text("OK")])
    with tsuku.client() as c:
        res = c.call("llm.test", {"can_ask": True}, on_confirm=lambda q: True)
    assert res["text"] == "OK"
    claude.reply([anth.text("OK")])
    assert tsuku.ctl("llm", "test", "--yes").returncode == 0
    kinds = [e["type"] for e in events(tsuku, "confirmation.*")]
    assert kinds[:5] == [
        "confirmation.requested",
        "confirmation.requested",
        "confirmation.declined",
        "confirmation.requested",
        "confirmation.granted",
    ]


def test_deprecated_model_is_flagged(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    tsuku.env["TSUKU_CLAUDE_MODEL"] = "claude-sonnet-4-5-20250929"
    with_providers(tsuku, claude, None).start()
    started = time.monotonic()
    st = tsuku.ctl("llm", "status", check=True).stdout
    took = time.monotonic() - started
    print(f"first llm status: {took:.2f} s")
    # The SDK's list is read from its one data file, not by importing the SDK (~4 s):
    # the first answer of a fresh daemon is quick (a bound generous for a busy CI).
    assert took < 1.5, took
    assert "warning: claude-sonnet-4-5-20250929 is deprecated" in st
    assert "end of life" in st and "claude-sonnet-5-5" in st


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_price_table_override_and_unknown_price(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    tsuku.env["TSUKU_CLAUDE_MODEL"] = "claude-experimental-9"
    with_providers(tsuku, claude, None).start()
    # No price for this model: the run's cost cannot be bounded, so it must be accepted...
    cp = tsuku.ctl("llm", "test")
    assert (
        cp.returncode == ExitCode.NOT_INTERACTIVE
        and "price of claude-experimental-9 is unknown" in cp.stderr
    )
    claude.reply([anth.text("OK")], model="claude-experimental-9")
    out = json.loads(tsuku.ctl("llm", "test", "--yes", "--json", check=True).stdout)
    assert out["cost_usd"] is None  # ...and its cost is reported as unknown, never as zero
    (turn,) = events(tsuku, "llm.turn")
    assert "cost_usd" not in turn["payload"]
    summary = json.loads(tsuku.ctl("events", "summary", "--json").stdout)
    assert summary["totals"]["cost_unknown"] == 1
    assert "+1 unpriced" in tsuku.ctl("events", "summary").stdout

    prices = tsuku.home / "prices.toml"
    prices.write_text('[[price]]\nmodel = "claude-experimental-9"\ninput = "1"\noutput = "1"\n')
    tsuku.ctl("config", "set", "llm.prices_file", str(prices), check=True)
    claude.reply([anth.text("OK")], model="claude-experimental-9", usage_=anth.usage(1_000_000, 0))
    out = json.loads(tsuku.ctl("llm", "test", "--json", check=True).stdout)
    assert out["cost_usd"] == pytest.approx(1.0)


# Among the slowest tests (issue 26): two daemons in a row, each importing the LLM SDKs on
# its first call (seconds of CPU each).
@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_record_then_replay_without_network_or_keys(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    rec = tsuku.home / "recordings"
    tsuku.env["TSUKU_LLM_RECORD_DIR"] = str(rec)
    with_providers(tsuku, claude, None).start()
    claude.reply([anth.text("OK, recorded")])
    first = json.loads(tsuku.ctl("llm", "test", "--json", check=True).stdout)
    tsuku.ctl("daemon", "stop", check=True)
    recordings = list(rec.glob("*.json"))
    assert len(recordings) == 1 and CLAUDE_KEY not in recordings[0].read_text()

    claude.close()  # no network: the fake is gone
    for k in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "TSUKU_LLM_RECORD_DIR"):
        tsuku.env.pop(k)
    tsuku.env["TSUKU_LLM_REPLAY_DIR"] = str(rec)
    tsuku.procs.clear()
    tsuku.start()
    assert "replaying recorded LLM sessions" in tsuku.ctl("llm", "status").stdout
    again = json.loads(
        tsuku.ctl("llm", "test", "--provider", "claude", "--json", check=True).stdout
    )
    assert again["text"] == first["text"] == "OK, recorded"
    # A replay spends nothing: its recorded cost is shown apart, never counted.
    assert again["cost_usd"] == 0 and again["replayed_cost_usd"] == first["cost_usd"] > 0
    assert tsuku.call("status")["budget"]["spent_usd"] == first["cost_usd"]


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_terminal_prompt_yes_and_no(tsuku: Tsuku, claude: FakeAnthropic) -> None:
    import os
    import pty
    import subprocess
    import sys

    tsuku.env["TSUKU_LLM_CONFIRM_THRESHOLD"] = "0"
    with_providers(tsuku, claude, None).start()
    claude.reply([anth.text("OK")])
    for answer, code in ((b"n\n", ExitCode.USER_DECLINED), (b"y\n", 0)):
        master, slave = pty.openpty()
        proc = subprocess.Popen(
            [sys.executable, "-m", "tsukuctl", "llm", "test"],
            env=tsuku.env,
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
        )
        os.close(slave)
        seen = b""
        while b"[y/N]" not in seen:
            seen += os.read(master, 4096)
        os.write(master, answer)
        assert proc.wait(timeout=30) == code
        assert b"above the confirmation threshold" in seen
        os.close(master)
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.mark.slow  # a daemon loading every LLM SDK; the overspend test and unit llm tests stay
def test_rejected_key_fails_over_and_the_hint_is_kept(
    tsuku: Tsuku, claude: FakeAnthropic, gemini: FakeGemini
) -> None:
    """401 on Claude → Gemini answers through the real daemon and SDKs; the user still
    hears about the bad key."""
    with_providers(tsuku, claude, gemini).start()
    claude.error(401, "authentication_error", "invalid x-api-key")
    gemini.reply([gem.text("OK")])
    cp = tsuku.ctl("llm", "test")
    assert cp.returncode == 0, cp.stderr
    assert "gemini" in cp.stdout
    assert "warning:" in cp.stderr and "ANTHROPIC_API_KEY" in cp.stderr
    (failover,) = events(tsuku, "provider.failover")
    assert failover["payload"] == {"from": "claude", "to": "gemini", "reason": "provider_auth"}
    st = json.loads(tsuku.ctl("status", "--json").stdout)
    assert all(b["state"] == "closed" for b in st["breakers"])  # a key is not an outage
