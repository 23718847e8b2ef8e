"""An LLM provider's circuit breaker shared by daemons on one PostgreSQL ledger: an
outage seen by one daemon opens the circuit for all, and when it half-opens exactly one
daemon's probe reaches the provider, whoever asks at the same time."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import Tsuku
from tests.fakes import anthropic_server as anth
from tests.fakes.anthropic_server import FakeAnthropic
from tests.integration.create.helpers import CLAUDE_KEY
from tests.integration.ledger_pg.conftest import SharedHomes, started
from tests.pg import PgDatabase
from tests.waiting import wait_until
from tsukuctl.client import Client
from tsukud.launch import RemoteError
from tsukud.testing.http import RecordedRequest, Reply

#: Long enough that no circuit half-opens by itself while the test looks at it (a
#: caller slowed by a busy machine still finds it open); the test ends each cool-down
#: itself with :func:`cool_down`, after checking it was this long.
RESET_S = 60.0


class Outage:
    """The fake Claude's answers: 529 overloaded (``retry-after: 0``, so a lone provider's
    retries come at once) while ``down``, a short answer otherwise."""

    def __init__(self) -> None:
        self.down = True

    def __call__(self, request: RecordedRequest) -> Reply:
        if self.down:
            return Reply(
                529,
                json=anth.error_body("overloaded_error", "Overloaded"),
                headers={"request-id": "req_529", "retry-after": "0"},
            )
        return Reply(json=anth.message([anth.text("OK")], "end_turn"))


@pytest.fixture
def outage() -> Iterator[tuple[Outage, FakeAnthropic]]:
    o = Outage()
    with FakeAnthropic(fallback=o) as claude:
        yield o, claude


def llm_test(t: Tsuku) -> dict[str, Any]:
    """One ``llm.test`` call (a tiny Claude call); its result, or its error's code."""
    with Client.connect(t.socket, autostart=False) as c:
        try:
            return {"ok": c.call("llm.test", {"yes": True})}
        except RemoteError as e:
            return {"code": e.remote_code, "message": e.message}


def claude_breaker(t: Tsuku) -> dict[str, Any]:
    (b,) = [b for b in t.call("status")["breakers"] if b["scope"] == "claude"]
    return b  # type: ignore[no-any-return]


def cool_down(db: PgDatabase) -> None:
    """End Claude's cool-down now, as waiting out ``RESET_S`` would: the probe's claim
    compares ``open_until`` with the database's ``now()``, nothing else. First, the
    circuit was opened for the configured cool-down (from when it opened, not since)."""
    with psycopg.connect(db.url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM open_until - opened_at) FROM tsuku.breakers"
            " WHERE scope = 'claude' AND state = 'open' AND probe_owner IS NULL"
        ).fetchone()
        assert row is not None and float(row[0]) == RESET_S, row
        conn.execute(
            "UPDATE tsuku.breakers SET open_until = now() - interval '1 millisecond'"
            " WHERE scope = 'claude'"
        )


def test_an_outage_opens_the_circuit_for_every_daemon_and_one_probe_is_sent(
    pg_database: PgDatabase,
    shared_homes: SharedHomes,
    outage: tuple[Outage, FakeAnthropic],
) -> None:
    down, claude = outage
    env = {
        "ANTHROPIC_API_KEY": CLAUDE_KEY,
        "ANTHROPIC_BASE_URL": claude.url,
        "TSUKU_BREAKER_FAILURES": "3",
        "TSUKU_BREAKER_RESET_SECONDS": str(RESET_S),
    }
    daemons = a, b = started(shared_homes, pg_database.url, 2, env)

    # a meets the outage: its call and two retries fail, the third failure opens it.
    first = llm_test(a)
    assert first.get("code") == "provider_unavailable", first
    assert len(claude.requests) == 3
    # b never reaches the provider: the circuit a opened is b's too.
    second = llm_test(b)
    assert second.get("code") == "provider_unavailable", second
    assert "circuit is open" in second["message"]
    assert len(claude.requests) == 3
    for t in daemons:
        assert claude_breaker(t)["state"] == "open"

    # Half-open, the provider still down: six callers on both daemons at once, and
    # exactly one request (the probe) reaches it; its failure opens the circuit again.
    cool_down(pg_database)
    results: list[dict[str, Any]] = []
    threads = [
        threading.Thread(target=lambda t=t: results.append(llm_test(t)))
        for t in daemons
        for _ in range(3)
    ]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(claude.requests) == 4, [r.get("message") for r in results]
    assert {r.get("code") for r in results} == {"provider_unavailable"}
    for t in daemons:
        assert claude_breaker(t)["state"] == "open"

    # The provider is back: the next probe (from b) closes the circuit for both.
    down.down = False
    cool_down(pg_database)  # the probe's failure opened it for a whole cool-down again
    assert "ok" in llm_test(b)
    assert "ok" in llm_test(a)
    assert len(claude.requests) == 6
    for t in daemons:
        wait_until(lambda t=t: claude_breaker(t)["state"] == "closed", "closed for every daemon")

    # Each half-open episode had one probe: one breaker.half_opened across origins each.
    listed = a.ctl("events", "--json", "--limit", "0", "--type", "breaker.*", check=True)
    kinds = [json.loads(line)["type"] for line in listed.stdout.splitlines()]
    assert kinds.count("breaker.half_opened") == 2, kinds
    assert kinds.count("breaker.opened") == 2 and kinds.count("breaker.closed") == 1, kinds


def test_a_dead_probe_owner_loses_the_probe_at_its_lease(
    pg_database: PgDatabase,
    shared_homes: SharedHomes,
    outage: tuple[Outage, FakeAnthropic],
) -> None:
    """A probe claimed by a daemon that is gone (its row still names it) holds the
    circuit only until the lease: then another daemon wins the probe."""
    down, claude = outage
    down.down = False
    env = {"ANTHROPIC_API_KEY": CLAUDE_KEY, "ANTHROPIC_BASE_URL": claude.url}
    (t,) = started(shared_homes, pg_database.url, 1, env)
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        # What a daemon killed mid-probe leaves: open, cooled down, its probe out.
        conn.execute(
            "INSERT INTO tsuku.breakers (scope, state, failures, opened_at, open_until,"
            " probe_owner, probe_lease_until) VALUES ('claude', 'open', 3, now(), now(),"
            " 'dead-daemon', now() + interval '60 seconds')"
        )
        blocked = llm_test(t)
        assert blocked.get("code") == "provider_unavailable", blocked
        assert "being probed" in blocked["message"] and not claude.requests
        # The lease runs out (as 60 s would: the claim compares it with now()).
        conn.execute(
            "UPDATE tsuku.breakers SET probe_lease_until = now() - interval '1 millisecond'"
            " WHERE scope = 'claude'"
        )
        assert "ok" in llm_test(t)  # the lease ran out: this daemon's probe closed it
        row = conn.execute(
            "SELECT state, failures, probe_owner FROM tsuku.breakers WHERE scope = 'claude'"
        ).fetchone()
    assert row == ("closed", 0, None)
    assert len(claude.requests) == 1
