"""The batch queue as a fold over ``batch.*`` events, and the decisions made on it.

The daemon's rule holds here too: state is rebuilt from events. :class:`Queue` folds
every ``batch.*`` event since the last ``batch.cleared`` (at start-up from the ledger,
then live on every append), so a daemon that died mid-run starts with the queue exactly
as its ledger left it. The decisions (which job to lease next, whether an outcome may
still be recorded, when a failed job may run again) are plain functions over it; the
service records each one with ``append_nowait`` right after deciding, with no ``await``
between, so concurrent workers never take the same job.

Fences: each lease gives the job a fence one higher than any before. An outcome is
recorded only by the worker holding the job's current fence; a worker whose lease
expired and was given to another (a daemon stopped past its lease) is refused
(:func:`stale`), however late it wakes up.
"""

from __future__ import annotations

import heapq
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from tsukud.batch.results import (
    BatchStatus,
    Deferral,
    FailureExample,
    FailureGroup,
    RunningJob,
)
from tsukud.clock import parse_iso
from tsukud.events.catalogue import (
    BatchAdded,
    BatchDeferred,
    BatchDone,
    BatchFailed,
    BatchLeased,
    BatchRequeued,
    BatchRetried,
    BatchRunStopped,
    read,
)
from tsukud.events.projections import fold_rows
from tsukud.events.store import Event

#: How long a lease holds without a heartbeat (renewed in memory while the job runs).
LEASE_SECONDS = 120.0
#: A failure that may pass (a timeout, a 503) is tried again after a backoff, at most
#: this many attempts in all; then it is final until ``batch retry``.
MAX_ATTEMPTS = 4
BACKOFF_BASE = 60.0
BACKOFF_CAP = 3600.0

STATES = ("queued", "running", "done", "failed", "deferred")


@dataclass
class Done:
    version: str | None
    sha256: str
    recipe: str
    tag: str | None
    generated_by: str | None
    validated: bool
    seq: int  # the batch.done event's id: later is newer


@dataclass
class Job:
    id: str
    tool: str
    source: str
    priority: int
    seq: int  # order of addition (ties in priority go first come, first served)
    state: str = "queued"
    attempts: int = 0
    fence: int = 0
    owner: str | None = None
    lease_until: float | None = None
    not_before: float | None = None  # a failed job in backoff: leasable from then on
    category: str | None = None  # the last failure's (or deferral's reason)
    message: str | None = None
    done: Done | None = None

    @property
    def in_backoff(self) -> bool:
        return self.state == "failed" and self.not_before is not None


def backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1`` of a job whose failure may pass."""
    return float(min(BACKOFF_BASE * 2 ** max(attempt - 1, 0), BACKOFF_CAP))


@dataclass
class Queue:
    types: frozenset[str] = frozenset(
        {
            "batch.added",
            "batch.leased",
            "batch.done",
            "batch.failed",
            "batch.deferred",
            "batch.requeued",
            "batch.retried",
            "batch.cleared",
            "batch.run_stopped",
            "batch.stale_commit",
        }
    )
    jobs: dict[str, Job] = field(default_factory=dict)
    lease_seconds: float = LEASE_SECONDS  # batch.lease_seconds, set at daemon start
    stale_commits: int = 0
    unreadable: int = 0  # stored rows skipped at load: they no longer fit their Struct
    spent_usd: float = 0.0  # what finished runs spent (batch.run_stopped)
    # (-priority, seq, id) of jobs that became queued; entries gone stale are skipped.
    _ready: list[tuple[int, int, str]] = field(default_factory=list)
    _seq: int = 0

    def horizon(self, now: float) -> float | None:
        return None  # every batch event since the last batch.cleared (see load_sql)

    def _push(self, job: Job) -> None:
        heapq.heappush(self._ready, (-job.priority, job.seq, job.id))

    def _current(self, job_id: str, fence: int) -> Job | None:
        """The job, if ``fence`` is its current lease and it is running under it."""
        job = self.jobs.get(job_id)
        if job is None or job.fence != fence or job.state != "running":
            return None
        return job

    def _release(self, job_id: str, fence: int, state: str) -> Job | None:
        """End the lease ``fence`` of a job in ``state``; None (nothing changes) when that
        lease is no longer the job's."""
        job = self._current(job_id, fence)
        if job is not None:
            job.state, job.owner, job.lease_until = state, None, None
        return job

    def apply(self, ev: Event) -> None:
        t = ev.type
        job: Job | None
        if t == "batch.added":
            for spec in read(ev.payload, BatchAdded).jobs:
                if spec.id not in self.jobs:
                    self._seq += 1
                    job = Job(spec.id, spec.tool, spec.source, spec.priority, self._seq)
                    self.jobs[spec.id] = job
                    self._push(job)
        elif t == "batch.leased":
            leased = read(ev.payload, BatchLeased)
            job = self.jobs.get(leased.job)
            if job is not None:
                job.state, job.fence, job.owner = "running", leased.fence, leased.owner
                job.attempts += 1
                job.lease_until = parse_iso(ev.ts) + self.lease_seconds
                job.not_before = None
        elif t == "batch.done":
            done = read(ev.payload, BatchDone)
            job = self._release(done.job, done.fence, "done")
            if job is not None:
                job.category = job.message = None
                job.done = Done(
                    done.version,
                    done.sha256,
                    done.recipe,
                    done.tag,
                    done.generated_by,
                    done.validated,
                    ev.id,
                )
        elif t == "batch.failed":
            failed = read(ev.payload, BatchFailed)
            job = self._release(failed.job, failed.fence, "failed")
            if job is not None:
                job.category, job.message = failed.category, failed.message
                job.not_before = parse_iso(failed.retry_at) if failed.retry_at else None
        elif t == "batch.deferred":
            deferred = read(ev.payload, BatchDeferred)
            job = self._release(deferred.job, deferred.fence, "deferred")
            if job is not None:
                job.category, job.message = deferred.reason, deferred.message
        elif t == "batch.requeued":
            requeued = read(ev.payload, BatchRequeued)
            job = self._release(requeued.job, requeued.fence, "queued")
            if job is not None:
                self._push(job)
        elif t == "batch.retried":
            for jid in read(ev.payload, BatchRetried).jobs:
                job = self.jobs.get(jid)
                if job is not None and job.state in ("failed", "deferred"):
                    job.state, job.attempts, job.not_before = "queued", 0, None
                    self._push(job)
        elif t == "batch.cleared":
            self.jobs.clear()
            self._ready.clear()
        elif t == "batch.run_stopped":
            self.spent_usd += read(ev.payload, BatchRunStopped).spent_usd
        elif t == "batch.stale_commit":
            self.stale_commits += 1

    # ---- decisions ---------------------------------------------------------------------

    def next_job(self, now: float, admit: Callable[[Job], bool] | None = None) -> Job | None:
        """The job to lease now: the highest priority queued job (first added first),
        else a failed job whose backoff has passed. None: nothing is leasable now.

        ``admit`` may refuse a job (its registry's breaker is open): it stays queued, in
        its place, and the next one is considered. ``admit`` is asked at most once per
        job and the first job it admits is returned (admitting may take a breaker's
        one probe, so the caller leases it at once)."""
        refused: list[tuple[int, int, str]] = []
        try:
            while self._ready:
                entry = self._ready[0]
                job = self.jobs.get(entry[2])
                if job is None or job.state != "queued":
                    heapq.heappop(self._ready)  # leased, cleared or settled since pushed
                    continue
                if admit is None or admit(job):
                    return job
                refused.append(heapq.heappop(self._ready))
        finally:
            for entry in refused:
                heapq.heappush(self._ready, entry)
        due = sorted(
            (j for j in self.jobs.values() if j.in_backoff and (j.not_before or 0) <= now),
            key=lambda j: (-j.priority, j.seq),
        )
        return next((j for j in due if admit is None or admit(j)), None)

    def waiting(self, now: float) -> list[Job]:
        """Jobs that could run now but for a refusal by ``admit``: queued ones, and
        failed ones whose backoff has passed."""
        return [
            j
            for j in self.jobs.values()
            if j.state == "queued" or (j.in_backoff and (j.not_before or 0) <= now)
        ]

    def stale(self, job_id: str, fence: int, owner: str) -> int | None:
        """None when the worker holding ``fence`` may record the job's outcome; else the
        job's current fence (or -1 for a job no longer in the queue)."""
        job = self.jobs.get(job_id)
        if job is None:
            return -1
        if job.fence == fence and job.state == "running" and job.owner == owner:
            return None
        return job.fence

    def expired(self, now: float) -> list[Job]:
        """Running jobs whose lease passed without a heartbeat."""
        return [
            j
            for j in self.jobs.values()
            if j.state == "running" and j.lease_until is not None and j.lease_until < now
        ]

    def orphaned(self, owner: str) -> list[Job]:
        """Running jobs leased by another daemon instance (one that died)."""
        return [j for j in self.jobs.values() if j.state == "running" and j.owner != owner]

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys((*STATES, "backoff"), 0)
        for j in self.jobs.values():
            out[j.state] += 1
            if j.in_backoff:
                out["backoff"] += 1
        out["failed"] -= out["backoff"]  # a job in backoff is not (yet) a final failure
        return out

    def remaining(self) -> int:
        return remaining(self.counts())


