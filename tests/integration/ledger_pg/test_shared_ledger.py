"""Daemons on one PostgreSQL ledger (``ledger.url``): each appends to its own chain, the
listing shows every origin's events, each chain verifies, and a database out of reach is
a typed error and a line in ``status``, after which nothing acknowledged is lost."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from tests.conftest import Tsuku
from tests.pg import PgDatabase
from tests.tcp_proxy import TcpProxy
from tests.waiting import wait_until
from tsukud.launch import RemoteError


def annotate(t: Tsuku, n: int, tag: str) -> dict[str, Any]:
    return t.call(  # type: ignore[no-any-return]
        "events.append",
        {"events": [{"type": "client.note", "payload": {"tag": tag, "i": i}} for i in range(n)]},
    )


def listed(t: Tsuku, *args: str) -> list[dict[str, Any]]:
    cp = t.ctl("events", "--json", "--limit", "0", *args, check=True)
    return [json.loads(line) for line in cp.stdout.splitlines()]


def test_one_daemon_writes_its_chain_to_postgresql(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    t = shared_homes(pg_database.url)
    t.start()
    annotate(t, 5, "a")
    status = t.call("status")
    origin = status["events"]["origin"]
    assert status["events"]["ledger"] == "postgresql"
    assert pg_database.server.password not in status["database"]
    assert origin and (t.home / "state" / "origin").read_text().strip() == origin

    # In the database, not in a SQLite file: seq 1.. without gaps, this origin's.
    with psycopg.connect(pg_database.url) as conn:
        rows = conn.execute("SELECT origin, seq, type FROM tsuku.events ORDER BY gid").fetchall()
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1))
    assert {r[0] for r in rows} == {origin}
    assert [r[2] for r in rows].count("client.note") == 5
    assert not (t.home / "tsuku.db").exists()

    events = listed(t)
    assert [e["seq"] for e in events] == [r[1] for r in rows]
    assert all(e["origin"] == origin for e in events)
    verified = t.ctl("events", "verify", "--json", check=True)
    assert json.loads(verified.stdout)["checked"] == len(rows)

    # A restart goes on with the same chain; the clean stop anchored it first.
    t.stop_all()
    t.procs.clear()
    with psycopg.connect(pg_database.url) as conn:
        last = conn.execute("SELECT type FROM tsuku.events ORDER BY gid DESC LIMIT 2").fetchall()
    assert [r[0] for r in last] == ["daemon.stopped", "ledger.anchor"]
    t.start()
    annotate(t, 1, "after restart")
    assert t.call("status")["events"]["origin"] == origin
    assert json.loads(t.ctl("events", "verify", "--json", check=True).stdout)["checked"] > len(rows)


def test_two_daemons_append_concurrently_and_each_chain_verifies(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    import threading

    a, b = shared_homes(pg_database.url), shared_homes(pg_database.url)
    a.start()
    b.start()
    errors: list[BaseException] = []

    def hammer(t: Tsuku, tag: str) -> None:
        try:
            for _ in range(20):
                annotate(t, 25, tag)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=hammer, args=(t, tag)) for t, tag in ((a, "a"), (b, "b"))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []
    origin_a = a.call("status")["events"]["origin"]
    origin_b = b.call("status")["events"]["origin"]
    assert origin_a != origin_b

    events = listed(a)
    assert {e["origin"] for e in events} == {origin_a, origin_b}
    for origin, tag in ((origin_a, "a"), (origin_b, "b")):
        mine = [e for e in events if e["origin"] == origin]
        assert [e["seq"] for e in mine] == list(range(1, len(mine) + 1))
        notes = [e for e in mine if e["type"] == "client.note"]
        assert len(notes) == 500 and {e["payload"]["tag"] for e in notes} == {tag}
    # Filtered by origin, from either daemon.
    only_b = listed(a, "--origin", origin_b)
    assert only_b and {e["origin"] for e in only_b} == {origin_b}

    for t in (a, b):
        res = json.loads(t.ctl("events", "verify", "--all-origins", "--json", check=True).stdout)
        assert {o["origin"] for o in res["origins"]} == {origin_a, origin_b}
        assert all(o["checked"] > 500 for o in res["origins"])

    # Summaries are the team's, from either daemon, from the team's rollups; --origin
    # narrows them to one, from its events.
    def notes(*args: str) -> tuple[int, str]:
        cp = a.ctl("events", "summary", "--by", "type", "--json", *args, check=True)
        answer = json.loads(cp.stdout)
        groups = answer["groups"]
        return sum(g["events"] for g in groups if g["key"] == "client.note"), answer["source"]

    assert notes() == (1000, "rollups") and notes("--origin", origin_b) == (500, "raw")
    table = b.ctl("events", "summary", "--by", "day", check=True).stdout
    assert "total" in table and "Traceback" not in table
    # A rollup row edited in the database: verify (either daemon's) finds it and rebuilds.
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        conn.execute("UPDATE tsuku.rollups SET events = events + 1 WHERE type = 'client.note'")
    assert notes() == (1001, "rollups")
    res = json.loads(b.ctl("events", "verify", "--json", check=True).stdout)
    assert res["rollups"] == "rebuilt"
    wait_until(lambda: notes() == (1000, "rollups"), "the rollups rebuilt from the events")

    # status shows the team's chains; --origin narrows it to one daemon's.
    team = {o["origin"]: o["events"] for o in a.call("status")["events"]["origins"]}
    assert set(team) == {origin_a, origin_b} and team[origin_b] > 500
    shown = a.ctl("status", "--origin", origin_b, check=True).stdout
    assert f"origin     {origin_b}: {team[origin_b]} events" in shown
    assert f"{origin_a}:" not in shown
    cp = a.ctl("status", "--origin", "nobody-1234")
    assert cp.returncode == 2 and "no origin" in cp.stderr, cp.stderr


def test_an_edited_row_of_another_origin_fails_verify_all_origins(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    a, b = shared_homes(pg_database.url), shared_homes(pg_database.url)
    a.start()
    b.start()
    annotate(a, 3, "a")
    annotate(b, 3, "b")
    origin_b = b.call("status")["events"]["origin"]
    with psycopg.connect(pg_database.url, autocommit=True) as conn:
        conn.execute("ALTER TABLE tsuku.events DISABLE TRIGGER events_append_only")
        conn.execute(
            'UPDATE tsuku.events SET payload = \'{"i":0,"tag":"forged"}\''
            " WHERE origin = %s AND type = 'client.note' AND payload LIKE '%%\"i\":0%%'",
            (origin_b,),
        )
    # a's own chain is intact; across origins, b's edit shows.
    a.ctl("events", "verify", check=True)
    cp = a.ctl("events", "verify", "--all-origins")
    assert cp.returncode == 26, cp.stdout + cp.stderr
    assert origin_b in cp.stderr and "does not match its hash" in cp.stderr
    assert "Traceback" not in cp.stderr


def test_a_cut_database_is_a_typed_error_and_nothing_acknowledged_is_lost(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    with TcpProxy(("127.0.0.1", pg_database.server.port)) as proxy:
        t = shared_homes(pg_database.url_via(proxy.port))
        t.start()
        annotate(t, 10, "before")
        acknowledged = {e["payload"]["i"] for e in listed(t) if e["type"] == "client.note"}
        assert acknowledged == set(range(10))

        proxy.cut()
        with pytest.raises(RemoteError) as cut:
            annotate(t, 1, "during")
        assert cut.value.remote_code == "ledger_unavailable"
        status = t.ctl("status", "--json", check=True)
        assert json.loads(status.stdout)["events"]["unreachable"]
        human = t.ctl("status", check=True).stdout
        assert "cannot be reached" in human
        # Appends are refused while it is out of reach (no id handed out), not queued.
        with pytest.raises(RemoteError) as refused:
            annotate(t, 1, "refused")
        assert refused.value.remote_code == "ledger_unavailable"
        cp = t.ctl("events", "--limit", "5")
        assert cp.returncode == 5 and "Traceback" not in cp.stderr, cp.stderr

        proxy.restore()
        wait_until(
            lambda: t.call("status")["events"]["unreachable"] is None,
            "the daemon writing again after the database came back",
        )
        annotate(t, 3, "after")
        notes = [e for e in listed(t) if e["type"] == "client.note"]
        tags = [(e["payload"]["tag"], e["payload"]["i"]) for e in notes]
        assert [x for x in tags if x[0] == "before"] == [("before", i) for i in range(10)]
        assert [x for x in tags if x[0] == "after"] == [("after", i) for i in range(3)]
        # The event sequenced as the cut came (its caller told "not written yet") kept
        # its place in the chain and is written once, after those before it.
        assert tags.count(("during", 0)) == 1
        assert tags.index(("during", 0)) == 10
        assert "refused" not in {x[0] for x in tags}
        t.ctl("events", "verify", check=True)


def test_a_dead_daemons_run_is_settled_from_the_shared_ledger(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    """The start-up reads that settle a crash-abandoned run (the same SQL as on SQLite)
    work on PostgreSQL: an answered call is not charged again, the one in flight is
    charged at its worst case, and the reservations are settled at their shares."""
    import time

    import trio

    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    t = shared_homes(pg_database.url)
    session = "create-0123456789ab"

    async def die_mid_call() -> None:
        d = Daemon(config=configmod.resolve(env=t.env), env=t.env)
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
    t.start()
    deadline = time.monotonic() + 10
    settled: list[dict[str, Any]] = []
    while len(settled) < 2 and time.monotonic() < deadline:
        settled = listed(t, "--type", "budget.settled")
        time.sleep(0.05)
    assert [e["payload"]["actual_usd"] for e in settled] == [
        pytest.approx(0.02),
        pytest.approx(0.01),
    ]
    (cut,) = [e["payload"] for e in listed(t, "--type", "llm.cut_off")]
    assert cut["call"] == 3 and cut["reason"] == "abandoned" and cut["estimated"] is True
    assert t.call("status")["budget"]["reserved_usd"] == 0


def test_a_daemon_whose_ledger_cannot_be_reached_says_so_at_start(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    with TcpProxy(("127.0.0.1", pg_database.server.port)) as proxy:
        proxy.cut()
        t = shared_homes(pg_database.url_via(proxy.port))
        proc = t.start(wait=False)
        _out, err = proc.communicate(timeout=60)
    text = err.decode()
    assert proc.returncode == 5, text
    assert "ledger_unavailable" in text or "cannot be reached" in text
    assert "Traceback" not in text and pg_database.server.password not in text


def test_a_role_without_rights_is_told_so_at_start_not_unreachable(
    pg_database: PgDatabase, shared_homes: Callable[[str], Tsuku]
) -> None:
    from tests.pg import url

    role = f"norights_{pg_database.name}"
    pg_database.server.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-norights-123'")
    try:
        t = shared_homes(url(role, "pw-norights-123", pg_database.server.port, pg_database.name))
        proc = t.start(wait=False)
        _out, err = proc.communicate(timeout=60)
        text = err.decode()
        assert proc.returncode == 5, text
        assert "refused this daemon" in text and "permission denied" in text
        assert "rights on schema tsuku" in text  # the hint
        assert "Traceback" not in text and "pw-norights-123" not in text
    finally:
        pg_database.server.execute(f"DROP OWNED BY {role}", pg_database.name)
        pg_database.server.execute(f"DROP ROLE {role}")
