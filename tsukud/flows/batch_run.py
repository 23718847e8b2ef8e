"""``tsukuctl batch run``: workers drain the batch queue through create (and validation).

N workers each lease a job (``BatchService.lease``: decided and recorded in one step),
run the creator for it with ``write=False`` (the recipe goes to the ledger, in ``batch.done``,
not to ``recipes/``) under the job's own ledger session, and record its outcome; a
keeper task reaps leases that expired and renews the ones held (the heartbeat). Network
and model stages of different jobs overlap with each other and with container
validation, whose own concurrency is the container lock's (``sandbox.max_concurrent``).

The run ends when nothing is leasable now: jobs in backoff stay in the queue for a later
run and are counted as remaining. A cancelled request (Ctrl-C, a client that hung up)
stops leasing, cancels the running jobs and gives their leases back
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
from tsukud.errors import BudgetExceeded, ConfirmationRequired, TsukuError
from tsukud.policy import spent

if TYPE_CHECKING:
    from tsukud.batch.service import BatchService, Lease
    from tsukud.create.pipeline import CreateResult

Progress = Callable[[dict[str, Any]], Awaitable[None]]
Create = Callable[..., Awaitable["CreateResult"]]

KEEPER_SECONDS = 10.0  # reap expired leases, then renew held ones, this often
MAX_MESSAGE = 300  # characters of a failure's message kept in the ledger


def default_workers() -> int:
    """Twice the cores, at least 2: most of a job is waiting on the network, a model
    or the container lock, not on this machine's CPU."""
    return max(2, 2 * (os.cpu_count() or 1))


def failure_message(exc: BaseException) -> str:
    """One line, redacted, terminal-safe and capped: what ``batch status`` shows."""
    from tsukud.secrets import redact
    from tsukud.terminal import terminal_safe

    text = exc.message if isinstance(exc, TsukuError) else f"{type(exc).__name__}: {exc}"
    line = terminal_safe(redact(text), one_line=True)
    line = " ".join(line.split())
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 1] + "…"


