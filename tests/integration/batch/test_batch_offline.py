"""A batch run whose services are out of reach loses nothing and fails fast.

Each job meets ``network_unreachable`` (here: the GitHub API and the npm registry on a
loopback port nothing listens on, set for this run's request only): it goes back to the
queue once, as it was (one ``batch.requeued``, no failure, no backoff), no other job of
that service is leased in the run, and the run ends at once with the error every command
ends with offline, naming the service and its setting. The next run, with the network
back, does them."""

from __future__ import annotations

import json
import time
from collections import Counter

from tests.conftest import CLOSED_PORT, Tsuku
from tests.integration.batch.conftest import ctl_json, events
from tsukud.errors import ExitCode

SOURCES = "age github:filosottile/age\nkind github:kubernetes-sigs/kind\ngreet npm:greet\n"
OFFLINE = {"TSUKU_GITHUB_API_URL": CLOSED_PORT, "TSUKU_NPM_URL": CLOSED_PORT}
RUN = ("batch", "run", "--deterministic-only", "--skip-validation", "--jobs", "2")


def test_jobs_out_of_reach_stay_queued_once_and_the_next_run_does_them(home: Tsuku) -> None:
    t = home
    t.start()
    ctl_json(t, "batch", "add", "-", input=SOURCES)

    started = time.monotonic()
    cp = t.ctl(*RUN, "--json", shell_env=OFFLINE, timeout=15)
    assert time.monotonic() - started < 3.0  # no retries, no wait for a breaker
    assert cp.returncode == ExitCode.NETWORK, cp.stderr
    error = json.loads(cp.stdout.splitlines()[-1])["error"]
    assert error["code"] == "network_unreachable"
    assert "0 done, 0 failed, 3 left in the queue" in error["message"]
    assert CLOSED_PORT in error["message"] and error["hint"].startswith("Offline?")
    assert "TSUKU_GITHUB_API_URL" in error["hint"] or "TSUKU_NPM_URL" in error["hint"]

    counts = ctl_json(t, "batch", "status")["counts"]
    assert (counts["queued"], counts["failed"], counts["backoff"]) == (3, 0, 0), counts
    requeued = Counter(e["payload"]["job"] for e in events(t, "batch.requeued"))
    leased = Counter(e["payload"]["job"] for e in events(t, "batch.leased"))
    # Each job met the offline service once: one lease, one requeue, nothing failed.
    assert sorted(requeued.values()) == sorted(leased.values()) == [1, 1, 1], (requeued, leased)
    assert not events(t, "batch.failed")
    reasons = [e["payload"]["reason"] for e in events(t, "batch.requeued")]
    assert all(r.startswith("transport: ") and "cannot be reached" in r for r in reasons), reasons

    cp = t.ctl(*RUN, timeout=120)  # the network is back
    assert cp.returncode == 0, cp.stderr
    assert ctl_json(t, "batch", "status")["counts"]["done"] == 3


def test_llm_providers_out_of_reach_are_the_llm_s_failure_not_the_registry_s() -> None:
    """Offline providers end as ``network_unreachable`` like everything else, but a batch
    reads them as ``llm`` (their own breakers), never as the source registry's outage."""
    from tsukud.batch.outcome import classify
    from tsukud.llm.provider import ProvidersUnreachable
    from tsukud.net.http import HttpUnreachable

    llm = classify(ProvidersUnreachable("every LLM provider failed"), source="github:o/r")
    assert (llm.category, llm.transport) == ("llm", False)
    github = classify(HttpUnreachable(f"{CLOSED_PORT}: refused"), source="github:o/r")
    assert (github.category, github.transport) == ("transport", True)
