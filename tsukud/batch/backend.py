"""The batch queue's one interface, with two implementations chosen at daemon start:
``batch/service.py``'s ``BatchService`` (the fold of ``batch.*`` events in the daemon's
SQLite ledger) and ``batch/pg_queue.py``'s ``PgBatchService`` (rows in the PostgreSQL
database ``ledger.url`` names, shared by every daemon on it).

The batch RPC methods and the run loop (``flows/batch_run.py``) see only this, so a run
behaves the same on both: lease a job, renew it while it runs, record its outcome under
the lease's fence (a stale fence is refused and counted), give it back when stopped.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Protocol

from tsukud.batch.errors import BatchRunning

if TYPE_CHECKING:
    from tsukud.batch.results import Added, BatchStatus, Cleared, Exported, Retried
    from tsukud.batch.service import Lease
    from tsukud.clock import Clock
    from tsukud.events.store import EventStore


class RunSlot:
    """One batch run at a time per daemon, the same on both backends: the run's id is
    held here, and clearing the queue under it is refused."""

    active_run: str | None = None

    def begin_run(self) -> str:
        if self.active_run is not None:
            raise BatchRunning(
                f"batch run {self.active_run} is already active", run=self.active_run
            )
        self.active_run = "run-" + secrets.token_hex(6)
        return self.active_run

    def end_run(self, run: str) -> None:
        if self.active_run == run:
            self.active_run = None

    def refuse_clear_under_run(self) -> None:
        if self.active_run is not None:
            raise BatchRunning(
                f"batch run {self.active_run} is active: the queue cannot be cleared under it",
                run=self.active_run,
            )


class Admission(Protocol):
    """May a job on ``source`` start now (its registry's breaker)? Asked by the SQLite
    fold, which must decide without waiting (``__call__``), or by the shared queue's
    claim, whose answer the database gives (``ask``: one probe for the whole team)."""

    def __call__(self, source: str) -> bool: ...

    async def ask(self, source: str) -> bool: ...


class BatchBackend(Protocol):
    clock: Clock
    owner: str  # this daemon instance: the owner its leases carry
    active_run: str | None

    @property
    def store(self) -> EventStore: ...  # the ledger its batch events go to
    @property
    def lease_seconds(self) -> float: ...

    # ---- the queue's contents ----------------------------------------------------------
    async def add(self, text: str, first_line: int = 1) -> Added: ...
    async def retry(self, *, failed: bool, deferred: bool) -> Retried: ...
    async def clear(self) -> Cleared: ...
    async def status(self, examples: int = 3) -> BatchStatus: ...
    async def export(self, directory: str, *, unvalidated: bool = False) -> Exported: ...
    async def counts(self) -> dict[str, int]: ...
    async def waiting_sources(self) -> list[str]: ...

    # ---- runs, leases and outcomes -----------------------------------------------------
    def begin_run(self) -> str: ...
    def end_run(self, run: str) -> None: ...
    async def lease(self, admit: Admission | None = None) -> Lease | None: ...
    async def renew(self, leases: list[Lease]) -> None: ...
    async def reap(self) -> int: ...
    async def requeue_orphans(self, *, own: bool = False) -> int: ...
    async def done(
        self,
        lease: Lease,
        *,
        recipe: str,
        version: str | None,
        tag: str | None,
        generated_by: str | None,
        validated: bool,
    ) -> bool: ...
    async def fail(self, lease: Lease, *, category: str, message: str, transient: bool) -> bool: ...
    async def defer(self, lease: Lease, *, reason: str, message: str | None = None) -> bool: ...
    async def give_back(self, lease: Lease, reason: str) -> bool: ...

    # ---- waiting for work another daemon may add or give back --------------------------
    async def wait_for_work(self, since: float) -> bool:
        """Nothing was leasable at ``since`` (trio time): wait until something may be
        and say True, or say False at once when nothing can become leasable during
        this run (the run's workers then stop)."""
        ...

    async def listen(self) -> None:
        """Run for the length of a batch run, turning other daemons' news (a job
        added, a lease given back) into wake-ups for :meth:`wait_for_work`."""
        ...
