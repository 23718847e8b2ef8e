"""The batch queue's imperative shell on SQLite: each decision on the fold recorded as
an event (one of the two implementations of ``batch/backend.py``'s ``BatchBackend``;
``batch/pg_queue.py`` is the other).

Every method that changes the queue decides on the in-memory :class:`Queue` (folded
from ``batch.*`` events) and appends the event saying so with ``append_nowait`` before
any ``await``, so two workers can never lease one job and an outcome from a worker
whose lease was taken away is refused (``batch.stale_commit``) rather than recorded.
Heartbeats are not events: a lease is renewed in memory while its job runs, and a
lease left unrenewed past its expiry is returned to the queue by :meth:`reap`.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.batch import queue as q
from tsukud.batch.backend import RunSlot
from tsukud.batch.results import Added, BatchStatus, Cleared, Exported, QueuedSource, Retried
from tsukud.batch.sources import parse
from tsukud.clock import Clock, iso
from tsukud.errors import UsageError

if TYPE_CHECKING:
    from tsukud.events.store import EventStore

ADD_CHUNK = 500  # jobs per batch.added event: a large add stays a few cheap rows


class Lease(msgspec.Struct, frozen=True, kw_only=True):
    """What a worker holds while it runs a job."""

    job: str
    tool: str
    source: str
    fence: int
    attempt: int
    session: str  # the job's ledger session for this attempt


def write_tree(root: Path, files: dict[str, str]) -> list[str]:
    """Write ``files`` (relative path → text) under ``root``, each atomically, skipping
    those that already hold the same bytes; the paths written."""
    from tsukud.fsutil import write_atomic

    written = []
    for rel, text in files.items():
        path = root / rel
        data = text.encode()
        try:
            if path.read_bytes() == data:
                continue
        except FileNotFoundError:
            pass
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data)
        written.append(rel)
    return written


class BatchService(RunSlot):
    def __init__(
        self, *, store: EventStore, queue: q.Queue, clock: Clock, owner: str | None = None
    ) -> None:
        self.store = store
        self.queue = queue
        self.clock = clock
        # This daemon instance: a lease held by another owner was left by a daemon
        # that is gone (one home, one daemon).
        self.owner = owner or "d-" + secrets.token_hex(6)

    # ---- the queue's contents -------------------------------------------------------------

    async def add(self, text: str, first_line: int = 1) -> Added:
        """Queue each good line's source once; report bad lines, and sources given twice
        in the input or already queued."""
        parsed = parse(text, first_line)
        new = [j for j in parsed.jobs if j.id not in self.queue.jobs]
        queued_before = [j for j in parsed.jobs if j.id in self.queue.jobs]
        last = None
        for i in range(0, len(new), ADD_CHUNK):
            chunk = new[i : i + ADD_CHUNK]
            last = self.store.append_nowait(
                "batch.added", {"jobs": [msgspec.to_builtins(j) for j in chunk]}
            )
        if last is not None:
            await self.store.wait_durable(last.id)
        return Added(
            added=len(new),
            already_queued=[QueuedSource(j.tool, j.source) for j in queued_before],
            duplicate_lines=parsed.duplicates,
            bad=parsed.bad,
            queued=self.queue.remaining(),
        )

    async def retry(self, *, failed: bool, deferred: bool) -> Retried:
        """Queue failed and/or deferred jobs again (both when neither is named)."""
        if not failed and not deferred:
            failed = deferred = True
        states = [s for s, on in (("failed", failed), ("deferred", deferred)) if on]
        jobs = sorted(
            (j for j in self.queue.jobs.values() if j.state in states), key=lambda j: j.seq
        )
        if jobs:
            ev = self.store.append_nowait(
                "batch.retried", {"jobs": [j.id for j in jobs], "states": states}
            )
            await self.store.wait_durable(ev.id)
        return Retried(retried=len(jobs), states=states)

    async def clear(self) -> Cleared:
        self.refuse_clear_under_run()
        count = len(self.queue.jobs)
        ev = self.store.append_nowait("batch.cleared", {"jobs": count})
        await self.store.wait_durable(ev.id)
        return Cleared(count)

    async def status(self, examples: int = 3) -> BatchStatus:
        return q.status_of(self.queue, examples, self.active_run)

    async def counts(self) -> dict[str, int]:
        return self.queue.counts()

    async def waiting_sources(self) -> list[str]:
        return [j.source for j in self.queue.waiting(self.clock.now())]

    async def wait_for_work(self, since: float) -> bool:
        """Nothing is leasable now: on one daemon nothing can become so while this run
        waits (its own workers end their jobs), so the worker stops."""
        return False

    async def listen(self) -> None:
        """No other daemon adds work to this queue: nothing to listen for."""

    async def export(self, directory: str, *, unvalidated: bool = False) -> Exported:
        """Write each tool's latest done recipe to ``directory/recipes/<letter>/<tool>.toml``,
        atomically, leaving files that already hold the same bytes untouched."""
        import trio

        root = Path(directory)
        if not root.is_absolute():
            raise UsageError(f"the export directory must be an absolute path (got {directory!r})")
        files = q.export_files(self.queue, unvalidated=unvalidated)  # taken now, in one step
        written = await trio.to_thread.run_sync(write_tree, root, files)
        return Exported(
            directory=str(root),
            written=written,
            unchanged=len(files) - len(written),
            recipes=len(files),
            unvalidated_skipped=0 if unvalidated else q.unvalidated_done(self.queue),
        )

    # ---- leases and outcomes: decide, record, then wait ----------------------------------

    @property
    def lease_seconds(self) -> float:
        return self.queue.lease_seconds

    async def lease(self, admit: Callable[[str], bool] | None = None) -> Lease | None:
        """Lease the next job, or None when nothing is leasable now. No await inside
        (a coroutine that never awaits runs to its end in one step): the decision and
        its event are one step, whatever the other workers do. ``admit(source)`` may hold a job back
        (its registry's breaker is open): it stays queued for later."""
        job = self.queue.next_job(
            self.clock.now(), None if admit is None else lambda j: admit(j.source)
        )
        if job is None:
            return None
        fence = job.fence + 1
        session = f"batch-{job.id}-{fence}"
        self.store.append_nowait(
            "batch.leased", {"job": job.id, "fence": fence, "owner": self.owner}, session
        )
        return Lease(
            job=job.id,
            tool=job.tool,
            source=job.source,
            fence=fence,
            attempt=job.attempts,
            session=session,
        )

    async def renew(self, leases: list[Lease]) -> None:
        """The heartbeat: leases still held are extended (in memory)."""
        until = self.clock.now() + self.queue.lease_seconds
        for lease in leases:
            if self.queue.stale(lease.job, lease.fence, self.owner) is None:
                self.queue.jobs[lease.job].lease_until = until

    async def reap(self) -> int:
        """Return expired leases to the queue (their workers can no longer commit)."""
        expired = self.queue.expired(self.clock.now())
        for job in expired:
            self._requeue(job.id, job.fence, "lease expired")
        return len(expired)

    async def requeue_orphans(self, *, own: bool = False) -> int:
        """Jobs a previous daemon instance left running go back to the queue; with
        ``own``, this instance's too (at a run's start, when no other run is active, a
        job still running here lost its worker)."""
        orphans = self.queue.orphaned(self.owner)
        for job in orphans:
            self._requeue(job.id, job.fence, "owner gone")
        mine = [j for j in self.queue.jobs.values() if own and j.state == "running"]
        for job in mine:
            self._requeue(job.id, job.fence, "run stopped")
        return len(orphans) + len(mine)

    def _requeue(self, job: str, fence: int, reason: str) -> None:
        self.store.append_nowait(
            "batch.requeued",
            {"job": job, "fence": fence, "reason": reason},
            f"batch-{job}-{fence}",
        )

    def _commit(self, lease: Lease, type_: str, payload: dict[str, Any]) -> bool:
        """Record an outcome if ``lease`` is still the job's; else refuse and count it."""
        current = self.queue.stale(lease.job, lease.fence, self.owner)
        if current is not None:
            self.store.append_nowait(
                "batch.stale_commit",
                {"job": lease.job, "fence": lease.fence, "current": current, "outcome": type_},
                lease.session,
            )
            return False
        self.store.append_nowait(
            type_, {"job": lease.job, "fence": lease.fence, **payload}, lease.session
        )
        return True

    async def done(
        self,
        lease: Lease,
        *,
        recipe: str,
        version: str | None,
        tag: str | None,
        generated_by: str | None,
        validated: bool,
    ) -> bool:
        from tsukud.create.service import recipe_sha256

        return self._commit(
            lease,
            "batch.done",
            {
                "version": version,
                "sha256": recipe_sha256(recipe),
                "recipe": recipe,
                "tag": tag,
                "generated_by": generated_by,
                "validated": validated,
            },
        )

    async def fail(self, lease: Lease, *, category: str, message: str, transient: bool) -> bool:
        """A failure that may pass (``transient``) backs off and is leased again, up to
        ``MAX_ATTEMPTS``; any other is final until ``batch retry``."""
        retry_at = None
        if transient and lease.attempt < q.MAX_ATTEMPTS:
            retry_at = iso(self.clock.now() + q.backoff(lease.attempt))
        return self._commit(
            lease,
            "batch.failed",
            {
                "category": category,
                "message": message,
                "attempt": lease.attempt,
                "retry_at": retry_at,
            },
        )

    async def defer(self, lease: Lease, *, reason: str, message: str | None = None) -> bool:
        return self._commit(lease, "batch.deferred", {"reason": reason, "message": message})

    async def give_back(self, lease: Lease, reason: str) -> bool:
        """Return a lease this worker still holds (a run stopped under it)."""
        if self.queue.stale(lease.job, lease.fence, self.owner) is not None:
            return False
        self._requeue(lease.job, lease.fence, reason)
        return True
