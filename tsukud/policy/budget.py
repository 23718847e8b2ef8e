"""Reserve the worst case before spending, settle the actual cost after."""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

import msgspec

import tsukud.policy.spent as spent
from tsukud.clock import Clock, utc_day
from tsukud.errors import BudgetExceeded, ConfirmationRequired, InvalidParams, NotFound
from tsukud.events.projections import Spend, to_micro, to_usd
from tsukud.events.store import EventStore


@dataclass(frozen=True)
class BudgetLimits:
    daily_usd: float
    confirm_threshold_usd: float


class BudgetShown(msgspec.Struct, frozen=True, kw_only=True):
    """Today's budget as ``status`` and ``llm.status`` show it (schema/rpc.md): spent and
    held against the limits in force (on a shared ledger, the whole team's, as last read)."""

    day: str
    spent_usd: float
    reserved_usd: float
    replayed_usd: float = 0.0  # priced turns a recording answered: never spent
    daily_budget_usd: float
    confirm_threshold_usd: float


@dataclass(frozen=True)
class Grant:
    reservation: str
    amount_usd: float
    day: str
    remaining_usd: float


@dataclass(frozen=True)
class Hold:
    granted: bool
    committed: int  # micro-USD spent or held that day before this reservation


class Days(Protocol):
    """Where the day's budget is decided: this daemon's projections (:class:`LocalDays`)
    or a row every daemon on a shared ledger updates (``pg_policy.PgDays``)."""

    async def hold(self, rid: str, day: str, amount: int, limit: int) -> Hold:
        """Hold ``amount`` (micro-USD) of ``day`` if it fits under ``limit``."""
        ...

    def unrecorded(self, rid: str) -> None:
        """``rid`` was held but its ``budget.reserved`` could not be recorded."""
        ...

    async def settle(self, rid: str, actual: int) -> None: ...

    def release_unrecorded(self, recorded: set[str]) -> int:
        """At start: release holds the chain has no ``budget.reserved`` for."""
        ...

    async def refresh(self, day: str) -> None:
        """Bring ``spent``/``reserved`` up to date (for ``status``)."""
        ...

    def spent(self, day: str) -> int: ...

    def reserved(self, day: str) -> int: ...


class LocalDays:
    """One daemon's budget, decided from its own events (the ``Spend`` projection). A
    ``budget.reserved`` appended right after ``hold`` (no ``await`` in between: ``hold``
    never yields) is the record, so deciding and recording are one step under trio."""

    def __init__(self, spend: Spend) -> None:
        self._spend = spend

    async def hold(self, rid: str, day: str, amount: int, limit: int) -> Hold:
        committed = self._spend.committed(day)
        return Hold(granted=committed + amount <= limit, committed=committed)

    def unrecorded(self, rid: str) -> None:
        """Nothing is held apart from the event: nothing to release."""

    async def settle(self, rid: str, actual: int) -> None:
        """The ``budget.settled`` event is the settlement."""

    def release_unrecorded(self, recorded: set[str]) -> int:
        return 0

    async def refresh(self, day: str) -> None:
        """The projection is always current."""

    def spent(self, day: str) -> int:
        return self._spend.spent(day)

    def reserved(self, day: str) -> int:
        return self._spend.reserved(day)


