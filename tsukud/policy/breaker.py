"""Circuit breakers, one per scope: an LLM provider (its spec's name) or a remote service
a batch depends on (``registry:<builder>``, see :func:`registry_scope`).

closed → (N consecutive counted failures) → open → (cool-down) → half_open, where exactly
one probe call is let through → closed on success, open again on failure. One machine
serves every scope; only what feeds it differs. An LLM provider's calls are recorded as
``llm.turn`` / ``llm.failed`` (``succeeded`` / ``failed``, counting what the
error catalogue calls retryable); any other scope's outcome is given to ``record``,
which counts only transport failures (the service said it is unwell:
``tsukud.batch.outcome``'s ``Failure.transport``) as ``breaker.failure`` events, so a
source that does not exist or a recipe that does not validate never opens a breaker.

For the batch run loop::

    if not breakers.admit(scope):       # open, or its probe is out: defer the job
        ...
    try:
        ...                             # the job's requests to that service
    except BaseException as exc:
        breakers.record(scope, classify(exc, source=...))   # or release() on Ctrl-C
    else:
        breakers.record(scope, None)

Transitions are events, so a restarted daemon does not hammer a service it had given up
on. The probe in flight is the one piece of memory-only state: it dies with the process,
and after a restart a half-open breaker simply lets a new probe through.

An LLM call goes through the async ``enter`` / ``call_failed`` / ``call_succeeded`` /
``call_released``: here they are the machine above (they never yield, so deciding and
recording stay one step); on a shared ledger ``pg_policy.SharedBreakers`` decides them
in the database instead, so every daemon sees one circuit per provider and exactly one
of them wins the half-open probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import msgspec
from msgspec import UNSET, UnsetType

from tsukud.clock import Clock, iso
from tsukud.errors import ProviderUnavailable
from tsukud.events.projections import Breakers
from tsukud.events.store import Event, EventStore

#: A job's admission by its registry's breaker (``admit_job``).
Admitted = Literal["go", "probe", "wait"]


@dataclass(frozen=True)
class BreakerSettings:
    failure_threshold: int = 3
    reset_seconds: float = 60.0


class BreakerShown(msgspec.Struct, frozen=True, kw_only=True):
    """One scope's circuit as ``status`` shows it. ``provider`` repeats the scope's name
    (for readers from before scopes); ``probe_owner``, the origin whose probe is out, is
    sent only for a shared ledger's circuit."""

    scope: str
    provider: str
    state: str
    consecutive_failures: int
    retry_at: str | None
    last_error: str | None
    probe_owner: str | UnsetType | None = UNSET


class CircuitOpen(ProviderUnavailable):
    code = "circuit_open"


class Outcome(Protocol):
    """What ``record`` needs of a failure (``tsukud.batch.outcome.Failure`` fits)."""

    @property
    def category(self) -> str: ...
    @property
    def message(self) -> str: ...
    @property
    def transport(self) -> bool: ...


#: Scopes of remote services are ``kind:name``; an LLM provider's scope is its bare name.
REGISTRY = "registry"


def registry_scope(ecosystem: str) -> str:
    """The breaker scope of an ecosystem's service (``<builder>`` → ``registry:<builder>``; GitHub's
    releases and Homebrew's bottles count as registries too)."""
    return f"{REGISTRY}:{ecosystem}"


