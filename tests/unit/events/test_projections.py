"""Projections fold events into state; a rebuild from stored rows (also rows an earlier
version wrote) gives the same state the live folds built."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from tests.unit.events.conftest import StoreFactory
from tsukud.clock import FixedClock, iso
from tsukud.events.chain import GENESIS, link
from tsukud.events.projections import (
    DAY,
    Breakers,
    InstalledTools,
    Spend,
    State,
    rebuild,
    to_micro,
)
from tsukud.events.store import Event, EventStore, connect

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z
TODAY = iso(NOW)[:10]


def ev(
    type_: str, payload: dict[str, Any], *, ts: float = NOW, session: str | None = None
) -> Event:
    return Event(0, iso(ts), type_, session, payload, "")


def test_spend_holds_reservations_until_settled_at_the_actual_cost() -> None:
    s = Spend()
    s.apply(ev("budget.reserved", {"reservation": "r-1", "day": TODAY, "amount_usd": 0.5}))
    assert (s.reserved(TODAY), s.spent(TODAY)) == (to_micro(0.5), 0)
    s.apply(ev("budget.settled", {"reservation": "r-1", "actual_usd": 0.2}))
    assert (s.reserved(TODAY), s.spent(TODAY), s.committed(TODAY)) == (0, 200_000, 200_000)


def test_a_settlement_without_its_reservation_counts_on_its_own_day() -> None:
    s = Spend()
    s.apply(ev("budget.settled", {"reservation": "r-x", "day": "2027-01-14", "actual_usd": 0.1}))
    s.apply(ev("budget.settled", {"reservation": "r-y", "actual_usd": 0.3}))  # no day: the row's
    assert s.spent("2027-01-14") == 100_000
    assert s.spent(TODAY) == 300_000


def test_breakers_count_only_failures_that_say_nothing_about_the_request() -> None:
    b = Breakers()
    b.apply(ev("llm.failed", {"provider": "claude", "error_type": "overloaded"}))
    b.apply(ev("llm.failed", {"provider": "claude", "error_type": "auth", "breaker": False}))
    st = b.get("claude")
    assert (st.failures, st.last_error) == (1, "auth")
    b.apply(ev("breaker.opened", {"provider": "claude", "failures": 1}))
    assert (st.state, st.opened_at) == ("open", NOW)
    b.apply(ev("breaker.half_opened", {"provider": "claude"}))
    assert st.state == "half_open"
    b.apply(ev("llm.turn", {"provider": "claude", "model": "m"}))
    assert st.failures == 0
    b.apply(ev("breaker.closed", {"provider": "claude"}))
    assert (st.state, st.opened_at) == ("closed", None)
    assert list(b.states) == ["claude"]


def test_installed_tools_keep_the_whole_payload_and_forget_removed_ones() -> None:
    t = InstalledTools()
    done = {"tool": "jq", "version": "1.7", "binaries": {"jq": {"path": "bin/jq"}}, "tag": "v1"}
    t.apply(ev("install.completed", done))
    assert t.tools["jq"] == {**done, "installed_at": iso(NOW)}
    t.apply(ev("install.removed", {"tool": "jq", "version": "1.7"}))
    assert t.tools == {}


def test_state_routes_each_type_to_the_projections_that_fold_it() -> None:
    st = State()
    st.apply(ev("generation.started", {"tool": "jq"}))
    st.apply(ev("client.note", {"provider": "claude"}))  # not folded anywhere
    st.apply(ev("tool.called", {"name": "fetch_file", "ok": True, "duration_ms": 3}))
    assert st.generations.count(NOW) == 1
    assert st.breakers.states == {}


def _insert_raw(path: Path, events: list[tuple[float, str, dict[str, Any]]]) -> None:
    """Write rows the way an earlier daemon did: straight SQL, its own payload shapes."""
    conn = connect(path)
    prev = GENESIS
    for id_, (ts, type_, payload) in enumerate(events, 1):
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        prev = link(prev, id_, iso(ts), type_, None, text)
        conn.execute(
            "INSERT INTO events VALUES (?, ?, ?, ?, ?, ?)", (id_, iso(ts), type_, None, text, prev)
        )
    conn.close()


async def test_rebuild_reads_old_rows_leniently_and_skips_what_cannot_be_folded(
    tmp_path: Path,
) -> None:
    db = tmp_path / "t.db"
    store = EventStore(db, clock=FixedClock(NOW))
    store.open()  # the schema
    store.close_connection()
    _insert_raw(
        db,
        [
            # An extra key the catalogue does not know, and no `purpose` (older shape).
            (
                NOW - 60,
                "budget.reserved",
                {"reservation": "r-1", "day": TODAY, "amount_usd": 0.4, "host": "x"},
            ),
            (NOW - 50, "llm.failed", {"provider": "gemini", "error_type": "timeout", "retries": 2}),
            (NOW - 40, "install.completed", {"tool": "jq", "version": "1.7", "binaries": {}}),
            # Missing what its reader needs: skipped and counted, not fatal.
            (NOW - 30, "budget.settled", {"actual_usd": 0.1}),
            # Outside the spend horizon (two days): not even read.
            (
                NOW - 3 * DAY,
                "budget.reserved",
                {"reservation": "r-0", "day": "2027-01-12", "amount_usd": 9.0},
            ),
        ],
    )
    conn = connect(db, readonly=True)
    try:
        state = rebuild(conn, NOW)
    finally:
        conn.close()
    assert state.unreadable == 1
    assert list(state.spend.open) == ["r-1"]
    assert state.spend.reserved(TODAY) == to_micro(0.4)
    assert state.breakers.get("gemini").failures == 1
    assert set(state.installed.tools) == {"jq"}


async def test_rebuilt_state_equals_the_live_state(backend: StoreFactory, tmp_path: Path) -> None:
    store = backend(tmp_path, FixedClock(NOW))
    store.open()
    live = State()
    store.subscribe(live.apply)
    async with trio.open_nursery() as nursery:
        await nursery.start(store.run)
        store.append_nowait("budget.reserved", {"reservation": "r", "day": TODAY, "amount_usd": 1})
        store.append_nowait("budget.settled", {"reservation": "r", "actual_usd": 0.25})
        store.append_nowait("llm.failed", {"provider": "claude", "error_type": "429"})
        store.append_nowait("generation.started", {"tool": "jq", "purpose": "create"})
        store.append_nowait("install.completed", {"tool": "jq", "version": "1", "binaries": {}})
        await store.wait_durable(store.last_id)
        store.close()
    store.close_connection()
    again = store.read_sync(lambda conn: rebuild(conn, NOW))
    assert again.spend.settled == live.spend.settled == {TODAY: 250_000}
    assert again.breakers.get("claude") == live.breakers.get("claude")
    assert again.generations.count(NOW) == live.generations.count(NOW) == 1
    assert again.installed.tools == live.installed.tools
    assert again.unreadable == 0
