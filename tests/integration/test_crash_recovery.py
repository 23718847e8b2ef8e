"""kill -9 while many clients stream events: nothing acknowledged is lost, the chain holds."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from tests.conftest import Tsuku
from tests.waiting import wait_until
from tsukuctl.client import Client
from tsukud.errors import ExitCode

pytestmark = pytest.mark.ctl_process  # kill -9: real processes, and a client cut off mid-stream


@pytest.mark.slow
def test_kill_9_during_streaming_loses_no_acknowledged_event(tsuku: Tsuku) -> None:
    acked: set[str] = set()
    lock = threading.Lock()
    rounds = 3
    for rnd in range(rounds):
        proc = tsuku.start()
        stop = threading.Event()

        def stream(worker: int, rnd: int = rnd, stop: threading.Event = stop) -> None:
            seq = 0
            try:
                c = Client.connect(tsuku.socket, autostart=False)
            except Exception:
                return
            with c:
                while not stop.is_set():
                    markers = [f"{rnd}-{worker}-{seq + i}" for i in range(20)]
                    try:
                        c.call(
                            "events.append",
                            {
                                "events": [
                                    {
                                        "type": "client.stream",
                                        "payload": {"m": m},
                                        "session": f"w{worker}",
                                    }
                                    for m in markers
                                ]
                            },
                        )
                    except Exception:
                        return  # the daemon died under us: this batch was not acknowledged
                    with lock:
                        acked.update(markers)
                    seq += 20

        threads = [threading.Thread(target=stream, args=(w,)) for w in range(8)]
        before = len(acked)
        for t in threads:
            t.start()
        # Killed while every writer is mid-stream: once each has had batches
        # acknowledged (8 writers x 20 events, a few times over), not after a guess.
        wait_until(lambda n=before: len(acked) >= n + 8 * 20 * 3, "acknowledged batches")
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join(timeout=10)

    tsuku.start()
    verify = tsuku.ctl("events", "verify", "--json", check=True)
    assert json.loads(verify.stdout)["ok"] is True
    stored = {
        json.loads(line)["payload"]["m"]
        for line in tsuku.ctl(
            "events", "--type", "client.stream", "--limit", "0", "--json", check=True, timeout=120
        ).stdout.splitlines()
    }
    assert len(acked) > 1000, "the clients should have streamed a fair amount"
    missing = acked - stored
    assert not missing, f"{len(missing)} acknowledged events lost, e.g. {sorted(missing)[:5]}"
    started = tsuku.ctl("events", "--type", "daemon.started", "--json").stdout.splitlines()
    assert len(started) == rounds + 1


def _events_once_written(tsuku: Tsuku, type_: str, timeout: float = 10) -> list[Any]:
    """The ``type_`` events, once there are any (the start-up sweep writes them soon
    after the daemon serves), or none after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        out = tsuku.ctl("events", "--json", "--limit", "0", "--type", type_).stdout
        found = [json.loads(line) for line in out.splitlines()]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def _die_after(tsuku: Tsuku, write: Callable[[Any], Awaitable[None]]) -> None:
    """A daemon in this process that records what ``write`` does to it and then "dies":
    its store closed, nothing settled, as a kill -9 leaves the ledger."""
    import trio

    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    async def run() -> None:
        d = Daemon(config=configmod.resolve(env=tsuku.env), env=tsuku.env)
        d.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(d.store.run)
            await write(d)
            d.store.close()
        d.store.close_connection()

    trio.run(run)


async def _discovery_begun(d: Any, session: str) -> str:
    """A discovery of stripe-cli started and its reservation taken: the reservation."""
    started = {"tool": "stripe-cli", "requested": "stripe-cli", "yes": True, "can_ask": False}
    d.store.append_nowait("discovery.started", started, session)
    grant = await d.budget.reserve(0.05, session=session, purpose="discovery", confirmed=True)
    return str(grant.reservation)


def test_abandoned_reservation_is_settled_with_its_search_fees(tsuku: Tsuku) -> None:
    """A discovery whose daemon died after a paid search: the next daemon settles the
    reservation at the search's cost, not at the (zero) cost of its llm.turn events."""
    session = "discover-0123456789ab"

    async def paid_search(d: Any) -> None:
        await _discovery_begun(d, session)
        ev = d.store.append_nowait(
            "discovery.search",
            {"tool": "stripe-cli", "provider": "tavily", "ok": True, "cost_usd": 0.008},
            session,
        )
        await d.store.wait_durable(ev.id)

    _die_after(tsuku, paid_search)
    tsuku.start()
    (event,) = _events_once_written(tsuku, "budget.settled")
    assert event["session"] == session
    assert event["payload"]["actual_usd"] == pytest.approx(0.008)
    # The discovery the daemon died in has its terminal event, with what it spent.
    (failed,) = _events_once_written(tsuku, "discovery.failed")
    assert failed["session"] == session
    assert failed["payload"]["error_code"] == "abandoned"
    assert failed["payload"]["spent_usd"] == pytest.approx(0.008)


