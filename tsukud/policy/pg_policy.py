"""The budget and the hourly limit decided by a shared PostgreSQL (``ledger.url``).

Several daemons naming one database share one day's budget and one hour's generation
count. A single daemon decides against its in-memory projections with no ``await``
between check and record (``policy/__init__``); across processes that is no longer
atomic, so here the database decides: a reservation is ONE conditional UPDATE of the
day's row (``held + amount <= limit``), which takes the row's lock, so two daemons
racing for the last dollar serialise on it and the second one's condition is false. The
table's CHECK (``held <= limit``) refuses an over-spent row whoever writes it.

The order with the event ledger: the database row is the truth, the event follows.
``budget.reserved`` cannot commit in the reservation's transaction: the store's batch
writer sequences and hashes an event before its batch commits, so a refused UPDATE would
leave a hashed event that must not exist. So the hold commits first (with a
``budget_holds`` row naming the reservation and this origin), then ``budget.reserved`` is
appended and awaited; no call is made before both. A hold whose event never got written
(the daemon died, or the ledger went out of reach, in between) holds money no call used:
it is released at zero by this origin's next start (:meth:`PgDays.release_unrecorded`),
or at once when the append fails. Money is thus held early and released late, never
the other way round: nothing can be over-spent, and a settlement is idempotent (an open
hold is settled once), so a retried one is not counted twice.

The limit: each reservation must fit under the *reserving daemon's own* configured
``llm.daily_budget``, counting everything the whole team holds and spent that day. The
day's total therefore never passes the largest limit any daemon is configured with, and
a daemon configured lower stops at its own. The row keeps the limit of the last
reservation granted (what ``status`` shows as the shared limit).

Connections: ``pg_db.SharedDb``. The breakers: ``pg_breakers``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psycopg
import trio

from tsukud import log
from tsukud.clock import Clock
from tsukud.errors import LedgerUnavailable
from tsukud.events.projections import State
from tsukud.events.store import EventStore
from tsukud.policy.breaker import BreakerSettings, CircuitBreakers
from tsukud.policy.budget import Days, Hold
from tsukud.policy.pg_breakers import SharedBreakers
from tsukud.policy.pg_db import SharedDb
from tsukud.policy.pg_holds import DayTotals, settle_hold
from tsukud.policy.pg_leases import OriginLease
from tsukud.policy.ratelimit import Hours, Slot

# The reservation, as one statement: the condition IS the budget (its mutation test:
# tests/integration/ledger_pg/test_shared_budget.py).
_RESERVE = (
    "UPDATE tsuku.budget_days SET held_micro = held_micro + %(a)s,"
    " open_micro = open_micro + %(a)s, limit_micro = %(lim)s"
    " WHERE day = %(day)s AND held_micro + %(a)s <= %(lim)s"
    " RETURNING held_micro, limit_micro, spent_micro, open_micro"
)


class PgDays:
    """The day's budget as a row of ``tsuku.budget_days`` (see the module's docstring)."""

    def __init__(self, db: SharedDb, origin: Callable[[], str]) -> None:
        self._db = db
        self._origin = origin
        self._totals: dict[str, DayTotals] = {}  # the last numbers read, for ``status``
        # Settlements to make again once the database answers: a hold whose event was
        # never written or whose answer was lost (at 0: no call used it), a settlement
        # cut off (at its actual cost). Made by the next call or the lease's round.
        self._owed: dict[str, int] = {}

    async def hold(self, rid: str, day: str, amount: int, limit: int) -> Hold:
        await self.settle_owed()
        origin = self._origin()

        def work(conn: psycopg.Connection[Any]) -> Hold:
            conn.execute(
                "INSERT INTO tsuku.budget_days (day, limit_micro) VALUES (%s, %s)"
                " ON CONFLICT (day) DO NOTHING",
                (day, limit),
            )
            row = conn.execute(_RESERVE, {"a": amount, "lim": limit, "day": day}).fetchone()
            if row is None:
                held = conn.execute(
                    "SELECT held_micro FROM tsuku.budget_days WHERE day = %s", (day,)
                ).fetchone()
                committed = int(held[0]) if held is not None else 0
                return Hold(granted=False, committed=committed)
            conn.execute(
                "INSERT INTO tsuku.budget_holds (reservation, origin, day, amount_micro)"
                " VALUES (%s, %s, %s, %s)",
                (rid, origin, day, amount),
            )
            self._totals[day] = DayTotals(*(int(x) for x in row[1:]))
            return Hold(granted=True, committed=int(row[0]) - amount)

        try:
            return await self._db.call(work)
        except LedgerUnavailable:
            self._owed[rid] = 0  # it may have committed before the answer was lost
            raise

    def unrecorded(self, rid: str) -> None:
        """The hold of ``rid`` committed but its ``budget.reserved`` could not be
        appended: release it (now if the database answers, else at a later call)."""
        self._owed[rid] = 0

    async def settle_owed(self) -> None:
        """Make the settlements owed (each once, so one already made is not counted
        again); still out of reach, the next call (or start) tries again."""
        for rid, actual in list(self._owed.items()):
            try:
                await self._settle(rid, actual)
            except LedgerUnavailable:
                return
            # Another task's round may have made it meanwhile: once is once.
            self._owed.pop(rid, None)
            log.get().info("budget.owed_settled", reservation=rid, actual_micro=actual)

    async def settle(self, rid: str, actual: int) -> None:
        try:
            await self._settle(rid, actual)
        except LedgerUnavailable:
            self._owed[rid] = actual  # the row is the truth: made when the database is back
            raise

    async def _settle(self, rid: str, actual: int) -> None:
        settled = await self._db.call(lambda conn: settle_hold(conn, rid, actual))
        if settled is not None:
            self._totals[settled[0]] = settled[1]

    def release_unrecorded(self, recorded: set[str]) -> int:
        """At start (blocking, nothing in flight): release this origin's open holds whose
        ``budget.reserved`` is not in its chain (``recorded``: the open reservations the
        chain has). They held money no call used."""
        origin = self._origin()

        def work(conn: psycopg.Connection[Any]) -> int:
            rows = conn.execute(
                "SELECT reservation FROM tsuku.budget_holds"
                " WHERE origin = %s AND actual_micro IS NULL",
                (origin,),
            ).fetchall()
            orphans = [str(r[0]) for r in rows if str(r[0]) not in recorded]
            for rid in orphans:
                settle_hold(conn, rid, 0)
            return len(orphans)

        released = self._db.run(work)
        if released:
            log.get().info("budget.unrecorded_released", count=released)
        return released

    async def refresh(self, day: str) -> None:
        """Read the day's shared numbers for ``status``; out of reach, the last ones read
        stay (``status`` says the ledger is unreachable)."""

        def work(conn: psycopg.Connection[Any]) -> DayTotals:
            row = conn.execute(
                "SELECT limit_micro, spent_micro, open_micro FROM tsuku.budget_days WHERE day = %s",
                (day,),
            ).fetchone()
            return DayTotals() if row is None else DayTotals(*(int(x) for x in row))

        totals = await self._db.glance(work)
        if totals is not None:
            self._totals[day] = totals

    def spent(self, day: str) -> int:
        return self._totals.get(day, DayTotals()).spent

    def reserved(self, day: str) -> int:
        return self._totals.get(day, DayTotals()).open


# The hour's generation, as one statement (the same shape as the reservation).
_TAKE_HOUR = (
    "UPDATE tsuku.generation_hours SET started_n = started_n + 1, limit_n = %(lim)s"
    " WHERE hour = %(hour)s AND started_n < %(lim)s RETURNING started_n"
)


def _hour(now: float) -> tuple[str, float]:
    """The UTC clock hour ``now`` is in, and when the next one starts."""
    start = now - now % 3600
    return time.strftime("%Y-%m-%dT%H", time.gmtime(start)), start + 3600


class PgHours:
    """The hour's generations as a row of ``tsuku.generation_hours``: a clock hour (UTC),
    not the rolling hour of one daemon. A daemon's own limit applies to the team's count,
    as for the budget."""

    def __init__(self, db: SharedDb) -> None:
        self._db = db
        self._counts: dict[str, int] = {}  # the last counts read, for ``status``

    async def take(self, now: float, limit: int) -> Slot:
        hour, next_hour = _hour(now)

        def work(conn: psycopg.Connection[Any]) -> Slot:
            conn.execute(
                "INSERT INTO tsuku.generation_hours (hour, limit_n) VALUES (%s, %s)"
                " ON CONFLICT (hour) DO NOTHING",
                (hour, max(limit, 0)),
            )
            row = conn.execute(_TAKE_HOUR, {"lim": limit, "hour": hour}).fetchone()
            if row is not None:
                return Slot(True, int(row[0]) - 1, None)
            return Slot(False, _started(conn, hour), next_hour)

        slot = await self._db.call(work)
        self._counts[hour] = slot.count + (1 if slot.granted else 0)
        return slot

    async def peek(self, now: float, limit: int) -> Slot:
        hour, next_hour = _hour(now)
        count = await self._db.call(lambda conn: _started(conn, hour))
        self._counts[hour] = count
        return Slot(count < limit, count, None if count < limit else next_hour)

    async def refresh(self, now: float) -> None:
        hour, _ = _hour(now)
        count = await self._db.glance(lambda conn: _started(conn, hour))
        if count is not None:
            self._counts[hour] = count

    def count(self, now: float) -> int:
        return self._counts.get(_hour(now)[0], 0)


def _started(conn: psycopg.Connection[Any], hour: str) -> int:
    row = conn.execute(
        "SELECT started_n FROM tsuku.generation_hours WHERE hour = %s", (hour,)
    ).fetchone()
    return 0 if row is None else int(row[0])


class SharedPolicy:
    """The policy of every daemon on one shared ledger (``policy.backend``'s interface):
    one set of connections, and parts that outlive the daemon's re-made policy objects
    (a hold waiting to be released stays known)."""

    def __init__(self, url: str, origin: Callable[[], str]) -> None:
        self._db = SharedDb(url)
        self._origin = origin
        self._days = PgDays(self._db, origin)
        self._hours = PgHours(self._db)
        self._lease = OriginLease(self._db, origin)

    def days(self, state: State) -> Days:
        return self._days

    def hours(self, state: State) -> Hours:
        return self._hours

    def breakers(
        self,
        store: EventStore,
        state: State,
        clock: Clock,
        settings: Callable[[], BreakerSettings],
    ) -> CircuitBreakers:
        return SharedBreakers(store, state.breakers, clock, settings, self._db, self._origin)

    async def keep(self, store: EventStore, lease_s: Callable[[], float]) -> None:
        """Every quarter of ``policy.hold_lease_seconds``: renew this daemon's lease,
        settle silent daemons' holds (``pg_leases``) and this one's owed settlements."""
        while True:
            lease = lease_s()
            await self._lease.round(store, lease)
            await self._days.settle_owed()
            await trio.sleep(lease / 4)

    def close(self) -> None:
        self._db.close()