def only_cancelled(exc: BaseException) -> bool:
    """``exc`` is a cancellation (alone, or grouped by the workers' nursery)."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1] is None
    return isinstance(exc, trio.Cancelled)


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


class BatchRunner:
    def __init__(self, *, batch: BatchService, create: Create) -> None:
        self.batch = batch
        # Creator.create: GitHub releases, registries and bottles. Not create_recipe's
        # install-page fallback: a page's recipe may name hosts its repository does not,
        # which a person must see before it is used, and no one watches a batch job.
        self.create = create

    async def run(self, opts: RunOptions, *, progress: Progress) -> dict[str, Any]:
        batch = self.batch
        run = batch.begin_run()
        try:
            return await self._run(run, opts, progress)
        finally:
            batch.end_run(run)

    async def _run(self, run: str, opts: RunOptions, progress: Progress) -> dict[str, Any]:
        batch, store = self.batch, self.batch.store
        workers = opts.jobs or default_workers()
        orphans = batch.requeue_orphans(own=True)  # begin_run: no other run is active
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
                "queued": batch.queue.remaining(),
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
                summary = self._summary(run, reason, tally, started, workers)
                ev = store.append_nowait(
                    "batch.run_stopped",
                    {
                        k: summary[k]
                        for k in (
                            "run",
                            "reason",
                            "done",
                            "failed",
                            "deferred",
                            "remaining",
                            "spent_usd",
                            "duration_ms",
                        )
                    },
                )
                await store.wait_durable(ev.id)
        return summary

    def _summary(
        self, run: str, reason: str, tally: _Tally, started: float, workers: int
    ) -> dict[str, Any]:
        command = spent.current()
        counts = self.batch.queue.counts()
        took = time.monotonic() - started
        finished = tally.done + tally.failed + tally.deferred
        return {
            "run": run,
            "reason": reason,
            "workers": workers,
            "done": tally.done,
            "failed": tally.failed,
            "deferred": tally.deferred,
            "requeued": tally.requeued,
            "stale_commits": tally.stale,
            "remaining": self.batch.queue.remaining(),
            "backoff": counts["backoff"],
            "counts": counts,
            "spent_usd": float(command.usd) if command is not None else 0.0,
            "duration_ms": round(took * 1000),
            "rate_per_min": round(finished / took * 60, 2) if took > 0 else 0.0,
        }

    async def _keep(self, tally: _Tally) -> None:
        """Reap expired leases first, then renew the ones this run holds: a run woken
        after sleeping past its leases (a stopped daemon) has lost them."""
        while True:
            await trio.sleep(KEEPER_SECONDS)
            self.batch.reap()
            self.batch.renew(list(tally.held.values()))

    async def _worker(
        self, opts: RunOptions, tally: _Tally, progress: Progress, started: float
    ) -> None:
        while True:
            lease = self.batch.lease()
            if lease is None:
                return
            tally.held[(lease.job, lease.fence)] = lease
            try:
                outcome = await self._run_job(lease, opts, tally)
            finally:
                tally.held.pop((lease.job, lease.fence), None)
            await progress(self._frame(lease, outcome, tally, started))

    async def _run_job(self, lease: Lease, opts: RunOptions, tally: _Tally) -> str:
        async def quiet(_frame: dict[str, Any]) -> None:
            return None  # a job's own stages are in its session's events

        try:
            result = await self.create(
                lease.tool,
                lease.source,
                progress=quiet,
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
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                if self.batch.give_back(lease, "run stopped"):
                    tally.requeued += 1
                    await self.batch.store.caught_up()
            raise
        except Exception as exc:
            return self._settle_failure(lease, exc, tally)
        recorded = self.batch.done(
            lease,
            recipe=result.recipe,
            version=result.version,
            tag=result.tag,
            generated_by=result.generated_by,
            validated=result.validation.status == "passed",
        )
        if not recorded:
            tally.stale += 1
            return "stale"
        tally.done += 1
        return "done"

    def _settle_failure(self, lease: Lease, exc: Exception, tally: _Tally) -> str:
        """The one place a job's failure is classified and recorded: a budget that cannot
        hold the job, or a cost that needs a yes, defers it; anything else fails it
        under its error code, backing off when the code says the same request may
        succeed later."""
        message = failure_message(exc)
        if not isinstance(exc, TsukuError):
            log.get().error("batch.job_crashed", job=lease.job, error=message)
        if isinstance(exc, BudgetExceeded | ConfirmationRequired):
            # Not the source's fault: the money needs room, or a yes (--yes) no one
            # could give while the batch ran.
            reason = "budget" if isinstance(exc, BudgetExceeded) else "confirmation"
            ok = self.batch.defer(lease, reason=reason, message=message)
            outcome = "deferred"
        else:
            category = exc.code if isinstance(exc, TsukuError) else "internal"
            transient = isinstance(exc, TsukuError) and exc.retryable
            ok = self.batch.fail(lease, category=category, message=message, transient=transient)
            outcome = "failed"
        if not ok:
            tally.stale += 1
            return "stale"
        if outcome == "deferred":
            tally.deferred += 1
        else:
            tally.failed += 1
        return outcome

    def _frame(self, lease: Lease, outcome: str, tally: _Tally, started: float) -> dict[str, Any]:
        took = time.monotonic() - started
        finished = tally.done + tally.failed + tally.deferred
        remaining = self.batch.queue.remaining()
        rate = finished / took if took > 0 else 0.0
        command = spent.current()
        job = self.batch.queue.jobs.get(lease.job)
        return {
            "stage": "batch",
            "message": f"{lease.tool} ({lease.source}): {outcome}"
            + (f": {job.message}" if job is not None and outcome != "done" and job.message else ""),
            "tool": lease.tool,
            "outcome": outcome,
            "done": tally.done,
            "failed": tally.failed,
            "deferred": tally.deferred,
            "remaining": remaining,
            "rate_per_min": round(rate * 60, 2),
            "eta_s": round(remaining / rate) if rate > 0 else None,
            "spent_usd": float(command.usd) if command is not None else 0.0,
        }