def test_a_wal_lost_after_kill_9_is_refused_at_start_with_what_was_lost(tsuku: Tsuku) -> None:
    """Acknowledged events that lived only in the -wal when the daemon died: deleting
    the -wal takes them away, and the chain that is left is still valid on its own. The
    checkpoint knows better: the next daemon refuses to start, naming the lost ids."""
    proc = tsuku.start()
    tsuku.call(
        "events.append",
        {"events": [{"type": "client.x", "payload": {"i": i}} for i in range(50)]},
    )
    last = tsuku.call("status")["events"]["durable"]
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wal = tsuku.home / "tsuku.db-wal"
    assert wal.stat().st_size > 0  # the events are there, not yet in tsuku.db
    wal.unlink()

    refused = tsuku.start(wait=False)
    _, err = refused.communicate(timeout=30)
    assert refused.returncode == ExitCode.LEDGER_CORRUPT, err
    text = err.decode()
    assert "Traceback" not in text
    assert f"-{last} are missing" in text and "restore both files" in text
    # tsukuctl, starting the daemon itself, says the same with the same exit code.
    cp = tsuku.ctl("events", "verify")
    assert cp.returncode == ExitCode.LEDGER_CORRUPT, cp.stderr
    assert "are missing" in cp.stderr and "Traceback" not in cp.stderr


def test_an_abandoned_paid_search_is_charged_its_fee(tsuku: Tsuku) -> None:
    """A discovery died with a paid search in flight (its discovery.search_started has no
    discovery.search): the next daemon charges that search its fee as an estimated
    discovery.search, and the settlement and the terminal event carry it with the
    answered search, the failed one and the model call."""
    session = "discover-0123456789cd"

    async def search_in_flight(d: Any) -> None:
        rid = await _discovery_begun(d, session)
        search = {"tool": "stripe-cli", "provider": "tavily", "reservation": rid}
        fee = {"worst_case_usd": 0.008}
        call = {"provider": "local", "reservation": rid, "call": 1}
        for type_, payload in (
            ("llm.call_started", {**call, "worst_case_usd": 0.0}),
            ("llm.turn", {**call, "cost_usd": 0.0}),
            ("discovery.search_started", {**search, "search": 1, **fee}),
            ("discovery.search", {**search, "search": 1, "ok": True, "cost_usd": 0.008}),
            ("discovery.search_started", {**search, "search": 2, **fee}),
            (
                "discovery.search",
                {**search, "search": 2, "ok": False, "estimated": True, "cost_usd": 0.008},
            ),
            ("discovery.search_started", {**search, "search": 3, **fee}),  # in flight
        ):
            ev = d.store.append_nowait(type_, payload, session)
        await d.store.wait_durable(ev.id)

    _die_after(tsuku, search_in_flight)
    tsuku.start()
    (failed,) = _events_once_written(tsuku, "discovery.failed")
    assert failed["payload"]["error_code"] == "abandoned"
    assert failed["payload"]["spent_usd"] == pytest.approx(3 * 0.008)
    out = tsuku.ctl("events", "--json", "--limit", "0", "--type", "budget.settled").stdout
    (settled,) = [json.loads(line)["payload"] for line in out.splitlines()]
    assert settled["actual_usd"] == pytest.approx(3 * 0.008)
    out = tsuku.ctl("events", "--json", "--limit", "0", "--type", "discovery.search").stdout
    searches = [json.loads(line) for line in out.splitlines()]
    abandoned = [e["payload"] for e in searches if e["payload"].get("reason") == "abandoned"]
    assert [a["search"] for a in abandoned] == [3]  # only the unanswered one
    assert abandoned[0]["estimated"] is True and abandoned[0]["cost_usd"] == pytest.approx(0.008)
    assert all(e["session"] == session for e in searches)
    # The summary counts the two estimated fees apart, and the total with them.
    summary = tsuku.call("events.summary", {"filter": {"session": session}, "by": "type"})
    totals = summary["totals"]
    assert totals["cost_usd"] == pytest.approx(3 * 0.008), summary
    assert totals["cost_estimated_usd"] == pytest.approx(2 * 0.008), summary