def remaining(counts: dict[str, int]) -> int:
    """Jobs not yet ended: queued, running, or failed in a backoff (leased again later)."""
    return counts["queued"] + counts["running"] + counts["backoff"]


def failures(queue: Queue, examples: int = 3) -> list[FailureGroup]:
    """Failed jobs grouped by category, largest group first, with a few examples each."""
    groups: dict[str, list[Job]] = {}
    for j in queue.jobs.values():
        if j.state == "failed":
            groups.setdefault(j.category or "internal", []).append(j)
    out: list[FailureGroup] = []
    for category, jobs in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        jobs.sort(key=lambda j: j.seq)
        out.append(
            FailureGroup(
                category=category,
                count=len(jobs),
                backoff=sum(1 for j in jobs if j.in_backoff),
                examples=[
                    FailureExample(tool=j.tool, source=j.source, message=j.message or "")
                    for j in jobs[:examples]
                ],
            )
        )
    return out


def status_of(queue: Queue, examples: int, active_run: str | None) -> BatchStatus:
    """``batch status``'s answer for ``queue`` (the fold on SQLite, a snapshot of the
    rows on PostgreSQL): counts by state, failures by category, deferrals by reason,
    the running jobs, what finished runs spent and how many stale commits were refused."""
    running = sorted((j for j in queue.jobs.values() if j.state == "running"), key=lambda j: j.seq)
    deferred: dict[str, int] = {}
    for j in queue.jobs.values():
        if j.state == "deferred":
            deferred[j.category or "unknown"] = deferred.get(j.category or "unknown", 0) + 1
    return BatchStatus(
        counts=queue.counts(),
        total=len(queue.jobs),
        remaining=queue.remaining(),
        failures=failures(queue, examples),
        deferred=[Deferral(reason=r, count=n) for r, n in sorted(deferred.items())],
        running=[
            RunningJob(job=j.id, tool=j.tool, source=j.source, fence=j.fence, attempt=j.attempts)
            for j in running
        ],
        active_run=active_run,
        spent_usd=queue.spent_usd,
        stale_commits=queue.stale_commits,
    )


def export_files(queue: Queue, *, unvalidated: bool = False) -> dict[str, str]:
    """Each tool's latest done recipe at its registry path (``recipes/<letter>/<tool>.toml``),
    validated ones only unless ``unvalidated``.

    The text is the recipe exactly as recorded in its ``batch.done``, so an export is the
    same bytes every time for the same queue."""
    latest: dict[str, Job] = {}
    for j in queue.jobs.values():
        if j.done is None or not (j.done.validated or unvalidated):
            continue
        seen = latest.get(j.tool)
        if seen is None or (seen.done is not None and j.done.seq > seen.done.seq):
            latest[j.tool] = j
    return {
        f"recipes/{tool[0]}/{tool}.toml": job.done.recipe
        for tool, job in sorted(latest.items())
        if job.done is not None
    }


def unvalidated_done(queue: Queue) -> int:
    """Done jobs whose recipe was not validated (``--skip-validation``)."""
    return sum(1 for j in queue.jobs.values() if j.done is not None and not j.done.validated)


def load(conn: sqlite3.Connection) -> Queue:
    """The queue as the ledger holds it: every batch event after the last
    ``batch.cleared``, oldest first (the start-up half of the fold)."""
    queue = Queue()
    types = sorted(queue.types)
    marks = ",".join("?" * len(types))
    sql = (
        f"SELECT id, ts, type, session, payload, hash FROM events WHERE type IN ({marks})"  # noqa: S608
        " AND id > (SELECT coalesce(max(id), 0) FROM events WHERE type = 'batch.cleared')"
        " ORDER BY id"
    )
    queue.unreadable = fold_rows(conn, sql, types, queue.apply)
    return queue
