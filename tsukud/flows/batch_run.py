"""``tsukuctl batch run``: workers drain the batch queue through create (and validation).

N workers each lease a job (``BatchBackend.lease``, batch/backend.py: on SQLite decided
and recorded in one step, on PostgreSQL one claiming UPDATE),
run the creator for it with ``write=False`` (the recipe goes to the ledger, in ``batch.done``,
not to ``recipes/``) under the job's own ledger session, and record its outcome; a
keeper task reaps leases that expired and renews the ones held (the heartbeat). Network
and model stages of different jobs overlap with each other and with container
validation, whose own concurrency is the container lock's (``sandbox.max_concurrent``).

The run ends when nothing is leasable now: jobs in backoff stay in the queue for a later
run and are counted as remaining. On a queue shared with other daemons (PostgreSQL) it
ends when nothing is queued or running anywhere: while jobs run elsewhere an idle worker
waits (``wait_for_work``: woken by another daemon's news, or its own backstop), since a
lease that runs out, or a job given back, is work for it. A queue write the database
cannot take now is tried again; a job whose events the ledger cannot take now
(``ledger_unavailable``) is given back, not failed. A cancelled request (Ctrl-C, a
client that hung up) stops leasing, cancels the running jobs and gives their leases back
(``batch.requeued``, ``run stopped``), so the queue is consistent whatever stopped it.
``--max-usd`` is a cap on the request's tally (``policy/spent.py``): every reservation,
first or extension, must fit under it, so a job the cap cannot hold is deferred
(``budget``) before it can spend past it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from tsukud import log
from tsukud.batch.queue import MAX_ATTEMPTS, remaining
from tsukud.errors import BudgetExceeded, ConfirmationRequired, LedgerUnavailable, TsukuError
from tsukud.events.catalogue import BatchRunStopped, as_payload
from tsukud.net.http import HttpUnreachable
from tsukud.policy import spent
from tsukud.progress import Progress, no_progress
from tsukud.source import parse_source

if TYPE_CHECKING:
    from tsukud.batch.backend import BatchBackend
    from tsukud.batch.outcome import Failure
    from tsukud.batch.service import Lease
    from tsukud.create.pipeline import CreateResult
    from tsukud.policy.breaker import CircuitBreakers

Create = Callable[..., Awaitable["CreateResult"]]

KEEPER_SECONDS = 10.0  # reap expired leases, then renew held ones, this often
#: Probes of an open registry a run makes before it leaves that registry's jobs queued
#: for a later run: a registry down for good must not keep a batch waiting for ever.
PROBES_PER_RUN = 3
NETWORK_UNREACHABLE = HttpUnreachable.code  # a service out of reach, whoever reports it
#: How often a worker with nothing to lease looks again while a breaker's probe is out.
IDLE_LOOK_SECONDS = 1.0
#: How often a worker tries the queue again while the shared ledger is out of reach.
UNREACHABLE_RETRY_SECONDS = 1.0


def breaker_scope(source: str) -> str | None:
    """The breaker scope of the service a source is read from (``<prefix>:x``
    -> ``registry:<builder>``), None for a source create does not know (it fails on its own)."""
    from tsukud.batch.outcome import ecosystem_of
    from tsukud.policy.breaker import registry_scope

    eco = ecosystem_of(source)
    return None if eco is None else registry_scope(eco)


def reach_key(source: str) -> str:
    """What one unreachable job says is out of reach for the rest of a run: the
    service its source is read from (its breaker scope), or the source itself."""
    return breaker_scope(source) or source


def default_workers() -> int:
    """Twice the cores, at least 2: most of a job is waiting on the network, a model
    or the container lock, not on this machine's CPU."""
    return max(2, 2 * (os.cpu_count() or 1))