def test_abandoned_call_is_settled_at_its_worst_case(tsuku: Tsuku) -> None:
    """A run died with a request in flight (its llm.call_started has no answer): the next
    daemon charges that call at its worst case as an estimated llm.cut_off, and settles
    the run's first reservation and its extension at their shares of the total."""
    import trio

    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    session = "create-0123456789ab"

    async def die_mid_call() -> None:
        d = Daemon(config=configmod.resolve(env=tsuku.env), env=tsuku.env)
        d.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(d.store.run)
            first = await d.budget.reserve(0.02, session=session, purpose="create", confirmed=True)
            rid = first.reservation
            await d.budget.reserve(
                0.05, session=session, purpose="create", confirmed=True, extends=rid
            )
            call = {"provider": "claude", "reservation": rid}
            for type_, payload in (
                ("llm.call_started", {**call, "call": 1, "worst_case_usd": 0.015}),
                ("llm.turn", {**call, "call": 1, "cost_usd": 0.01}),
                ("llm.call_started", {**call, "call": 2, "worst_case_usd": 0.03}),
                ("llm.failed", {**call, "call": 2, "error_type": "provider_unavailable"}),
                ("llm.call_started", {**call, "call": 3, "worst_case_usd": 0.02}),
            ):
                ev = d.store.append_nowait(type_, payload, session)
            await d.store.wait_durable(ev.id)
            d.store.close()  # the process "dies" with call 3 in flight
        d.store.close_connection()

    trio.run(die_mid_call)
    tsuku.start()
    deadline = time.monotonic() + 10
    settled: list[dict] = []  # type: ignore[type-arg]
    while len(settled) < 2 and time.monotonic() < deadline:
        out = tsuku.ctl("events", "--json", "--limit", "0", "--type", "budget.settled").stdout
        settled = [json.loads(line) for line in out.splitlines()]
        time.sleep(0.05)
    assert [e["payload"]["actual_usd"] for e in settled] == [
        pytest.approx(0.02),  # the first reservation, filled
        pytest.approx(0.01),  # the rest on the extension: 0.01 paid + 0.02 estimated
    ]
    out = tsuku.ctl("events", "--json", "--limit", "0", "--type", "llm.cut_off").stdout
    (cut,) = [json.loads(line)["payload"] for line in out.splitlines()]
    assert cut["call"] == 3 and cut["reason"] == "abandoned" and cut["estimated"] is True
    assert cut["cost_usd"] == pytest.approx(0.02)


def test_an_abandoned_run_is_ended_before_its_reservation_is_settled(tsuku: Tsuku) -> None:
    """The next daemon writes a dead create run's ``generation.failed`` before it
    settles the run's reservation: killed in between, the reservation is still open, so
    the start after settles it, and the run keeps its end. (Settled first, a kill in
    between lost the end for good: only open reservations lead to a run.)"""
    import trio

    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    session = "create-abcdef012345"

    async def die_mid_run() -> None:
        d = Daemon(config=configmod.resolve(env=tsuku.env), env=tsuku.env)
        d.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(d.store.run)
            started = {
                "tool": "foo",
                "repo": "acme/foo",
                "deterministic_only": False,
                "llm": True,
                "skip_validation": False,
            }
            await d.store.wait_durable(d.store.append_nowait("create.started", started, session).id)
            first = await d.budget.reserve(0.05, session=session, purpose="create", confirmed=True)
            call = {"provider": "claude", "reservation": first.reservation, "call": 1}
            ev = d.store.append_nowait("llm.turn", {**call, "cost_usd": 0.01}, session)
            await d.store.wait_durable(ev.id)
            d.store.close()  # the process "dies" in the middle of the run
        d.store.close_connection()

    trio.run(die_mid_run)
    tsuku.start()

    def ended() -> list[dict[str, Any]]:
        out = tsuku.ctl("events", "--json", "--limit", "0", "--session", session).stdout
        kinds = ("generation.failed", "budget.settled")
        return [e for e in map(json.loads, out.splitlines()) if e["type"] in kinds]

    wait_until(lambda: len(ended()) == 2, timeout=10, what="the run ended and settled")
    failed, settled = ended()
    assert (failed["type"], settled["type"]) == ("generation.failed", "budget.settled")
    assert failed["payload"]["error_code"] == "abandoned"
    assert failed["payload"]["run_cost_usd"] == pytest.approx(0.01)
    assert settled["payload"]["actual_usd"] == pytest.approx(0.01)
