"""How many requests one host gets at once, and how often.

A batch that drains thousands of sources sends a registry as many requests as it has
jobs; a registry answers a crowd with 429s (or bans it). Every request of the daemon
therefore takes a slot of its host (scheme, name and port) for as long as it runs, a
redirect's later hops included, and with a minimum interval set, no two requests to
one host start closer together than that. The defaults (8 at once, no interval) never
slow a person's create or install, which sends a handful of requests to a host at a
time. The limits are read per request, so a changed setting applies to the next one.

Public API: :class:`HostLimits` (the settings) and :class:`HostGate` (``async with
gate.slot(host)``; ``in_flight(host)`` for tests and status).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

import trio

from tsukud.clock import Clock


@dataclass(frozen=True)
class HostLimits:
    concurrency: int = 8  # requests in flight to one host
    interval: float = 0.0  # seconds between the starts of two requests to one host


class HostGate:
    def __init__(self, limits: Callable[[], HostLimits], clock: Clock) -> None:
        self._limits = limits
        self._clock = clock
        self._slots: dict[str, trio.CapacityLimiter] = {}
        self._next_start: dict[str, float] = {}

    def in_flight(self, host: str) -> int:
        limiter = self._slots.get(host)
        return 0 if limiter is None else int(limiter.borrowed_tokens)

    @asynccontextmanager
    async def slot(self, host: str) -> AsyncIterator[None]:
        """Hold one of ``host``'s slots while the request runs (waiting for one, then
        for the interval since the previous start). A slot belongs to the request, not
        to its task, so one task may hold two (a download and a lookup beside it)."""
        limits = self._limits()
        limiter = self._slots.get(host)
        if limiter is None:
            limiter = self._slots[host] = trio.CapacityLimiter(max(1, limits.concurrency))
        elif limiter.total_tokens != max(1, limits.concurrency):
            limiter.total_tokens = max(1, limits.concurrency)
        borrower = object()
        await limiter.acquire_on_behalf_of(borrower)
        try:
            if limits.interval > 0:
                # Decide the start and record it before waiting (no await between),
                # so requests queued together are spaced out, not released together.
                now = self._clock.now()
                start = max(now, self._next_start.get(host, now))
                self._next_start[host] = start + limits.interval
                if start > now:
                    await trio.sleep(start - now)
            yield
        finally:
            limiter.release_on_behalf_of(borrower)
            self._forget_idle(host, limiter)

    def _forget_idle(self, host: str, limiter: trio.CapacityLimiter) -> None:
        """A host nobody is talking to costs no memory (a batch meets many)."""
        if limiter.borrowed_tokens or limiter.statistics().tasks_waiting:
            return
        if self._next_start.get(host, 0.0) > self._clock.now():
            return
        self._slots.pop(host, None)
        self._next_start.pop(host, None)
