"""A registry's outage during ``batch run``, through the real daemon and the fake npm
registry: 503s open ``registry:npm``'s breaker and its jobs wait in the queue while the
other registries' jobs go on; when npm recovers, one probe closes the breaker and every
job finishes. Nothing that failed for its own reasons opened a breaker, and a registry
that stays down is given up on for the run, its jobs still queued, not failed."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.integration.batch.conftest import ctl_json, events
from tests.waiting import wait_until
from tsukud.testing.packages import npm_tarball

NPM = [f"pkg{i}" for i in range(8)]
OTHERS = "stern github:stern/stern\nk9s github:derailed/k9s\nghost pypi:no-such-project\n"


@pytest.fixture(scope="module")
def eco() -> Iterator[FakeEcosystems]:
    """This module's own registry (the package fixture's is shared by other tests):
    its npm answers 503 while a test says so."""
    with FakeEcosystems() as fake:
        for name in NPM:
            fake.publish_npm(npm_tarball(name, "1.0.0", {name: f"{name} 1.0.0"}))
        yield fake


def quick_breakers(t: Tsuku) -> None:
    # Three transport failures open a circuit (the default); a one-second cool-down
    # instead of a minute, so the test sees the probe.
    t.env.update({"TSUKU_BREAKER_FAILURES": "3", "TSUKU_BREAKER_RESET_SECONDS": "1"})


def run_in_background(t: Tsuku) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        result.update(
            ctl_json(
                t,
                "batch",
                "run",
                "--deterministic-only",
                "--skip-validation",
                "--jobs",
                "4",
                timeout=300,
                spawn=True,
            )
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def done_tools(t: Tsuku) -> set[str]:
    return {
        e["payload"]["recipe"].split('name = "')[1].split('"')[0] for e in events(t, "batch.done")
    }


def npm_breaker(t: Tsuku) -> list[str]:
    return [
        e["type"]
        for e in events(t, "breaker.opened", "breaker.half_opened", "breaker.closed")
        if e["payload"].get("scope") == "registry:npm"
    ]


@pytest.mark.slow  # each 503 job waits out the HTTP layer's own retries (~5 s)
def test_an_outage_opens_the_registrys_breaker_and_a_probe_lets_its_jobs_finish(
    home: Tsuku, eco: FakeEcosystems
) -> None:
    t = home
    quick_breakers(t)
    t.start()
    queue = "".join(f"{n} npm:{n}\n" for n in NPM) + OTHERS
    ctl_json(t, "batch", "add", "-", input=queue)
    eco.fail["npm"] = 503
    try:
        thread, result = run_in_background(t)
        wait_until(lambda: "breaker.opened" in npm_breaker(t), timeout=120, what="npm opened")
        # While npm is down, the other registries' jobs are not held up.
        wait_until(
            lambda: {"stern", "k9s"} <= done_tools(t),
            timeout=120,
            what="GitHub jobs done during the outage",
        )
        assert not done_tools(t) & set(NPM)
    finally:
        del eco.fail["npm"]  # the registry recovers
    thread.join(timeout=240)
    assert not thread.is_alive()
    assert result["done"] == len(NPM) + 2 and result["failed"] == 1, result
    assert result["waiting_on_breakers"] == {}, result
    # Closed again by the first answer from npm: the probe's, or a job's that was
    # already under way when the circuit opened.
    transitions = npm_breaker(t)
    assert transitions[0] == "breaker.opened" and transitions[-1] == "breaker.closed"
    status = ctl_json(t, "batch", "status")
    assert status["counts"]["done"] == len(NPM) + 2 and status["counts"]["queued"] == 0
    (failure,) = status["failures"]  # the missing PyPI project: its own fault
    assert failure["category"] == "not_found"
    breakers = {b["scope"]: b for b in t.call("status")["breakers"]}
    assert breakers["registry:npm"]["state"] == "closed"
    assert "registry:pypi" not in breakers or breakers["registry:pypi"]["state"] == "closed"
    # Jobs that met the outage went back to the queue (not failed, no backoff of
    # their own) and ran once the probe closed the circuit.
    requeued = [e for e in events(t, "batch.requeued") if "transport" in e["payload"]["reason"]]
    assert requeued and all(e["payload"]["reason"].startswith("transport: ") for e in requeued)
    assert t.ctl("events", "verify").returncode == 0


@pytest.mark.slow  # three probes, each waiting out the HTTP layer's retries
def test_a_registry_that_stays_down_is_given_up_for_the_run_with_its_jobs_queued(
    home: Tsuku, eco: FakeEcosystems
) -> None:
    t = home
    quick_breakers(t)
    t.start()
    ctl_json(t, "batch", "add", "-", input="".join(f"{n} npm:{n}\n" for n in NPM[:5]))
    eco.fail["npm"] = 503
    try:
        thread, result = run_in_background(t)
        thread.join(timeout=280)
        assert not thread.is_alive()
    finally:
        del eco.fail["npm"]
    # No npm job failed for good or is left running: they wait for a later run.
    assert result["done"] == 0 and result["failed"] == 0, result
    assert result["waiting_on_breakers"] == {"registry:npm": 5}, result
    counts = ctl_json(t, "batch", "status")["counts"]
    assert counts["queued"] == 5 and counts["running"] == 0, counts
    # PROBES_PER_RUN probes failed (a job already under way that fails while one is out
    # also re-opens the circuit, so there may be a half-open more than that).
    assert npm_breaker(t).count("breaker.half_opened") >= 3
    # The next run, with npm back, probes once and finishes them.
    again = ctl_json(
        t, "batch", "run", "--deterministic-only", "--skip-validation", timeout=240, spawn=True
    )
    assert again["done"] == 5 and again["waiting_on_breakers"] == {}, again
