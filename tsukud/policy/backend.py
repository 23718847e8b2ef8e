"""Where the daemon's policy is decided: its own projections (SQLite, one daemon) or a
database every daemon on a shared ledger updates (``pg_policy.SharedPolicy``). Chosen
once, at daemon start, with the event store (``Daemon._make_store``); the policy objects
(``Budget``, ``GenerationLimit``, ``CircuitBreakers``) take the parts it gives, or are
built by it, and never ask which it is."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from tsukud.clock import Clock
from tsukud.events.projections import State
from tsukud.events.store import EventStore
from tsukud.policy.breaker import BreakerSettings, CircuitBreakers
from tsukud.policy.budget import Days, LocalDays
from tsukud.policy.ratelimit import Hours, LocalHours


class PolicyBackend(Protocol):
    def days(self, state: State) -> Days: ...

    def hours(self, state: State) -> Hours: ...

    def breakers(
        self,
        store: EventStore,
        state: State,
        clock: Clock,
        settings: Callable[[], BreakerSettings],
    ) -> CircuitBreakers: ...

    async def keep(self, store: EventStore, lease_s: Callable[[], float]) -> None:
        """For the daemon's life: what the backend keeps up (a shared ledger's liveness
        lease, and the settling of silent daemons' holds: ``pg_leases``)."""
        ...

    def close(self) -> None: ...


class LocalPolicy:
    """One daemon: every decision from its own events, checked and recorded in one step."""

    def days(self, state: State) -> Days:
        return LocalDays(state.spend)

    def hours(self, state: State) -> Hours:
        return LocalHours(state.generations)

    def breakers(
        self,
        store: EventStore,
        state: State,
        clock: Clock,
        settings: Callable[[], BreakerSettings],
    ) -> CircuitBreakers:
        return CircuitBreakers(store, state.breakers, clock, settings)

    async def keep(self, store: EventStore, lease_s: Callable[[], float]) -> None:
        """One daemon: nobody else's holds to settle, its own are settled at its start."""

    def close(self) -> None:
        """Nothing is held open."""
