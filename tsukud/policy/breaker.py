"""Per-provider circuit breakers.

closed → (N consecutive counted failures) → open → (cool-down) → half_open, where exactly
one probe call is let through → closed on success, open again on failure. Transitions
are events, so a restarted daemon does not hammer a provider it had given up on.
The probe in flight is the one piece of memory-only state: it dies with the process,
and after a restart a half-open breaker simply lets a new probe through.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import trio

from tsukud.clock import Clock, iso
from tsukud.errors import ProviderUnavailable, TsukuError
from tsukud.events.projections import Breakers
from tsukud.events.store import Event, EventStore


@dataclass(frozen=True)
class BreakerSettings:
    failure_threshold: int = 3
    reset_seconds: float = 60.0


class CircuitOpen(ProviderUnavailable):
    code = "circuit_open"


class CircuitBreakers:
    def __init__(
        self,
        store: EventStore,
        breakers: Breakers,
        clock: Clock,
        settings: Callable[[], BreakerSettings],
    ) -> None:
        self._store = store
        self._b = breakers
        self._clock = clock
        self._settings = settings
        self._probing: set[str] = set()

    def retry_at(self, provider: str, settings: BreakerSettings | None = None) -> float | None:
        st = self._b.get(provider)
        if st.state == "open" and st.opened_at is not None:
            return st.opened_at + (settings or self._settings()).reset_seconds
        return None

    def snapshot(self, settings: BreakerSettings | None = None) -> list[dict[str, Any]]:
        """``settings`` stand in for the settings' when those cannot be read (as for
        Budget)."""
        out = []
        for name in sorted(self._b.states):
            st = self._b.states[name]
            at = self.retry_at(name, settings)
            out.append(
                {
                    "provider": name,
                    "state": st.state,
                    "consecutive_failures": st.failures,
                    "retry_at": iso(at) if at is not None else None,
                    "last_error": st.last_error,
                }
            )
        return out

    def acquire(self, provider: str, *, session: str | None = None) -> bool:
        """Admit one call or raise ``CircuitOpen``. Returns True when it is the probe."""
        st = self._b.get(provider)
        now = self._clock.now()
        if st.state == "open":
            at = self.retry_at(provider)
            if at is not None and now < at:
                raise CircuitOpen(
                    f"{provider} is failing; its circuit is open until {iso(at)}",
                    hint="tsuku will try it again then; other providers are used meanwhile.",
                    provider=provider,
                    retry_at=iso(at),
                )
            self._store.append_nowait("breaker.half_opened", {"provider": provider}, session)
        if st.state == "half_open":
            if provider in self._probing:
                raise CircuitOpen(
                    f"{provider} is being probed after failures; try again shortly",
                    provider=provider,
                    retry_at=None,
                )
            self._probing.add(provider)
            return True
        return False

    def release(self, provider: str) -> None:
        """Forget a probe that ended without a verdict (e.g. the caller was cancelled)."""
        self._probing.discard(provider)

    def succeeded(
        self, provider: str, turn: dict[str, Any] | None = None, *, session: str | None = None
    ) -> Event:
        """Record a successful call (its ``llm.turn`` event) and close a half-open circuit."""
        self._probing.discard(provider)
        ev = self._store.append_nowait("llm.turn", {**(turn or {}), "provider": provider}, session)
        if self._b.get(provider).state != "closed":
            ev = self._store.append_nowait("breaker.closed", {"provider": provider}, session)
        return ev

    def failed(
        self,
        provider: str,
        error_type: str,
        *,
        counts: bool = True,
        session: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> Event:
        """Record a failed call; open the circuit on the N-th counted failure or a failed probe."""
        was_probe = provider in self._probing
        self._probing.discard(provider)
        ev = self._store.append_nowait(
            "llm.failed",
            {**(details or {}), "provider": provider, "error_type": error_type, "breaker": counts},
            session,
        )
        st = self._b.get(provider)
        threshold = self._settings().failure_threshold
        probe_failed = st.state == "half_open" and (counts or was_probe)
        streak_full = st.state == "closed" and st.failures >= threshold
        if probe_failed or streak_full:
            ev = self._store.append_nowait(
                "breaker.opened", {"provider": provider, "failures": st.failures}, session
            )
        return ev

    @asynccontextmanager
    async def guard(self, provider: str, *, session: str | None = None) -> AsyncIterator[None]:
        """Admit a call; a ``TsukuError`` escaping it is recorded as a failure.

        Successful calls must call ``succeeded`` themselves (they carry the turn's
        usage); a cancellation records nothing and frees the probe slot.
        """
        self.acquire(provider, session=session)
        try:
            yield
        except trio.Cancelled:
            self.release(provider)
            raise
        except TsukuError as e:
            ev = self.failed(provider, e.code, counts=e.retryable, session=session)
            await self._store.wait_durable(ev.id)
            raise
        finally:
            self.release(provider)
