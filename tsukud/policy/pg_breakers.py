"""LLM providers' circuit breakers shared in PostgreSQL (``ledger.url``): one circuit per
provider for every daemon naming the database, and exactly one daemon's half-open probe.

A row of ``tsuku.breakers`` per provider is the circuit. A counted failure adds to the
team's streak and, in the same transaction, opens the circuit when the streak is full
(the row's lock makes that one daemon's step). After ``open_until`` the probe is won by
one conditional UPDATE (``probe_owner``, ``probe_lease_until``): exactly one daemon gets
the row back and sends its call; every other daemon (and every other run of the winner)
fails fast with ``circuit_open``. The probe's answer closes the circuit, its failure
opens it again for another cool-down; a probe owner that dies (or hangs) loses the probe
when its lease ends, and the next caller wins it. Times are the database's (``now()``),
so hosts whose clocks differ agree on when a circuit may be probed.

Each daemon still records the transitions it made as events (``breaker.opened``,
``breaker.half_opened``, ``breaker.closed``) and every call's ``llm.turn``/``llm.failed``,
so its chain tells what it saw; the decisions are the row's. A batch's registry scopes
(``registry:<builder>``, ...) are rows of the same table: the shared queue's claim asks
``admit_job`` while its transaction is open, so a circuit one daemon's failures opened
holds that registry's jobs back from every daemon, and one daemon's job is its probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from tsukud import log
from tsukud.clock import Clock, iso
from tsukud.errors import LedgerUnavailable
from tsukud.events.projections import Breakers
from tsukud.events.store import Event, EventStore
from tsukud.policy.breaker import (
    Admitted,
    BreakerSettings,
    BreakerShown,
    CircuitBreakers,
    CircuitOpen,
    Outcome,
    scope_fields,
)
from tsukud.policy.pg_db import SharedDb

# How long a probe is its owner's: longer than any one LLM call may take (the adapters'
# timeouts are well under it), short enough that a dead owner does not stall the team.
PROBE_LEASE_S = 300.0

# The half-open probe, as one statement: exactly one caller gets the row back.
_CLAIM_PROBE = (
    "UPDATE tsuku.breakers SET probe_owner = %(o)s,"
    " probe_lease_until = now() + make_interval(secs => %(lease)s)"
    " WHERE scope = %(s)s AND state = 'open' AND open_until <= now()"
    " AND (probe_owner IS NULL OR probe_lease_until < now()) RETURNING scope"
)
# The probe's failure opens the circuit again (only the probe's owner can).
_REOPEN = (
    "UPDATE tsuku.breakers SET state = 'open', opened_at = now(),"
    " open_until = now() + make_interval(secs => %(reset)s), probe_owner = NULL,"
    " probe_lease_until = NULL, failures = failures + 1, last_error = %(e)s"
    " WHERE scope = %(s)s AND probe_owner = %(o)s RETURNING scope"
)
# The failure that completes the team's streak opens it (once: it must be closed).
_OPEN = (
    "UPDATE tsuku.breakers SET state = 'open', opened_at = now(),"
    " open_until = now() + make_interval(secs => %(reset)s), probe_owner = NULL,"
    " probe_lease_until = NULL"
    " WHERE scope = %(s)s AND state = 'closed' AND failures >= %(n)s RETURNING scope"
)


@dataclass(frozen=True)
class Row:
    state: str
    failures: int
    open_until: float | None  # epoch seconds, the database's clock
    probe_owner: str | None
    last_error: str | None


class SharedBreakers(CircuitBreakers):
    """``CircuitBreakers`` whose LLM calls are admitted and judged by the shared rows."""

    def __init__(
        self,
        store: EventStore,
        breakers: Breakers,
        clock: Clock,
        settings: Callable[[], BreakerSettings],
        db: SharedDb,
        origin: Callable[[], str],
        lease_s: float = PROBE_LEASE_S,
    ) -> None:
        super().__init__(store, breakers, clock, settings)
        self._db = db
        self._origin = origin
        self.lease_s = lease_s
        self._rows: dict[str, Row] = {}  # the last read, for ``status`` and ``retry_at``
        self._probes: set[str] = set()  # providers whose probe this daemon holds

    async def enter(self, provider: str, *, session: str | None = None) -> bool:
        origin, lease = self._origin(), self.lease_s

        def work(conn: psycopg.Connection[Any]) -> tuple[str, Row | None]:
            row = _read(conn, provider)
            if row is None or row.state == "closed":
                return "closed", row
            won = conn.execute(_CLAIM_PROBE, {"o": origin, "lease": lease, "s": provider})
            if won.fetchone() is not None:
                return "probe", row
            return "shut", _read(conn, provider)

        verdict, row = await self._db.call(work)
        if row is not None:
            self._rows[provider] = row
        if verdict == "probe":
            self._probes.add(provider)
            self._store.append_nowait("breaker.half_opened", scope_fields(provider), session)
            return True
        if verdict == "shut":
            assert row is not None
            if row.open_until is not None and row.probe_owner is None:
                at = row.open_until
                raise CircuitOpen(
                    f"{provider} is failing; its circuit is open until {iso(at)}",
                    hint="tsuku will try it again then; other providers are used meanwhile.",
                    provider=provider,
                    retry_at=iso(at),
                )
            raise CircuitOpen(
                f"{provider} is being probed after failures (by {row.probe_owner}); "
                "try again shortly",
                provider=provider,
                retry_at=None,
            )
        return False

    async def call_failed(
        self,
        provider: str,
        error_type: str,
        *,
        counts: bool = True,
        session: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> Event:
        was_probe = provider in self._probes
        self._probes.discard(provider)
        opened = await self._count(provider, error_type, counts=counts, was_probe=was_probe)
        ev = self._failed_event(provider, error_type, counts, session, details)
        return self._opened_event(provider, session) if opened else ev

    async def _count(self, scope: str, error: str, *, counts: bool, was_probe: bool) -> bool:
        """A failure in the team's row: a probe's reopens the circuit; a counted one adds
        to the streak, and the one that completes it opens the circuit. True: opened."""
        origin = self._origin()
        st = self._settings()

        def work(conn: psycopg.Connection[Any]) -> tuple[bool, Row | None]:
            args = {"s": scope, "o": origin, "e": error, "reset": st.reset_seconds}
            if was_probe:
                reopened = conn.execute(_REOPEN, args).fetchone()
                if reopened is not None:
                    return True, _read(conn, scope)
            if not counts:
                conn.execute(
                    "UPDATE tsuku.breakers SET last_error = %(e)s WHERE scope = %(s)s", args
                )
                return False, _read(conn, scope)
            conn.execute(
                "INSERT INTO tsuku.breakers (scope, failures, last_error) VALUES (%(s)s, 1, %(e)s)"
                " ON CONFLICT (scope) DO UPDATE SET failures = tsuku.breakers.failures + 1,"
                " last_error = EXCLUDED.last_error",
                args,
            )
            opened = conn.execute(_OPEN, {**args, "n": st.failure_threshold}).fetchone()
            return opened is not None, _read(conn, scope)

        opened, row = await self._db.call(work)
        if row is not None:
            self._rows[scope] = row
        return opened

    def _opened_event(self, scope: str, session: str | None) -> Event:
        row = self._rows.get(scope)
        failures = row.failures if row is not None else 0
        return self._store.append_nowait(
            "breaker.opened", {**scope_fields(scope), "failures": failures}, session
        )

    async def call_succeeded(
        self, provider: str, turn: dict[str, Any], *, session: str | None = None
    ) -> Event:
        self._probes.discard(provider)
        # The turn first: the call was billed, and its cost must reach the ledger even
        # when the team's row cannot be told (the probe's lease gives it back then).
        ev = self._turn_event(provider, turn, session)
        try:
            closed, _streak = await self._close(provider)
        except LedgerUnavailable as e:
            log.get().warning("breaker.verdict_lost", scope=provider, error=e.message)
            return ev
        if closed:
            return self._store.append_nowait("breaker.closed", scope_fields(provider), session)
        return ev

    async def _close(self, scope: str) -> tuple[bool, bool]:
        """The service answered: the team's row closes and its streak starts over.
        (whether it was open, whether it had a streak)."""

        def work(conn: psycopg.Connection[Any]) -> tuple[bool, bool]:
            before = conn.execute(
                "SELECT state, failures FROM tsuku.breakers WHERE scope = %s FOR UPDATE",
                (scope,),
            ).fetchone()
            if before is None:
                return False, False
            conn.execute(
                "UPDATE tsuku.breakers SET state = 'closed', failures = 0, opened_at = NULL,"
                " open_until = NULL, probe_owner = NULL, probe_lease_until = NULL"
                " WHERE scope = %s AND (state <> 'closed' OR failures <> 0)",
                (scope,),
            )
            return str(before[0]) != "closed", int(before[1]) > 0

        closed = await self._db.call(work)
        # The row as it now is, not this daemon's own fold: that may still hold the
        # breaker.opened it recorded while another daemon's probe closed the circuit.
        self._rows[scope] = Row("closed", 0, None, None, None)
        return closed

    # ---- the batch's registries: the same rows, so every daemon's claims see them -----

    async def admit_job(self, scope: str, *, session: str | None = None) -> Admitted:
        """Asked by the shared queue's claim (its transaction open): ``wait`` while the
        team's circuit is open or another daemon holds its probe."""
        try:
            return "probe" if await self.enter(scope, session=session) else "go"
        except CircuitOpen:
            return "wait"

    async def judge_job(
        self, scope: str, failure: Outcome | None, *, session: str | None = None
    ) -> None:
        if failure is None or not failure.transport:
            self._probes.discard(scope)
            closed, streak = await self._close(scope)
            if closed:
                self._store.append_nowait("breaker.closed", scope_fields(scope), session)
            elif streak:
                self._store.append_nowait("breaker.streak_ended", scope_fields(scope), session)
            return
        was_probe = scope in self._probes
        self._probes.discard(scope)
        self._store.append_nowait(
            "breaker.failure",
            {"scope": scope, "category": failure.category, "message": failure.message},
            session,
        )
        if await self._count(scope, failure.category, counts=True, was_probe=was_probe):
            self._opened_event(scope, session)

    async def release_job(self, scope: str) -> None:
        await self.call_released(scope)

    def state(self, scope: str) -> str:
        """As the team's row was last read here (``admit_job``, a failure), else the
        daemon's own fold."""
        row = self._rows.get(scope)
        if row is None:
            return super().state(scope)
        if row.state == "open":
            return "half_open" if row.probe_owner is not None else "open"
        return "closed"

    async def call_released(self, provider: str) -> None:
        """A probe that ended without a verdict (cancelled) is given back at once."""
        if provider not in self._probes:
            return
        self._probes.discard(provider)
        origin = self._origin()
        await self._db.call(
            lambda conn: conn.execute(
                "UPDATE tsuku.breakers SET probe_owner = NULL, probe_lease_until = NULL"
                " WHERE scope = %s AND probe_owner = %s",
                (provider, origin),
            )
        )

    def retry_at(self, scope: str, settings: BreakerSettings | None = None) -> float | None:
        row = self._rows.get(scope)
        if row is None:
            return super().retry_at(scope, settings)
        # A probe out: no time to wait for, the probe's end is (a waiting worker looks
        # again shortly).
        return row.open_until if row.state == "open" and row.probe_owner is None else None

    async def refresh(self) -> None:
        def work(conn: psycopg.Connection[Any]) -> dict[str, Row]:
            found = conn.execute(
                "SELECT scope, state, failures, extract(epoch FROM open_until), probe_owner,"
                " last_error FROM tsuku.breakers"
            ).fetchall()
            return {str(r[0]): _row(r[1:]) for r in found}

        rows = await self._db.glance(work)
        if rows is not None:
            self._rows = rows

    def snapshot(self, settings: BreakerSettings | None = None) -> list[BreakerShown]:
        """The shared circuits (as last read) and this daemon's own registry scopes."""
        own = [b for b in super().snapshot(settings) if b.scope not in self._rows]
        shared = [
            BreakerShown(
                scope=name,
                provider=name,
                state="half_open"
                if row.state == "open" and row.probe_owner is not None
                else row.state,
                consecutive_failures=row.failures,
                retry_at=iso(row.open_until) if row.open_until is not None else None,
                last_error=row.last_error,
                probe_owner=row.probe_owner,
            )
            for name, row in self._rows.items()
        ]
        return sorted(own + shared, key=lambda b: b.scope)


def _row(r: Any) -> Row:
    return Row(
        state=str(r[0]),
        failures=int(r[1]),
        open_until=None if r[2] is None else float(r[2]),
        probe_owner=None if r[3] is None else str(r[3]),
        last_error=None if r[4] is None else str(r[4]),
    )


def _read(conn: psycopg.Connection[Any], provider: str) -> Row | None:
    r = conn.execute(
        "SELECT state, failures, extract(epoch FROM open_until), probe_owner, last_error"
        " FROM tsuku.breakers WHERE scope = %s",
        (provider,),
    ).fetchone()
    return None if r is None else _row(r)
