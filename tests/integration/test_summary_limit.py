"""A summary slower than ``events.summary_timeout_seconds`` is stopped with
``summary_too_slow`` (exit 30, a hint saying how to narrow it) instead of holding one of
the ledger's readers, and the daemon goes on answering, summaries included.

The limit is a request's own (``TSUKU_*`` settings travel with each call), so one
daemon shows both sides: a summary the events must answer, under a limit it cannot
meet, and the same grouping from the rollups under the default."""

from __future__ import annotations

import json

from tests.conftest import Tsuku
from tests.integration.test_concurrent_reads import write_ledger
from tsukud.errors import ExitCode

EVENTS = 20_000  # a raw by-session scan of these takes tens of ms; the limit is 1 ms
TIGHT = {"TSUKU_EVENTS_SUMMARY_TIMEOUT": "0.001"}


def test_a_summary_past_its_limit_is_stopped_with_a_clear_error(tsuku: Tsuku) -> None:
    write_ledger(tsuku.home / "tsuku.db", EVENTS)
    tsuku.start()
    # A type filter with --by session: the session rollups have no type, so the events.
    slow = ("events", "summary", "--by", "session", "--type", "client.*", "--json")
    cp = tsuku.ctl(*slow, shell_env=TIGHT)
    assert cp.returncode == ExitCode.BUSY, (cp.stdout, cp.stderr)
    err = json.loads(cp.stdout)["error"]
    assert err["code"] == "summary_too_slow"
    assert "did not finish within 0.001 s" in err["message"]
    assert "events.summary_timeout_seconds" in err["hint"]  # how to get an answer
    assert err["data"] == {"limit_s": 0.001, "source": "raw"}
    human = tsuku.ctl(*slow[:-1], shell_env=TIGHT)
    assert human.returncode == ExitCode.BUSY
    assert "did not finish within 0.001 s" in human.stderr and "hint:" in human.stderr
    # The daemon keeps serving; under the default limit the same summary is answered,
    # and by session alone comes from the rollups.
    assert tsuku.call("status")["pid"]
    full = json.loads(tsuku.ctl(*slow, check=True).stdout)
    assert full["totals"]["events"] == EVENTS
    fast = tsuku.call("events.summary", {"by": "session"})
    assert fast["source"] == "rollups"
    assert fast["totals"]["events"] > EVENTS


def test_a_summary_of_more_sessions_than_a_frame_holds_lists_the_top_and_sums_the_rest(
    tsuku: Tsuku,
) -> None:
    """7,000 sessions are about 1.3 MB of groups, past the 1 MiB frame: the answer lists
    the 2,000 costing most and one row for the others, and still adds up."""
    sessions = 7_000
    # Sessions named as the daemon names them (``create-<time>-<hex>``).
    name = "create-20261129T2000-9f3a"
    write_ledger(tsuku.home / "tsuku.db", sessions, per_session=1, prefix=name)
    tsuku.start()
    whole = json.loads(tsuku.ctl("events", "summary", "--by", "session", "--json").stdout)
    groups = sessions + 1  # and the daemon's own events, which have no session
    assert len(whole["groups"]) == 2_000 and whole["rest"]["groups"] == groups - 2_000
    listed = sum(g["events"] for g in whole["groups"])
    assert listed + whole["rest"]["events"] == whole["totals"]["events"] > sessions
    cp = tsuku.ctl("events", "summary", "--by", "session", "--top", "3", check=True)
    lines = cp.stdout.splitlines()
    assert len(lines) == 1 + 3 + 2  # header, three sessions, the others, the total
    assert lines[-2].startswith(f"({groups - 3} other sessions; --top N lists more)")
    assert lines[-1].startswith("total")
    cp = tsuku.ctl("events", "list", "--top", "3")
    assert cp.returncode == ExitCode.USAGE and "--top is for" in cp.stderr