def scope_fields(scope: str) -> dict[str, str]:
    """A breaker event's scope; an LLM provider's also as ``provider``, as before scopes
    (summaries group by ``provider``: a registry is not one)."""
    return {"scope": scope} if ":" in scope else {"scope": scope, "provider": scope}


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

    def retry_at(self, scope: str, settings: BreakerSettings | None = None) -> float | None:
        st = self._b.get(scope)
        if st.state == "open" and st.opened_at is not None:
            return st.opened_at + (settings or self._settings()).reset_seconds
        return None

    def state(self, scope: str) -> str:
        """``closed``, ``open`` or ``half_open``."""
        return self._b.get(scope).state

    def snapshot(self, settings: BreakerSettings | None = None) -> list[BreakerShown]:
        """``settings`` stand in for the settings' when those cannot be read (as for
        Budget). ``provider`` is the scope's name, for readers from before scopes."""
        out = []
        for name in sorted(self._b.states):
            st = self._b.states[name]
            at = self.retry_at(name, settings)
            out.append(
                BreakerShown(
                    scope=name,
                    provider=name,
                    state=st.state,
                    consecutive_failures=st.failures,
                    retry_at=iso(at) if at is not None else None,
                    last_error=st.last_error,
                )
            )
        return out

    # ---- the machine ---------------------------------------------------------------------

    def acquire(self, scope: str, *, session: str | None = None) -> bool:
        """Admit one call or raise ``CircuitOpen``. Returns True when it is the probe."""
        st = self._b.get(scope)
        now = self._clock.now()
        if st.state == "open":
            at = self.retry_at(scope)
            if at is not None and now < at:
                raise CircuitOpen(
                    f"{scope} is failing; its circuit is open until {iso(at)}",
                    hint="tsuku will try it again then; other providers are used meanwhile.",
                    provider=scope,
                    retry_at=iso(at),
                )
            self._store.append_nowait("breaker.half_opened", scope_fields(scope), session)
        if st.state == "half_open":
            if scope in self._probing:
                raise CircuitOpen(
                    f"{scope} is being probed after failures; try again shortly",
                    provider=scope,
                    retry_at=None,
                )
            self._probing.add(scope)
            return True
        return False

    def release(self, scope: str) -> None:
        """Forget a probe that ended without a verdict (e.g. the caller was cancelled)."""
        self._probing.discard(scope)

    def _answered(self, scope: str, session: str | None) -> Event | None:
        """The service answered: a half-open (or open) circuit closes."""
        self._probing.discard(scope)
        if self._b.get(scope).state != "closed":
            return self._store.append_nowait("breaker.closed", scope_fields(scope), session)
        return None

    def _counted(
        self, scope: str, counts: bool, was_probe: bool, session: str | None
    ) -> Event | None:
        """After a failure was recorded: open on the N-th counted one or a failed probe."""
        st = self._b.get(scope)
        threshold = self._settings().failure_threshold
        probe_failed = st.state == "half_open" and (counts or was_probe)
        streak_full = st.state == "closed" and st.failures >= threshold
        if probe_failed or streak_full:
            return self._store.append_nowait(
                "breaker.opened", {**scope_fields(scope), "failures": st.failures}, session
            )
        return None

    # ---- an LLM call (async: a shared ledger's breakers are decided in its database) ----

    async def enter(self, provider: str, *, session: str | None = None) -> bool:
        """Admit one call or raise ``CircuitOpen``; True when it is the probe."""
        return self.acquire(provider, session=session)

    async def call_failed(
        self,
        provider: str,
        error_type: str,
        *,
        counts: bool = True,
        session: str | None = None,
        details: dict[str, Any] | None = None,
    ) -> Event:
        """An admitted call failed (see ``failed``)."""
        return self.failed(provider, error_type, counts=counts, session=session, details=details)

    async def call_succeeded(
        self, provider: str, turn: dict[str, Any], *, session: str | None = None
    ) -> Event:
        """An admitted call was answered (see ``succeeded``)."""
        return self.succeeded(provider, turn, session=session)

    async def call_released(self, provider: str) -> None:
        """An admitted call ended without a verdict (see ``release``)."""
        self.release(provider)

    async def refresh(self) -> None:
        """Bring ``snapshot`` up to date (for ``status``): the events keep it current."""

    # ---- any scope (the batch's registries) ---------------------------------------------

    async def admit_job(self, scope: str, *, session: str | None = None) -> Admitted:
        """``admit`` for a queue whose claim may wait (the shared queue's): ``go``,
        ``probe`` (this job is the half-open circuit's one probe) or ``wait``. On a
        shared ledger the database decides (``pg_breakers``); here, the machine."""
        try:
            return "probe" if self.acquire(scope, session=session) else "go"
        except CircuitOpen:
            return "wait"

    async def judge_job(
        self, scope: str, failure: Outcome | None, *, session: str | None = None
    ) -> None:
        """``record``, where the verdict may wait (a shared ledger's row)."""
        self.record(scope, failure, session=session)

    async def release_job(self, scope: str) -> None:
        """``release``, where giving the probe back may wait (a shared ledger's row)."""
        self.release(scope)

    def admit(self, scope: str, *, session: str | None = None) -> bool:
        """May a job that needs ``scope`` start now? False while the circuit is open or
        its one probe is out: the caller defers the job (it has not failed). True admits
        it, as the probe when the cool-down has passed; its outcome must reach
        ``record`` (or ``release``, when it ended without one)."""
        try:
            self.acquire(scope, session=session)
        except CircuitOpen:
            return False
        return True

    def record(
        self, scope: str, failure: Outcome | None, *, session: str | None = None
    ) -> Event | None:
        """The admitted job's outcome: None for success. Only a transport failure
        counts (and a probe that ends in one opens the circuit again); any other
        failure means the service answered, as a success does."""
        if failure is None or not failure.transport:
            closed = self._answered(scope, session)
            if closed is None and self._b.get(scope).failures:
                return self._store.append_nowait(
                    "breaker.streak_ended", scope_fields(scope), session
                )
            return closed
        was_probe = scope in self._probing
        self._probing.discard(scope)
        ev = self._store.append_nowait(
            "breaker.failure",
            {"scope": scope, "category": failure.category, "message": failure.message},
            session,
        )
        return self._counted(scope, True, was_probe, session) or ev

    # ---- LLM providers ------------------------------------------------------------------

    def succeeded(
        self, provider: str, turn: dict[str, Any] | None = None, *, session: str | None = None
    ) -> Event:
        """Record a successful call (its ``llm.turn`` event) and close a half-open circuit."""
        ev = self._turn_event(provider, turn, session)
        return self._answered(provider, session) or ev

    def _turn_event(self, provider: str, turn: dict[str, Any] | None, session: str | None) -> Event:
        return self._store.append_nowait(
            "llm.turn", {**(turn or {}), "provider": provider}, session
        )

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
        ev = self._failed_event(provider, error_type, counts, session, details)
        return self._counted(provider, counts, was_probe, session) or ev

    def _failed_event(
        self,
        provider: str,
        error_type: str,
        counts: bool,
        session: str | None,
        details: dict[str, Any] | None,
    ) -> Event:
        return self._store.append_nowait(
            "llm.failed",
            {**(details or {}), "provider": provider, "error_type": error_type, "breaker": counts},
            session,
        )