def only_cancelled(exc: BaseException) -> bool:
    """``exc`` is a cancellation (alone, or grouped by the workers' nursery)."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return isinstance(exc, trio.Cancelled)


class RunSummary(msgspec.Struct, frozen=True, kw_only=True):
    """What ``batch.run`` answers when the run stops (schema/rpc.md, "Batch")."""

    run: str
    reason: str  # finished | cancelled | failed
    workers: int
    done: int
    failed: int
    deferred: int
    requeued: int
    stale_commits: int
    # queued jobs of registries whose circuit stayed open through this run's probes:
    # they wait for a later run (batch status shows them as queued)
    waiting_on_breakers: dict[str, int]
    remaining: int
    backoff: int
    counts: dict[str, int]
    spent_usd: float
    duration_ms: int
    rate_per_min: float

    def stopped_event(self) -> BatchRunStopped:
        """The ``batch.run_stopped`` payload: the run's totals, not its breakdowns."""
        return BatchRunStopped(
            run=self.run,
            reason=self.reason,
            done=self.done,
            failed=self.failed,
            deferred=self.deferred,
            remaining=self.remaining,
            spent_usd=self.spent_usd,
            duration_ms=self.duration_ms,
        )


class RunOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``batch run``'s choices (also the ``batch.run`` request's params)."""

    deterministic_only: bool = False
    llm: bool = False
    provider: str | None = None
    only_provider: bool | None = None  # None: the llm.only_provider setting
    skip_validation: bool = False
    max_usd: float | None = None
    jobs: int | None = None
    yes: bool = False


@dataclass
class _Tally:
    done: int = 0
    failed: int = 0
    deferred: int = 0
    requeued: int = 0
    stale: int = 0
    held: dict[tuple[str, int], Lease] = field(default_factory=dict)
    # failed probes of each scope in this run (PROBES_PER_RUN ends the waiting)
    probes_failed: dict[str, int] = field(default_factory=dict)
    probes: dict[str, str] = field(default_factory=dict)  # job leased as a probe -> scope
    admitted_probe: str | None = None  # set by admit for the lease being made
    # transport failures of each job in this run, probes aside (bounded by
    # PROBES_PER_RUN): a source whose registry fails it alone must not loop for ever
    transport_tries: dict[str, int] = field(default_factory=dict)
    # services found out of reach in this run (``network_unreachable``), by
    # :func:`reach_key`, with the first such failure: their jobs wait for a later run
    out_of_reach: dict[str, TsukuError] = field(default_factory=dict)
    changed: trio.Event = field(default_factory=trio.Event)  # a job ended somewhere

    def ended(self) -> None:
        self.changed.set()
        self.changed = trio.Event()


@dataclass
class _Admission:
    """Whether a job on ``source`` may start now: not while its registry's circuit is
    open (or its one probe is out), nor once this run gave up on the registry. Asked by
    the SQLite fold (``__call__``, the daemon's own breakers) or by the shared queue's
    claim (``ask``: the team's breakers, in the database)."""

    breakers: CircuitBreakers | None
    tally: _Tally

    def _scope(self, source: str) -> str | None:
        """The scope to ask about; None when the source has none (or no breakers)."""
        return None if self.breakers is None else breaker_scope(source)

    def _gave_up(self, scope: str) -> bool:
        return self.tally.probes_failed.get(scope, 0) >= PROBES_PER_RUN

    def __call__(self, source: str) -> bool:
        if reach_key(source) in self.tally.out_of_reach:
            return False
        scope = self._scope(source)
        if scope is None or self.breakers is None:
            return True
        if self._gave_up(scope):
            return False
        closed = self.breakers.state(scope) == "closed"
        admitted = self.breakers.admit(scope)
        if admitted and not closed:
            self.tally.admitted_probe = scope  # this job is the scope's one probe
        return admitted

    async def ask(self, source: str) -> bool:
        if reach_key(source) in self.tally.out_of_reach:
            return False
        scope = self._scope(source)
        if scope is None or self.breakers is None:
            return True
        if self._gave_up(scope):
            return False
        verdict = await self.breakers.admit_job(scope)
        if verdict == "probe":
            self.tally.admitted_probe = scope
        return verdict != "wait"


def _stopped_by_the_network(summary: RunSummary, tally: _Tally) -> HttpUnreachable:
    """A run that found a service out of reach ends as every command does then
    (``network_unreachable``, exit 5, the service and its setting named by the first
    such failure), after its jobs went back to the queue and its end was recorded;
    what it did get done is in the message and the data."""
    first = next(iter(tally.out_of_reach.values()))
    given_back = ", ".join(sorted(tally.out_of_reach))
    return HttpUnreachable(
        f"batch run {summary.run}: {summary.done} done, {summary.failed} failed, "
        f"{summary.remaining} left in the queue; out of reach: {given_back}: {first.message}",
        hint=f"{first.hint} The jobs stay queued: `tsukuctl batch run` takes them up again.",
        **{
            **first.data,
            "run": summary.run,
            "done": summary.done,
            "failed": summary.failed,
            "remaining": summary.remaining,
        },
    )


class BatchRunner:
    def __init__(
        self, *, batch: BatchBackend, create: Create, breakers: CircuitBreakers | None = None
    ) -> None:
        self.batch = batch
        # Per-registry breakers (policy/breaker.py): a job of a registry whose circuit is
        # open waits in the queue; only transport failures (batch/outcome.py) count.
        self.breakers = breakers
        # Creator.create: GitHub releases, registries and bottles. Not create_recipe's
        # install-page fallback: a page's recipe may name hosts its repository does not,
        # which a person must see before it is used, and no one watches a batch job.
        self.create = create

    async def run(self, opts: RunOptions, *, progress: Progress) -> RunSummary:
        batch = self.batch
        run = batch.begin_run()
        try:
            summary, tally = await self._run(run, opts, progress)
        finally:
            batch.end_run(run)
        if tally.out_of_reach:
            raise _stopped_by_the_network(summary, tally)
        return summary

    async def _run(
        self, run: str, opts: RunOptions, progress: Progress
    ) -> tuple[RunSummary, _Tally]:
        batch, store = self.batch, self.batch.store
        workers = opts.jobs or default_workers()
        orphans = await batch.requeue_orphans(own=True)  # begin_run: no other run is active
        queued = remaining(await batch.counts())
        command = spent.current()
        if opts.max_usd is not None and command is not None:
            command.cap = Decimal(str(opts.max_usd))
        store.append_nowait(
            "batch.run_started",
            {
                "run": run,
                "owner": batch.owner,
                "workers": workers,
                "deterministic_only": opts.deterministic_only,
                "llm": opts.llm,
                "skip_validation": opts.skip_validation,
                "max_usd": opts.max_usd,
                "queued": queued,
            },
        )
        tally = _Tally()
        started = time.monotonic()
        if orphans:
            await progress(
                {
                    "stage": "batch",
                    "message": f"{orphans} job(s) left running with no worker "
                    "returned to the queue",
                }
            )
        reason = "failed"
        try:
            async with trio.open_nursery() as keeper:
                keeper.start_soon(self._keep, tally)
                keeper.start_soon(batch.listen)
                async with trio.open_nursery() as pool:
                    for _ in range(workers):
                        pool.start_soon(self._worker, opts, tally, progress, started)
                keeper.cancel_scope.cancel()
            reason = "finished"
        except BaseException as exc:
            reason = "cancelled" if only_cancelled(exc) else "failed"
            raise
        finally:
            with trio.CancelScope(shield=True):
                summary = await self._summary(run, reason, tally, started, workers)
                ev = store.append_nowait("batch.run_stopped", as_payload(summary.stopped_event()))
                await store.wait_durable(ev.id)
        return summary, tally

    async def _summary(
        self, run: str, reason: str, tally: _Tally, started: float, workers: int
    ) -> RunSummary:
        command = spent.current()
        counts = await self._counts()
        waiting = await self.waiting_on_breakers(tally)
        took = time.monotonic() - started
        finished = tally.done + tally.failed + tally.deferred
        return RunSummary(
            run=run,
            reason=reason,
            workers=workers,
            done=tally.done,
            failed=tally.failed,
            deferred=tally.deferred,
            requeued=tally.requeued,
            stale_commits=tally.stale,
            waiting_on_breakers=waiting,
            remaining=remaining(counts),
            backoff=counts["backoff"],
            counts=counts,
            spent_usd=float(command.usd) if command is not None else 0.0,
            duration_ms=round(took * 1000),
            rate_per_min=round(finished / took * 60, 2) if took > 0 else 0.0,
        )

    async def _counts(self) -> dict[str, int]:
        """The queue's counts; zeros (logged) while the shared ledger is out of reach,
        so a run's end is recorded whatever the database does."""
        try:
            return await self.batch.counts()
        except LedgerUnavailable as e:
            log.get().warning("batch.counts_unavailable", error=e.message)
            return dict.fromkeys(("queued", "running", "done", "failed", "deferred", "backoff"), 0)

    async def _keep(self, tally: _Tally) -> None:
        """Reap expired leases first, then renew the ones this run holds: a run woken
        after sleeping past its leases (a stopped daemon) has lost them. Every third
        of a lease at least, so a short lease (``batch.lease_seconds``) holds."""
        period = min(KEEPER_SECONDS, self.batch.lease_seconds / 3)
        while True:
            await trio.sleep(period)
            try:
                await self.batch.reap()
                await self.batch.renew(list(tally.held.values()))
            except LedgerUnavailable as e:
                log.get().warning("batch.renew_unavailable", error=e.message)

    def _admit(self, tally: _Tally) -> _Admission:
        return _Admission(self.breakers, tally)

    async def waiting_on_breakers(self, tally: _Tally) -> dict[str, int]:
        """Jobs that could run now but for an open circuit, by scope."""
        out: dict[str, int] = {}
        if self.breakers is None:
            return out
        try:
            sources = await self.batch.waiting_sources()
        except LedgerUnavailable:
            return out
        for source in sources:
            scope = breaker_scope(source)
            if scope is not None and (
                self.breakers.state(scope) != "closed"
                or tally.probes_failed.get(scope, 0) >= PROBES_PER_RUN
            ):
                out[scope] = out.get(scope, 0) + 1
        return out

    async def _next_lease(self, tally: _Tally) -> Lease | None:
        """The next job to run; while the only jobs left wait on open circuits (that
        this run has not given up on), wait for a cool-down to end or a job to end."""
        admit = self._admit(tally)
        while True:
            tally.admitted_probe = None
            since = trio.current_time()
            try:
                lease = await self.batch.lease(admit)
            except BaseException as e:
                # Admitted as a probe, then no lease came of it (the claim's commit
                # failed, the ledger went away): the probe slot is given back, or no
                # job of that registry could probe it again until a restart.
                await self._unclaimed_probe(tally)
                if not isinstance(e, LedgerUnavailable):
                    raise
                log.get().warning("batch.lease_unavailable", error=e.message)
                await trio.sleep(UNREACHABLE_RETRY_SECONDS)
                continue
            if lease is not None:
                if tally.admitted_probe is not None:
                    tally.probes[lease.job] = tally.admitted_probe
                return lease
            waiting = [
                s
                for s in await self.waiting_on_breakers(tally)
                if tally.probes_failed.get(s, 0) < PROBES_PER_RUN and s not in tally.out_of_reach
            ]
            if not waiting:
                try:
                    if await self.batch.wait_for_work(since):
                        continue  # another daemon's job may be ours now
                except LedgerUnavailable:
                    await trio.sleep(UNREACHABLE_RETRY_SECONDS)
                    continue
                return None  # what is left runs in other workers, or waits for a later run
            assert self.breakers is not None
            now = self.batch.clock.now()
            due = [t for t in (self.breakers.retry_at(s) for s in waiting) if t is not None]
            delay = max(0.0, min(due) - now) if due else IDLE_LOOK_SECONDS
            with trio.move_on_after(min(delay, 60.0) + 0.01):
                await tally.changed.wait()

    async def _unclaimed_probe(self, tally: _Tally) -> None:
        scope, tally.admitted_probe = tally.admitted_probe, None
        if scope is not None and self.breakers is not None:
            with trio.CancelScope(shield=True):
                await self.breakers.release_job(scope)

    async def _worker(
        self, opts: RunOptions, tally: _Tally, progress: Progress, started: float
    ) -> None:
        while True:
            lease = await self._next_lease(tally)
            if lease is None:
                return
            tally.held[(lease.job, lease.fence)] = lease
            try:
                outcome, message = await self._run_job(lease, opts, tally)
            finally:
                tally.held.pop((lease.job, lease.fence), None)
                tally.ended()
            await progress(await self._frame(lease, outcome, message, tally, started))

    async def _run_job(
        self, lease: Lease, opts: RunOptions, tally: _Tally
    ) -> tuple[str, str | None]:
        """The job's outcome, and its failure's message (None when done)."""

        try:
            result = await self.create(
                lease.tool,
                parse_source(lease.source),
                progress=no_progress,  # a job's own stages are in its session's events
                write=False,
                check_target=False,
                deterministic_only=opts.deterministic_only,
                force_llm=opts.llm,
                skip_validation=opts.skip_validation,
                providers=opts.provider,
                only_provider=opts.only_provider,
                confirmed=opts.yes,
                can_ask=False,
                session=lease.session,
            )
        except BaseException as exc:
            # A cancellation that reaches the job inside one of create's nurseries comes
            # grouped (BaseExceptionGroup[Cancelled]), not as trio.Cancelled: caught as
            # the latter only, such a job was left running, not given back.
            if only_cancelled(exc):
                with trio.CancelScope(shield=True), trio.move_on_after(10):
                    await self._verdict(lease, None, tally, answered=False)
                    if await self.batch.give_back(lease, "run stopped"):
                        tally.requeued += 1
                        await self.batch.store.caught_up()
                raise
            if isinstance(exc, Exception):
                return await self._settle_failure(lease, exc, tally)
            raise
        await self._verdict(lease, None, tally, answered=True)
        recorded = await self.batch.done(
            lease,
            recipe=result.recipe,
            version=result.version,
            tag=result.tag,
            generated_by=result.generated_by,
            validated=result.validation.status == "passed",
        )
        if not recorded:
            tally.stale += 1
            return "stale", None
        tally.done += 1
        return "done", None

    async def _give_back(
        self, lease: Lease, failure: Failure, tally: _Tally, message: str
    ) -> tuple[str, str]:
        """The job back to the queue as it was (its service, not the job, failed): the
        breaker told, then "requeued" (or "stale": the lease had passed to another)."""
        await self._verdict(lease, failure, tally, answered=True)
        if not await self.batch.give_back(lease, f"{failure.category}: {message}"):
            tally.stale += 1
            return "stale", message
        tally.requeued += 1
        return "requeued", message

    async def _verdict(
        self, lease: Lease, failure: Failure | None, tally: _Tally, *, answered: bool
    ) -> None:
        """Tell the job's registry breaker how the job went: success (None) or a
        failure, of which only a transport failure counts; a job that ended without
        hearing from the registry (cancelled, deferred for money) gives back a probe.
        A shared ledger out of reach loses the verdict (logged): a probe given back
        that way returns to the team at its lease."""
        scope = breaker_scope(lease.source)
        probe = tally.probes.pop(lease.job, None) is not None
        if scope is None or self.breakers is None:
            return
        try:
            if not answered:
                if probe:
                    await self.breakers.release_job(scope)
                return
            await self.breakers.judge_job(scope, failure, session=lease.session)
        except LedgerUnavailable as e:
            log.get().warning("batch.breaker_verdict_lost", scope=scope, error=e.message)
        if probe and failure is not None and failure.transport:
            probes = tally.probes_failed
            probes[scope] = probes.get(scope, 0) + 1

    def _transport_retry(self, lease: Lease, tally: _Tally) -> bool:
        """May a job that met an unwell registry go back to the queue? A probe's
        failure may (the run's probes are bounded); any other, MAX_ATTEMPTS times a
        run, then it fails (``transport``, retried by a later run after a backoff)."""
        if lease.job in tally.probes:
            return True
        tries = tally.transport_tries.get(lease.job, 0) + 1
        tally.transport_tries[lease.job] = tries
        return tries < MAX_ATTEMPTS

    async def _settle_failure(
        self, lease: Lease, exc: Exception, tally: _Tally
    ) -> tuple[str, str | None]:
        """The one place a job's failure is classified and recorded
        (``batch/outcome.py``): a budget that cannot hold the job, or a cost that needs
        a yes, defers it; anything else fails it under its category, backing off when
        the same job may succeed later (a registry that was unwell), and tells the
        registry's breaker, which counts transport failures only."""
        from tsukud.batch.outcome import classify

        failure = classify(exc, source=lease.source)
        message = failure.message
        if isinstance(exc, LedgerUnavailable):
            # The shared ledger could not take the job's events: not the job's fault.
            # Back to the queue once the database answers (give_back waits for it).
            await self._verdict(lease, None, tally, answered=False)
            if not await self.batch.give_back(lease, "ledger unavailable"):
                tally.stale += 1
                return "stale", message
            tally.requeued += 1
            return "requeued", message
        if not isinstance(exc, TsukuError):
            log.get().error("batch.job_crashed", job=lease.job, error=message)
        if isinstance(exc, BudgetExceeded | ConfirmationRequired):
            # Not the source's fault: the money needs room, or a yes (--yes) no one
            # could give while the batch ran.
            await self._verdict(lease, None, tally, answered=False)
            reason = "budget" if isinstance(exc, BudgetExceeded) else "confirmation"
            ok = await self.batch.defer(lease, reason=reason, message=message)
            outcome = "deferred"
        elif failure.transport and isinstance(exc, TsukuError) and exc.code == NETWORK_UNREACHABLE:
            # Out of reach (offline, a firewall): another try in this run fails the
            # same way at once, so the job goes back to the queue once, as it was,
            # and no job of that service is leased again until a later run.
            tally.out_of_reach.setdefault(reach_key(lease.source), exc)
            return await self._give_back(lease, failure, tally, message)
        elif failure.transport and self._transport_retry(lease, tally):
            # The registry is unwell, not the job: back to the queue, in its place,
            # where it waits for the registry's breaker (open after a few of these)
            # rather than a backoff of its own.
            return await self._give_back(lease, failure, tally, message)
        else:
            await self._verdict(lease, failure, tally, answered=True)
            ok = await self.batch.fail(
                lease,
                category=failure.category,
                message=message,
                transient=failure.retryable,
            )
            outcome = "failed"
        if not ok:
            tally.stale += 1
            return "stale", message
        if outcome == "deferred":
            tally.deferred += 1
        else:
            tally.failed += 1
        return outcome, message

    async def _frame(
        self, lease: Lease, outcome: str, message: str | None, tally: _Tally, started: float
    ) -> dict[str, Any]:
        took = time.monotonic() - started
        finished = tally.done + tally.failed + tally.deferred
        left = remaining(await self._counts())
        rate = finished / took if took > 0 else 0.0
        command = spent.current()
        return {
            "stage": "batch",
            "message": f"{lease.tool} ({lease.source}): {outcome}"
            + (f": {message}" if outcome in ("failed", "deferred") and message else ""),
            "tool": lease.tool,
            "outcome": outcome,
            "done": tally.done,
            "failed": tally.failed,
            "deferred": tally.deferred,
            "remaining": left,
            "rate_per_min": round(rate * 60, 2),
            "eta_s": round(left / rate) if rate > 0 else None,
            "spent_usd": float(command.usd) if command is not None else 0.0,
        }
