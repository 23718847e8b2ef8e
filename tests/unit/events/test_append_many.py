"""``EventStore.append_many``, the path of a client's ``events.append``: the same rows,
hashes and rollups as appending one event at a time, nothing sequenced when any event
of the batch is refused (and the refusal names it), every secret redacted however few of
the batch's events hold one, and listeners handed only the types they fold."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.unit.events.test_store import writing
from tsukud.errors import InvalidParams
from tsukud.events import rollups
from tsukud.events.chain import link, link_many
from tsukud.events.store import (
    _SCHEMA,
    ROWS_PER_INSERT,
    Event,
    NewEvent,
    connect,
    insert_rows,
    verify_chain,
)
from tsukud.secrets import REDACTED, Redactor

Row = tuple[Any, ...]


def stored(path: Path) -> list[Row]:
    conn = connect(path, readonly=True)
    try:
        return list(
            conn.execute("SELECT id, ts, type, session, payload, hash FROM events ORDER BY id")
        )
    finally:
        conn.close()


def a_batch() -> list[NewEvent]:
    """Client notes of two sessions, and priced daemon events (their rollups add tokens
    and money, not only a count)."""
    events = [
        NewEvent("client.note", {"i": i, "ok": i % 3 == 0, "w": i / 4}, f"s-{i % 2}")
        for i in range(40)
    ]
    events += [
        NewEvent(
            "llm.turn",
            {
                "provider": "claude",
                "model": "m",
                "input_tokens": 10 + i,
                "output_tokens": i,
                "cost_usd": 0.001 * i,
            },
            "s-0",
        )
        for i in range(5)
    ]
    events.insert(7, NewEvent("client.other", {}, None))
    return events


async def test_a_batch_is_stored_as_the_same_rows_hashes_and_rollups_as_single_appends(
    tmp_path: Path,
) -> None:
    one, many = tmp_path / "one" / "t.db", tmp_path / "many" / "t.db"  # own checkpoints
    async with writing(one) as store:
        for e in a_batch():
            store.append_nowait(e.type, e.payload, e.session)
        await store.wait_durable(store.last_id)
    async with writing(many) as store:
        assert store.append_many(a_batch()) == (1, 46)
        assert store.append_many(a_batch()[:3]) == (47, 49)
        await store.wait_durable(49)
    want = stored(one)
    assert stored(many)[:46] == want
    for path in (one, many):
        conn = sqlite3.connect(path)
        try:
            assert verify_chain(conn).ok
            assert rollups.agree(conn)  # the sums the writer kept = a fold from scratch
        finally:
            conn.close()


def test_link_many_chains_each_row_to_the_one_before() -> None:
    types = ["client.a", "client.b", "client.a"]
    sessions = [None, "s", None]
    payloads = [b'{"i":1}', b"{}", b'{"x":"\xc3\xa9"}']
    prev, want = "f" * 64, []
    for k, (t, s, p) in enumerate(zip(types, sessions, payloads, strict=True)):
        prev = link(prev, 9 + k, "2027-01-15T08:00:00.000000Z", t, s, p.decode())
        want.append(prev)
    got = link_many("f" * 64, 9, "2027-01-15T08:00:00.000000Z", types, sessions, payloads)
    assert got == want


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (NewEvent("Client.Shout", {}), r"^events\[3\]\.type: invalid event type 'Client.Shout'"),
        (NewEvent("client.x", {}, "tab\there"), r"^events\[3\]\.session: invalid session id"),
        (NewEvent("client.x", {"when": object()}), r"^events\[3\]\.payload: .*not JSON"),
    ],
)
async def test_one_refused_event_refuses_the_batch_by_its_index_and_takes_no_id(
    tmp_path: Path, bad: NewEvent, message: str
) -> None:
    async with writing(tmp_path / "t.db") as store:
        good = [NewEvent("client.ok", {"i": i}) for i in range(6)]
        with pytest.raises(InvalidParams, match=message):
            store.append_many([*good[:3], bad, *good[3:]])
        assert store.last_id == 0  # nothing sequenced: no id, no hash, nothing buffered
        assert store.append_many(good[:2]) == (1, 2)
        await store.wait_durable(2)
    assert [r[2] for r in stored(tmp_path / "t.db")] == ["client.ok", "client.ok"]


async def test_every_secret_in_a_batch_is_redacted_and_the_other_events_kept_as_sent(
    tmp_path: Path,
) -> None:
    registered = "correct-horse-battery-staple"
    events = [NewEvent("client.note", {"i": i, "msg": "nothing to see"}) for i in range(30)]
    events[11] = NewEvent("client.note", {"i": 11, "api_key": "12345"})  # a credential's name
    events[29] = NewEvent("client.note", {"i": 29, "msg": f"it was {registered}!"})  # the last
    async with writing(tmp_path / "t.db", redactor=Redactor([registered])) as store:
        store.append_many(events)
        await store.wait_durable(30)
    rows = stored(tmp_path / "t.db")
    text = "".join(r[4] for r in rows)
    assert "12345" not in text and registered not in text
    assert rows[11][4] == f'{{"api_key":"{REDACTED}","i":11}}'
    assert rows[29][4] == f'{{"i":29,"msg":"it was {REDACTED}!"}}'
    assert rows[12][4] == '{"i":12,"msg":"nothing to see"}'
    conn = sqlite3.connect(tmp_path / "t.db")
    try:
        assert verify_chain(conn).ok  # the hash is over what was stored, not what was sent
    finally:
        conn.close()


async def test_listeners_are_handed_only_the_types_they_fold(tmp_path: Path) -> None:
    breakers: list[Event] = []
    everything: list[tuple[int, str]] = []
    async with writing(tmp_path / "t.db") as store:
        store.subscribe(breakers.append, {"breaker.closed"})
        store.append_many([NewEvent("client.a", {}), NewEvent("client.b", {})])
        assert breakers == []
        store.subscribe(lambda ev: everything.append((ev.id, ev.type)))
        store.append_many(
            [
                NewEvent("client.c", {}),
                NewEvent("breaker.closed", {"provider": "claude"}, "s"),
                NewEvent("client.d", {}),
            ]
        )
        store.append_nowait("client.e", {})
        store.append_nowait("breaker.closed", {"provider": "gemini"})
    assert [(e.id, e.type, e.session, e.payload) for e in breakers] == [
        (4, "breaker.closed", "s", {"provider": "claude"}),
        (7, "breaker.closed", None, {"provider": "gemini"}),
    ]
    assert everything == [
        (3, "client.c"),
        (4, "breaker.closed"),
        (5, "client.d"),
        (6, "client.e"),
        (7, "breaker.closed"),
    ]


async def test_of_several_refused_events_the_first_is_named(tmp_path: Path) -> None:
    ok, long_session = NewEvent("client.ok", {}), "s" * 129
    async with writing(tmp_path / "t.db") as store:
        with pytest.raises(InvalidParams, match=r"^events\[1\]\.session"):
            store.append_many(
                [ok, NewEvent("client.ok", {}, long_session), ok, NewEvent("client.BAD", {})]
            )
        with pytest.raises(InvalidParams, match=r"^events\[2\]\.type"):
            store.append_many(
                [
                    *[NewEvent("client.ok", {}, f"s-{i}") for i in range(2)],
                    NewEvent("client.BAD", {}),
                    NewEvent("client.ok", {}, long_session),
                    NewEvent("client.BAD", {}),
                ]
            )
        assert store.last_id == 0


async def test_batches_of_concurrent_appenders_each_get_consecutive_ids_in_one_chain(
    tmp_path: Path,
) -> None:
    got: dict[str, tuple[int, int]] = {}

    async def appender(name: str) -> None:
        for k in range(5):
            batch = [NewEvent(f"client.{name}", {"k": k, "i": i}) for i in range(20)]
            got[f"{name}{k}"] = store.append_many(batch)
            await store.wait_durable(got[f"{name}{k}"][1])  # lets the others run between

    async with writing(tmp_path / "t.db") as store, trio.open_nursery() as nursery:
        for name in ("a", "b", "c"):
            nursery.start_soon(appender, name)
    rows = stored(tmp_path / "t.db")
    assert len(rows) == 300 and [r[0] for r in rows] == list(range(1, 301))
    for key, (first, last) in got.items():
        assert last - first == 19
        assert {r[2] for r in rows[first - 1 : last]} == {f"client.{key[0]}"}  # none between
        assert [r[4] for r in rows[first - 1 : last]] == [
            f'{{"i":{i},"k":{key[1]}}}' for i in range(20)
        ]
    conn = sqlite3.connect(tmp_path / "t.db")
    try:
        assert verify_chain(conn).ok
    finally:
        conn.close()


@pytest.mark.parametrize("n", [1, 99, 100, 101, 250, 300])
def test_rows_inserted_a_hundred_a_statement_are_the_rows_executemany_inserts(n: int) -> None:
    """The writer's multi-row INSERT (``insert_rows``) against the one-row statement, on
    both sides of each multiple of ``ROWS_PER_INSERT``: the same rows, in order, none
    lost at the boundary."""
    rows = [
        (
            i,
            f"2027-01-01T00:00:{i % 60:02d}.000000Z",
            "client.a",
            None if i % 3 else "s",
            "{}",
            f"{i:064x}",
        )
        for i in range(1, n + 1)
    ]
    got, want = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for conn in (got, want):
        conn.executescript(_SCHEMA)
    insert_rows(got, rows)
    want.executemany(
        "INSERT INTO events (id, ts, type, session, payload, hash) VALUES (?, ?, ?, ?, ?, ?)", rows
    )
    query = "SELECT id, ts, type, session, payload, hash FROM events ORDER BY id"
    assert list(got.execute(query)) == list(want.execute(query)) == rows
    assert ROWS_PER_INSERT == 100


async def test_a_batch_of_hundreds_is_stored_whole_and_chained(tmp_path: Path) -> None:
    events = [NewEvent("client.note", {"i": i}, f"s-{i % 7}") for i in range(257)]
    async with writing(tmp_path / "t.db") as store:
        first, last = store.append_many(events)
        await store.wait_durable(last)
    rows = stored(tmp_path / "t.db")
    assert (first, last) == (1, 257) and [r[0] for r in rows] == list(range(1, 258))
    assert [r[4] for r in rows] == [f'{{"i":{i}}}' for i in range(257)]
    conn = sqlite3.connect(tmp_path / "t.db")
    try:
        assert verify_chain(conn).ok
    finally:
        conn.close()
