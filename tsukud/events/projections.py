"""State as folds over events.

Each projection names the event types it folds and how far back they matter (its
horizon), and applies one event at a time. The same ``apply`` runs at start-up over
stored events and live on every append, so the rebuilt state is the live state by
construction. Payloads are read through their catalogue Structs; a stored row that no
longer fits (a field a reader needs is missing) is skipped and counted, never fatal.
"""

from __future__ import annotations

import sqlite3
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec

from tsukud.clock import iso, parse_iso, utc_day
from tsukud.events.catalogue import (
    BreakerChanged,
    BreakerFailure,
    BreakerOpened,
    BudgetReserved,
    BudgetSettled,
    GenerationStarted,
    InstallCompleted,
    InstallRemoved,
    LlmFailed,
    LlmTurn,
    read,
)
from tsukud.events.store import Event, iter_rows, row_to_event

DAY = 86400.0
HOUR = 3600.0


def to_micro(usd: float) -> int:
    """Money is counted in integer micro-dollars so sums never drift."""
    return round(usd * 1_000_000)


def to_usd(micro: int) -> float:
    return micro / 1_000_000


class Projection(Protocol):
    types: frozenset[str]

    def horizon(self, now: float) -> float | None: ...

    def apply(self, ev: Event) -> None: ...


@dataclass
class Reservation:
    id: str
    session: str | None
    day: str
    amount: int  # micro-USD


@dataclass
class Spend:
    """Daily LLM spend: settled costs plus open reservations, per UTC day; and apart,
    what replayed turns (``llm.turn`` with ``replayed``) cost when they were recorded,
    which nobody spent: shown, never counted against the budget."""

    types: frozenset[str] = frozenset({"budget.reserved", "budget.settled", "llm.turn"})
    open: dict[str, Reservation] = field(default_factory=dict)
    settled: dict[str, int] = field(default_factory=dict)
    replayed: dict[str, int] = field(default_factory=dict)

    def horizon(self, now: float) -> float | None:
        # A reservation lives for one run; two days back covers a run across midnight.
        return now - 2 * DAY

    def apply(self, ev: Event) -> None:
        if ev.type == "budget.reserved":
            res = read(ev.payload, BudgetReserved)
            self.open[res.reservation] = Reservation(
                res.reservation, ev.session, res.day, to_micro(res.amount_usd)
            )
        elif ev.type == "budget.settled":
            s = read(ev.payload, BudgetSettled)
            r = self.open.pop(s.reservation, None)
            day = r.day if r is not None else (s.day or ev.ts[:10])
            self.settled[day] = self.settled.get(day, 0) + to_micro(s.actual_usd)
        elif ev.type == "llm.turn":
            turn = read(ev.payload, LlmTurn)
            if turn.replayed and turn.replayed_cost_usd:
                day = ev.ts[:10]
                self.replayed[day] = self.replayed.get(day, 0) + to_micro(turn.replayed_cost_usd)

    def committed(self, day: str) -> int:
        held = sum(r.amount for r in self.open.values() if r.day == day)
        return self.settled.get(day, 0) + held

    def spent(self, day: str) -> int:
        return self.settled.get(day, 0)

    def reserved(self, day: str) -> int:
        return sum(r.amount for r in self.open.values() if r.day == day)

    def replayed_on(self, day: str) -> int:
        """What the day's replayed turns cost when recorded (micro-USD): not spent."""
        return self.replayed.get(day, 0)


@dataclass
class GenerationWindow:
    """Recipe generations started in the last hour (a rolling window, not a clock hour).
    A replayed one (its answers from a recording) calls no provider: not counted."""

    types: frozenset[str] = frozenset({"generation.started"})
    starts: deque[float] = field(default_factory=deque)

    def horizon(self, now: float) -> float | None:
        return now - HOUR

    def apply(self, ev: Event) -> None:
        if not read(ev.payload, GenerationStarted).replayed:
            self.starts.append(parse_iso(ev.ts))

    def count(self, now: float) -> int:
        while self.starts and self.starts[0] <= now - HOUR:
            self.starts.popleft()
        return len(self.starts)

    def next_free(self, now: float) -> float | None:
        self.count(now)
        return self.starts[0] + HOUR if self.starts else None


@dataclass
class BreakerState:
    scope: str  # an LLM provider (its spec's name) or a remote service ("registry:<builder>")
    state: str = "closed"  # closed | open | half_open
    failures: int = 0  # consecutive
    opened_at: float | None = None
    last_error: str | None = None


