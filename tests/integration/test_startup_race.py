"""The start-up race: clients that reach a daemon while it is still starting.

The normal case, not a corner: ``tsukuctl`` starts the daemon and sends its request at
once. A daemon starts with work of its own (settling reservations a killed daemon left
open), and whatever it does then must never touch a reservation a client just made:
spend stays within the budget, every run settles its own reservation, nothing crashes.
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tsukuctl.client import Client
from tsukud.errors import DaemonUnavailable
from tsukud.launch import RemoteError
from tsukud.paths import log_path

RUNS = 20
BUDGET = 3.0
COST = 1.0  # each run reserves and spends this much
LEFT_OPEN = 1.0  # the killed daemon's reservation ...
SPENT_BEFORE_DEATH = 0.25  # ... and what its run had already paid for
SESSION = "discover-0123456789ab"


def die_holding_a_reservation(t: Tsuku) -> str:
    """A daemon that reserved, paid for one search, and was killed before settling."""
    import trio

    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    rid = ""

    async def run_and_die() -> None:
        nonlocal rid
        d = Daemon(config=configmod.resolve(env=t.env), env=t.env)
        d.open()
        async with trio.open_nursery() as nursery:
            await nursery.start(d.store.run)
            grant = await d.budget.reserve(
                LEFT_OPEN, session=SESSION, purpose="discovery", confirmed=True
            )
            rid = grant.reservation
            ev = d.store.append_nowait(
                "discovery.search",
                {"tool": "jq", "provider": "tavily", "ok": True, "cost_usd": SPENT_BEFORE_DEATH},
                SESSION,
            )
            await d.store.wait_durable(ev.id)
            d.store.close()  # no settlement: the process "dies" here
        d.store.close_connection()

    trio.run(run_and_die)
    return rid


def connect_as_soon_as_possible(t: Tsuku, deadline: float) -> Client:
    while True:
        try:
            return Client.connect(t.socket, autostart=False)
        except DaemonUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def race_once(t: Tsuku) -> None:
    abandoned = die_holding_a_reservation(t)
    outcomes: dict[int, Any] = {}
    go = threading.Barrier(RUNS + 1)

    def run(i: int) -> None:
        go.wait()
        try:
            with connect_as_soon_as_possible(t, time.monotonic() + 30) as c:
                if i == 0:
                    # One client races the sweep for the abandoned reservation itself (a
                    # tool that kept its id): whoever comes second must not bring the
                    # daemon down.
                    try:
                        c.call(
                            "budget.settle",
                            {
                                "reservation": abandoned,
                                "actual_usd": SPENT_BEFORE_DEATH,
                                "session": SESSION,
                            },
                        )
                    except RemoteError as e:
                        assert e.remote_code == "not_found", e
                session = f"race-{i}"
                try:
                    grant = c.call(
                        "budget.reserve",
                        {"amount_usd": COST, "session": session, "confirmed": True},
                    )
                except RemoteError as e:
                    outcomes[i] = e.remote_code
                    return
                c.call(
                    "budget.settle",
                    {"reservation": grant["reservation"], "actual_usd": COST, "session": session},
                )
                outcomes[i] = "ran"
        except RemoteError as e:
            outcomes[i] = f"settle: {e.remote_code}: {e.message}"
        except Exception as e:  # reported below with the others
            outcomes[i] = f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=run, args=(i,)) for i in range(RUNS)]
    for th in threads:
        th.start()
    proc = t.start(wait=False)
    go.wait()
    for th in threads:
        th.join(timeout=60)

    assert proc.poll() is None, "tsukud died during the start-up race"
    # Nor did any connection or request die inside it (each would be logged).
    text = Path(log_path(t.env)).read_text()
    assert "daemon.started" in text
    for sign in ("Traceback", "rpc.internal_error", "rpc.connection_error", "KeyError"):
        assert sign not in text, text[-3000:]
    unexpected = {i: o for i, o in outcomes.items() if o not in ("ran", "budget_exceeded")}
    assert not unexpected and len(outcomes) == RUNS, outcomes
    # The abandoned reservation holds $1 until it is swept, then $0.25: either way exactly
    # two runs fit in the $3 budget, and the money adds up to what was really spent.
    assert sorted(outcomes.values()).count("ran") == 2, outcomes
    budget = t.call("status")["budget"]
    assert budget["spent_usd"] == pytest.approx(SPENT_BEFORE_DEATH + 2 * COST)
    assert budget["reserved_usd"] == 0
    assert budget["spent_usd"] <= BUDGET
    settled = t.call("events.list", {"filter": {"types": ["budget.settled"]}, "limit": 0})["count"]
    assert settled == 3  # each reservation exactly once: the two runs' and the abandoned one


def race(repetitions: int) -> None:
    for _ in range(repetitions):
        home = short_home()
        env = base_env(home)
        env["TSUKU_LLM_DAILY_BUDGET"] = str(BUDGET)
        t = Tsuku(home, env)
        try:
            race_once(t)
        finally:
            t.stop_all()
            shutil.rmtree(home, ignore_errors=True)


def test_clients_racing_a_starting_daemon_never_overspend() -> None:
    race(3)


# Among the slowest tests (issue 26): 50 real daemon starts raced by real clients, in five
# shards.
@pytest.mark.slow
@pytest.mark.parametrize("shard", range(5))
def test_clients_racing_a_starting_daemon_never_overspend_50_times(shard: int) -> None:
    """50 races in five shards of ten (each race in a home of its own), so parallel
    workers share them."""
    race(10)
