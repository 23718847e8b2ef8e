"""Injected time.

Policy decisions (budget days, rate windows, breaker cool-downs) survive restarts, so
they are taken on wall-clock time, read through a ``Clock`` so tests control it. Every
time the daemon reads (the HTTP cache and DNS answers, registry and version TTLs,
discovery's cache and timings, event timestamps) comes from the daemon's one ``Clock``,
passed to each service as its ``clock`` parameter.

Waits (``trio.sleep``, deadlines) run on trio's clock. ``TrioClock`` maps trio's clock
onto the wall clock, so under ``trio.testing.MockClock`` reads and waits move together:
a test jumps past a TTL or a breaker cool-down instantly and every reader sees it.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Seconds since the epoch (UTC)."""
        ...


class SystemClock:
    def now(self) -> float:
        return time.time()


class TrioClock:
    """Wall time that advances with ``trio.current_time()`` (and so with MockClock)."""

    def __init__(self, anchor: float | None = None) -> None:
        import trio

        self._trio = trio
        self._anchor_wall = time.time() if anchor is None else anchor
        self._anchor_trio = trio.current_time()

    def now(self) -> float:
        return self._anchor_wall + (self._trio.current_time() - self._anchor_trio)


class FixedClock:
    """A clock a test moves by hand (for code that runs outside trio)."""

    def __init__(self, start: float) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


_second_cache: tuple[int, str] = (-1, "")


def iso(ts: float) -> str:
    """The ledger's timestamp form: fixed-width UTC, so text order is time order.

    Every appended event is stamped, so the formatted second is cached: only the
    microseconds change between events of the same second (halves append cost).
    """
    global _second_cache
    sec = int(ts // 1)
    micro = round((ts - sec) * 1_000_000)
    if micro >= 1_000_000:
        sec, micro = sec + 1, micro - 1_000_000
    cached_sec, prefix = _second_cache
    if cached_sec != sec:
        prefix = datetime.fromtimestamp(sec, UTC).strftime("%Y-%m-%dT%H:%M:%S")
        _second_cache = (sec, prefix)
    return f"{prefix}.{micro:06d}Z"


def parse_iso(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def utc_day(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def day_start(ts: float) -> float:
    d = datetime.fromtimestamp(ts, UTC)
    return datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp()