@dataclass
class Breakers:
    """Per-scope circuit state. Streaks older than a day are forgotten on restart.

    An LLM provider's streak is counted from ``llm.turn`` / ``llm.failed``, except a
    replayed one's (a recording answered, or missed: the provider was not asked); any
    other scope's from ``breaker.failure`` / ``breaker.streak_ended``. The transitions
    are the same events for both, keyed by ``scope`` (old rows: ``provider``)."""

    types: frozenset[str] = frozenset(
        {
            "llm.turn",
            "llm.failed",
            "breaker.failure",
            "breaker.streak_ended",
            "breaker.opened",
            "breaker.half_opened",
            "breaker.closed",
        }
    )
    states: dict[str, BreakerState] = field(default_factory=dict)

    def horizon(self, now: float) -> float | None:
        return now - DAY

    def get(self, scope: str) -> BreakerState:
        st = self.states.get(scope)
        if st is None:
            st = self.states[scope] = BreakerState(scope)
        return st

    def apply(self, ev: Event) -> None:
        if ev.type == "llm.turn":
            turn = read(ev.payload, LlmTurn)
            if not turn.replayed:
                self.get(turn.provider).failures = 0
        elif ev.type == "llm.failed":
            failed = read(ev.payload, LlmFailed)
            if failed.replayed:
                return
            st = self.get(failed.provider)
            # Only failures that say nothing about our request (429, 5xx, timeouts)
            # count towards opening the circuit; a 401 is the user's to fix.
            if failed.breaker:
                st.failures += 1
            st.last_error = failed.error_type or "error"
        elif ev.type == "breaker.failure":
            failure = read(ev.payload, BreakerFailure)
            st = self.get(failure.key)
            st.failures += 1
            st.last_error = failure.category
        elif ev.type == "breaker.streak_ended":
            self.get(read(ev.payload, BreakerChanged).key).failures = 0
        elif ev.type == "breaker.opened":
            st = self.get(read(ev.payload, BreakerOpened).key)
            st.state, st.opened_at = "open", parse_iso(ev.ts)
        elif ev.type == "breaker.half_opened":
            self.get(read(ev.payload, BreakerChanged).key).state = "half_open"
        elif ev.type == "breaker.closed":
            st = self.get(read(ev.payload, BreakerChanged).key)
            st.state, st.failures, st.opened_at = "closed", 0, None


@dataclass
class InstalledTools:
    types: frozenset[str] = frozenset({"install.completed", "install.removed"})
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)

    def horizon(self, now: float) -> float | None:
        return None

    def apply(self, ev: Event) -> None:
        if ev.type == "install.completed":
            # The whole payload is kept: tools.list and the shell hook's index show it.
            done = read(ev.payload, InstallCompleted)
            self.tools[done.tool] = {**ev.payload, "installed_at": ev.ts}
        else:
            self.tools.pop(read(ev.payload, InstallRemoved).tool, None)


@dataclass
class State:
    spend: Spend = field(default_factory=Spend)
    generations: GenerationWindow = field(default_factory=GenerationWindow)
    breakers: Breakers = field(default_factory=Breakers)
    installed: InstalledTools = field(default_factory=InstalledTools)
    unreadable: int = 0  # stored rows skipped at rebuild: they no longer fit their Struct

    def __post_init__(self) -> None:
        # Most appended events (tool calls, client notes) fold into nothing: one set
        # lookup instead of one per projection.
        self._types = frozenset().union(*(p.types for p in self.projections()))

    @property
    def types(self) -> frozenset[str]:
        """Every type some projection folds (the store calls ``apply`` for these only)."""
        return self._types

    def projections(self) -> list[Projection]:
        return [self.spend, self.generations, self.breakers, self.installed]

    def apply(self, ev: Event) -> None:
        if ev.type not in self._types:
            return
        for p in self.projections():
            if ev.type in p.types:
                p.apply(ev)


def rebuild(conn: sqlite3.Connection, now: float) -> State:
    """Fold the stored events each projection cares about, oldest first."""
    state = State()
    for p in state.projections():
        types = sorted(p.types)
        marks = ",".join("?" * len(types))
        # Only placeholders are interpolated; values are bound.
        sql = f"SELECT id, ts, type, session, payload, hash FROM events WHERE type IN ({marks})"  # noqa: S608
        params: list[Any] = list(types)
        h = p.horizon(now)
        if h is not None:
            sql += " AND ts >= ?"
            params.append(iso(h))
        state.unreadable += fold_rows(conn, sql + " ORDER BY id", params, p.apply)
    return state


def fold_rows(
    conn: sqlite3.Connection, sql: str, params: list[Any], apply: Callable[[Event], None]
) -> int:
    """Apply each event the query selects, oldest first; the number of rows skipped
    because they no longer fit their Struct."""
    unreadable = 0
    for rows in iter_rows(conn, sql, params):
        for row in rows:
            try:
                apply(row_to_event(row))
            except msgspec.ValidationError:
                unreadable += 1
    return unreadable


def today(now: float) -> str:
    return utc_day(now)
