"""The hourly cap on recipe generations.

One daemon counts a rolling hour from its own ``generation.started`` events
(:class:`LocalHours`); daemons on a shared ledger count the UTC clock hour in one
database row taken by a conditional UPDATE (``pg_policy.PgHours``): a rolling window
across processes would need every start's time under one lock, a counter row needs one
row lock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from tsukud.clock import Clock, iso
from tsukud.errors import RateLimited
from tsukud.events.projections import GenerationWindow
from tsukud.events.store import Event, EventStore


class HourShown(msgspec.Struct, frozen=True, kw_only=True):
    """The hour's generations as ``status`` shows them: counted, and the limit."""

    count: int
    limit: int


@dataclass(frozen=True)
class Slot:
    granted: bool
    count: int  # generations counted in the window before this one
    retry_at: float | None  # when a slot frees, if known


class Hours(Protocol):
    """Where the hour's generations are counted."""

    async def take(self, now: float, limit: int) -> Slot:
        """Count one generation if the window has room under ``limit``."""
        ...

    async def peek(self, now: float, limit: int) -> Slot:
        """Whether there is room, taking nothing."""
        ...

    async def refresh(self, now: float) -> None:
        """Bring ``count`` up to date (for ``status``)."""
        ...

    def count(self, now: float) -> int: ...


class LocalHours:
    """A rolling hour of this daemon's ``generation.started`` events. ``take`` never
    yields: the event appended right after it is the record (one step under trio)."""

    def __init__(self, window: GenerationWindow) -> None:
        self._window = window

    def _slot(self, now: float, limit: int) -> Slot:
        count = self._window.count(now)
        return Slot(count < limit, count, self._window.next_free(now))

    async def take(self, now: float, limit: int) -> Slot:
        return self._slot(now, limit)

    async def peek(self, now: float, limit: int) -> Slot:
        return self._slot(now, limit)

    async def refresh(self, now: float) -> None:
        """The projection is always current."""

    def count(self, now: float) -> int:
        return self._window.count(now)


class GenerationLimit:
    def __init__(
        self,
        store: EventStore,
        window: GenerationWindow,
        clock: Clock,
        limit: Callable[[], int],
        hours: Hours | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._limit = limit
        self._hours: Hours = hours if hours is not None else LocalHours(window)

    def snapshot(self, limit: int | None = None) -> HourShown:
        """``limit`` stands in for the setting when it cannot be read (as for Budget)."""
        now = self._clock.now()
        limit = self._limit() if limit is None else limit
        return HourShown(count=self._hours.count(now), limit=limit)

    async def refresh(self) -> None:
        """The hour's count as every daemon on the ledger sees it, for ``status``."""
        await self._hours.refresh(self._clock.now())

    async def check(self, *, session: str, tool: str) -> None:
        """Refuse with ``ratelimit.denied`` when the hour is full; take no slot."""
        limit = self._limit()
        slot = await self._hours.peek(self._clock.now(), limit)
        if not slot.granted:
            await self._refuse(slot, limit, session=session, tool=tool)

    async def start(
        self, *, session: str, tool: str, replayed: bool = False, **details: Any
    ) -> Event:
        """Record ``generation.started`` or refuse with ``ratelimit.denied``. A replayed
        generation (its answers from a recording) takes no slot: the limit bounds real
        calls to providers, and a replay makes none."""
        if replayed:
            details["replayed"] = True
        else:
            limit = self._limit()
            slot = await self._hours.take(self._clock.now(), limit)
            if not slot.granted:
                await self._refuse(slot, limit, session=session, tool=tool)
        # No await since the slot was taken: deciding and recording are one step (on a
        # shared ledger the row is the decision and the event follows it).
        ev = self._store.append_nowait("generation.started", {"tool": tool, **details}, session)
        await self._store.wait_durable(ev.id)
        return ev

    async def _refuse(self, slot: Slot, limit: int, *, session: str, tool: str) -> None:
        retry_at = iso(slot.retry_at) if slot.retry_at is not None else None
        ev = self._store.append_nowait(
            "ratelimit.denied",
            {"tool": tool, "count": slot.count, "limit": limit, "retry_at": retry_at},
            session,
        )
        await self._store.wait_durable(ev.id)
        wait = "" if retry_at is None else f"; the next slot frees at {retry_at}"
        raise RateLimited(
            f"{slot.count} recipe generations in the last hour reach the limit of {limit}{wait}",
            count=slot.count,
            limit=limit,
            retry_at=retry_at,
        )
