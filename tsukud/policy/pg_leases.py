"""Holds of a daemon that never comes back, settled by the team (``ledger.url``).

A daemon that dies holding reservations settles them at its next start
(``Daemon._settle_abandoned``). On a shared ledger its home may never start again (the
host is gone), and its holds would keep the team's day held for good. So each daemon
keeps a *liveness lease*: a row of ``tsuku.origin_leases`` renewed every quarter of
``policy.hold_lease_seconds`` while it runs. Every daemon, at the same pace, looks for
open holds of an origin whose lease ran out and settles them:

- at their worst case, the whole reservation, marked estimated: a call made under it
  may have been sent and billed, and its usage is lost with the daemon, so money that
  may have been spent is never given back;
- once, whoever races: the settlement is ``pg_holds.settle_hold``'s conditional UPDATE
  (``actual_micro IS NULL``), so of two daemons settling one hold together the second
  updates nothing (and the origin's own later settlement, if it comes back, too);
- recorded in the settler's chain as ``budget.expired_hold_settled`` naming the origin
  and the reservation, after the row (the row is the truth, the event follows).

A daemon merely slow (a pause shorter than the lease) keeps its holds: its lease has
not run out. One paused past it finds its holds settled when it wakes; what it spends
under them afterwards was counted in full already. An origin that never wrote a lease
(a daemon of a version before this) is never settled by others: the safe side.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psycopg

from tsukud import log
from tsukud.errors import DiskFull, LedgerUnavailable
from tsukud.events.catalogue import BudgetExpiredHoldSettled, as_payload
from tsukud.events.projections import to_usd
from tsukud.events.store import EventStore
from tsukud.policy.pg_db import SharedDb
from tsukud.policy.pg_holds import settle_hold

EVENT = "budget.expired_hold_settled"

_RENEW = (
    "INSERT INTO tsuku.origin_leases (origin, instance, renewed_at, alive_until)"
    " VALUES (%(o)s, %(i)s, now(), now() + make_interval(secs => %(s)s))"
    " ON CONFLICT (origin) DO UPDATE SET instance = excluded.instance,"
    " renewed_at = excluded.renewed_at, alive_until = excluded.alive_until"
)

# Open holds of every other origin whose lease ran out (the lease's condition is the
# only thing between a slow daemon and losing its holds: its mutation test is the pause
# in tests/integration/ledger_pg/test_expired_holds.py).
_EXPIRED = (
    "SELECT h.reservation, h.origin, l.alive_until FROM tsuku.budget_holds h"
    " JOIN tsuku.origin_leases l ON l.origin = h.origin"
    " WHERE h.actual_micro IS NULL AND h.origin <> %(me)s AND l.alive_until < now()"
    " ORDER BY h.made_at"
)


@dataclass(frozen=True)
class ExpiredHold:
    """One hold this daemon settled for a silent origin."""

    origin: str
    reservation: str
    day: str
    amount: int  # micro-USD: the worst case, charged whole
    silent_since: str  # the origin's lease ran out then (ISO 8601)

    def payload(self) -> BudgetExpiredHoldSettled:
        usd = to_usd(self.amount)
        return BudgetExpiredHoldSettled(
            origin=self.origin,
            reservation=self.reservation,
            day=self.day,
            reserved_usd=usd,
            actual_usd=usd,
            estimated=True,
            lease_expired_at=self.silent_since,
        )


def renew(conn: psycopg.Connection[Any], origin: str, instance: str, lease_s: float) -> None:
    conn.execute(_RENEW, {"o": origin, "i": instance, "s": lease_s})


def settle_expired(conn: psycopg.Connection[Any], me: str) -> list[ExpiredHold]:
    """Settle, in one transaction, every open hold of an origin whose lease ran out, at
    its worst case, naming ``me`` as the settler. Holds another daemon settled first
    (found open by the SELECT, settled by the time their UPDATE ran) are left out."""
    settled = []
    for rid, origin, until in conn.execute(_EXPIRED, {"me": me}).fetchall():
        amount = conn.execute(
            "SELECT amount_micro FROM tsuku.budget_holds WHERE reservation = %s", (rid,)
        ).fetchone()
        if amount is None:
            continue
        done = settle_hold(conn, str(rid), int(amount[0]), by=me)
        if done is not None:
            settled.append(
                ExpiredHold(str(origin), str(rid), done[0], int(amount[0]), until.isoformat())
            )
    return settled


class OriginLease:
    """This daemon's liveness lease, and the settling of silent origins' holds."""

    def __init__(self, db: SharedDb, origin: Callable[[], str]) -> None:
        self._db = db
        self._origin = origin
        self.instance = f"d-{secrets.token_hex(6)}"

    async def renew(self, lease_s: float) -> None:
        origin = self._origin()
        await self._db.call(lambda conn: renew(conn, origin, self.instance, lease_s))

    async def settle_silent(self, store: EventStore) -> list[ExpiredHold]:
        """One look for silent origins' holds; each one settled is then recorded."""
        me = self._origin()
        settled = await self._db.call(lambda conn: settle_expired(conn, me))
        for hold in settled:
            log.get().warning(
                "budget.expired_hold_settled", origin=hold.origin, reservation=hold.reservation
            )
            await store.append(EVENT, as_payload(hold.payload()))
        return settled

    async def round(self, store: EventStore, lease_s: float) -> None:
        """Renew the lease, then settle silent origins' holds. The database out of
        reach: the next round tries again (this daemon's own lease may run out
        meanwhile; its holds are then settled by the others at their worst case,
        which errs on the safe side)."""
        try:
            await self.renew(lease_s)
            await self.settle_silent(store)
        except (LedgerUnavailable, DiskFull) as e:
            log.get().warning("policy.lease_not_renewed", error=e.message)
