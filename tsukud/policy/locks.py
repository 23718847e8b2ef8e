"""Bounded container validations.

Validation containers take up to 2 GiB and 2 CPUs each; the daemon bounds how many
run at once. Waits and hand-overs are events so the audit shows why a run was slow.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from tsukud.clock import Clock
from tsukud.events.store import EventStore


class ContainerLock:
    def __init__(self, store: EventStore, clock: Clock, slots: int) -> None:
        self._store = store
        self._clock = clock
        self._limiter = trio.CapacityLimiter(max(1, slots))

    @property
    def slots(self) -> int:
        return int(self._limiter.total_tokens)

    @property
    def busy(self) -> int:
        return int(self._limiter.borrowed_tokens)

    @asynccontextmanager
    async def hold(self, *, session: str | None) -> AsyncIterator[None]:
        started = self._clock.now()
        borrower = object()
        await self._limiter.acquire_on_behalf_of(borrower)
        try:
            waited = round((self._clock.now() - started) * 1000)
            ev = self._store.append_nowait("sandbox.lock_acquired", {"waited_ms": waited}, session)
            await self._store.wait_durable(ev.id)
            yield
        finally:
            self._limiter.release_on_behalf_of(borrower)
            self._store.append_nowait("sandbox.lock_released", {}, session)
