"""The hourly cap on recipe generations (a rolling hour)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tsukud.clock import Clock, iso
from tsukud.errors import RateLimited
from tsukud.events.projections import GenerationWindow
from tsukud.events.store import Event, EventStore


class GenerationLimit:
    def __init__(
        self, store: EventStore, window: GenerationWindow, clock: Clock, limit: Callable[[], int]
    ) -> None:
        self._store = store
        self._window = window
        self._clock = clock
        self._limit = limit

    def snapshot(self, limit: int | None = None) -> dict[str, Any]:
        """``limit`` stands in for the setting when it cannot be read (as for Budget)."""
        now = self._clock.now()
        limit = self._limit() if limit is None else limit
        return {"count": self._window.count(now), "limit": limit}

    async def check(self, *, session: str, tool: str) -> None:
        """Refuse with ``ratelimit.denied`` when the hour is full; take no slot."""
        await self._refuse_if_full(session=session, tool=tool)

    async def start(self, *, session: str, tool: str, **details: Any) -> Event:
        """Record ``generation.started`` or refuse with ``ratelimit.denied``."""
        await self._refuse_if_full(session=session, tool=tool)
        # No await since the check: deciding and recording are one step under trio.
        ev = self._store.append_nowait("generation.started", {"tool": tool, **details}, session)
        await self._store.wait_durable(ev.id)
        return ev

    async def _refuse_if_full(self, *, session: str, tool: str) -> None:
        now = self._clock.now()
        count, limit = self._window.count(now), self._limit()
        if count >= limit:
            free = self._window.next_free(now)
            retry_at = iso(free) if free is not None else None
            ev = self._store.append_nowait(
                "ratelimit.denied",
                {"tool": tool, "count": count, "limit": limit, "retry_at": retry_at},
                session,
            )
            await self._store.wait_durable(ev.id)
            wait = "" if free is None else f"; the next slot frees at {retry_at}"
            raise RateLimited(
                f"{count} recipe generations in the last hour reach the limit of {limit}{wait}",
                count=count,
                limit=limit,
                retry_at=retry_at,
            )