class Budget:
    def __init__(
        self,
        store: EventStore,
        spend: Spend,
        clock: Clock,
        limits: Callable[[], BudgetLimits],
        days: Days | None = None,
    ) -> None:
        self._store = store
        self._spend = spend
        self._clock = clock
        self._limits = limits
        self._days: Days = days if days is not None else LocalDays(spend)
        # Being settled on a shared day (an await): a second settlement meanwhile is
        # refused as the one after it would be.
        self._settling: set[str] = set()

    def today(self) -> str:
        return utc_day(self._clock.now())

    def snapshot(self, limits: BudgetLimits | None = None) -> BudgetShown:
        """``limits`` stand in for the settings' when those cannot be read (``status``
        shows the state of a daemon whose config file has a problem)."""
        day = self.today()
        lim = self._limits() if limits is None else limits
        return BudgetShown(
            day=day,
            spent_usd=to_usd(self._days.spent(day)),
            reserved_usd=to_usd(self._days.reserved(day)),
            # this daemon's replayed turns (a recording answered them): never spent
            replayed_usd=to_usd(self._spend.replayed_on(day)),
            daily_budget_usd=lim.daily_usd,
            confirm_threshold_usd=lim.confirm_threshold_usd,
        )

    async def reserve(
        self,
        amount_usd: float,
        *,
        session: str | None,
        purpose: str,
        confirmed: bool = False,
        extends: str | None = None,
        prior_usd: float = 0.0,
    ) -> Grant:
        """Reserve ``amount_usd`` of today's budget, or refuse.

        ``extends``: the run's first reservation, when a run that reached its ceiling
        reserves more; ``prior_usd`` is what it holds already, so the confirmation
        threshold applies to the run's new total, not to the extension alone. Inside a
        request, what the command's other runs spent or hold (:mod:`.spent`) counts too:
        the threshold is one command's, however many runs it starts; a yes (or
        ``--yes``) to that question covers the command's later runs.
        """
        if (
            not (isinstance(amount_usd, int | float) and math.isfinite(amount_usd))
            or amount_usd < 0
        ):
            raise InvalidParams(
                f"reservation amount must be a finite USD amount ≥ 0, got {amount_usd!r}"
            )
        lim = self._limits()
        day = self.today()
        amount = to_micro(amount_usd)
        budget = to_micro(lim.daily_usd)
        numbers: dict[str, Any] = {
            "amount_usd": to_usd(amount),
            "day": day,
            # as last known here; the day's decision below says what it was then
            "committed_usd": to_usd(self._days.spent(day) + self._days.reserved(day)),
            "daily_budget_usd": lim.daily_usd,
            "purpose": purpose,
        }
        command = spent.current()
        others = to_micro(float(command.others(extends))) if command is not None else 0
        total = amount + to_micro(prior_usd) + others
        above = total > to_micro(lim.confirm_threshold_usd)
        confirmed = confirmed or (command is not None and command.accepted)
        if above and not confirmed:
            ev = self._store.append_nowait(
                "confirmation.requested",
                {**numbers, "threshold_usd": lim.confirm_threshold_usd},
                session,
            )
            await self._store.wait_durable(ev.id)
            more = (
                f"this run has reserved ${prior_usd:.2f} and needs ${to_usd(amount):.2f} more: "
                if extends
                else ""
            )
            earlier = (
                f"its earlier steps spent or hold ${to_usd(others):.4f} and this {purpose} "
                f"run needs up to ${to_usd(amount + to_micro(prior_usd)):.4f}: "
                if others
                else ""
            )
            raise ConfirmationRequired(
                f"{more}{earlier}this command may cost up to ${to_usd(total):.2f} in all, "
                f"above the confirmation threshold of ${lim.confirm_threshold_usd:.2f}",
                estimate_usd=to_usd(total),
                threshold_usd=lim.confirm_threshold_usd,
            )
        if above and command is not None:
            command.accepted = True  # asked once per command: this yes covers the rest
        if command is not None and command.cap is not None:
            held = command.committed()
            if held + Decimal(to_micro(amount_usd)) / 1_000_000 > command.cap:
                raise BudgetExceeded(
                    f"this command's cap of ${command.cap:.2f} would be passed: it has spent "
                    f"or holds ${held:.4f} and this {purpose} run needs up to "
                    f"${to_usd(amount):.4f} more",
                    hint="Raise the command's cap (--max-usd) or run it again later.",
                    cap_usd=float(command.cap),
                    committed_usd=float(held),
                    amount_usd=to_usd(amount),
                )
        rid = "r-" + secrets.token_hex(8)
        # Counted against the command's cap before the day is asked: on a shared ledger
        # that is a wait, and the command's other runs must see this one meanwhile.
        spent.reserved(rid, extends or rid, to_usd(amount))
        try:
            hold = await self._days.hold(rid, day, amount, budget)
        except BaseException:
            spent.dropped(rid)
            raise
        committed = hold.committed
        numbers["committed_usd"] = to_usd(committed)
        if not hold.granted:
            spent.dropped(rid)
            ev = self._store.append_nowait("budget.denied", numbers, session)
            await self._store.wait_durable(ev.id)
            raise BudgetExceeded(
                f"daily LLM budget exceeded: ${to_usd(committed):.2f} of ${lim.daily_usd:.2f} "
                f"already spent or reserved today ({day} UTC); this run needs up to "
                f"${to_usd(amount):.2f}",
                **numbers,
            )
        reserved: dict[str, Any] = {
            "reservation": rid,
            "day": day,
            "amount_usd": to_usd(amount),
            "purpose": purpose,
        }
        if extends:
            reserved["extends"] = extends
        try:
            ev = self._store.append_nowait("budget.reserved", reserved, session)
        except BaseException:
            spent.dropped(rid)
            self._days.unrecorded(rid)  # held, never recorded: no call may use it
            raise
        await self._store.wait_durable(ev.id)
        return Grant(rid, to_usd(amount), day, to_usd(budget - committed - amount))

    async def settle(self, reservation: str, actual_usd: float, *, session: str | None) -> None:
        if reservation not in self._spend.open or reservation in self._settling:
            raise NotFound(f"no open reservation {reservation!r}")
        if not math.isfinite(actual_usd) or actual_usd < 0:
            raise InvalidParams(f"actual cost must be a finite USD amount ≥ 0, got {actual_usd!r}")
        r = self._spend.open[reservation]
        # The shared day first (idempotent): a settlement whose event is lost is made
        # again by the next start's sweep, and counted once.
        self._settling.add(reservation)
        try:
            await self._days.settle(reservation, to_micro(actual_usd))
        finally:
            self._settling.discard(reservation)
        spent.record(actual_usd, reservation)
        ev = self._store.append_nowait(
            "budget.settled",
            {
                "reservation": reservation,
                "day": r.day,
                "reserved_usd": to_usd(r.amount),
                "actual_usd": to_usd(to_micro(actual_usd)),
            },
            session,
        )
        await self._store.wait_durable(ev.id)

    async def refresh(self) -> None:
        """Today's numbers as every daemon on the ledger sees them, for ``status``."""
        await self._days.refresh(self.today())

    def release_unrecorded(self) -> int:
        """At start: money a previous run of this daemon held without recording it."""
        return self._days.release_unrecorded(set(self._spend.open))

    def abandoned(self) -> list[str]:
        """Reservations left open by a previous daemon (their runs died with it)."""
        return list(self._spend.open)
