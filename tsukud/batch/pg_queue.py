"""The batch queue as rows in the shared PostgreSQL ledger (``ledger.url``): every
daemon on the database drains one queue.

The rows (``queue_pg.sql``) are the truth for who owns what; the ``batch.*`` events each
daemon appends to its own chain are the record of what it did. The database decides
what the SQLite fold decides in memory:

- a **claim** is one ``UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED)``
  that moves a queued job (or one whose lease expired, or a failed one whose backoff
  passed) to ``running`` under this daemon with ``fence = fence + 1``: two daemons
  never get one job, and neither waits for the other's row;
- a **renewal**, an **outcome** and a **give-back** are conditional on that fence (and
  the owner): the final commit updates the job and inserts its recipe into
  ``batch_recipes`` (primary key ``(tool, version)``, ``ON CONFLICT DO NOTHING``) in one
  transaction. A worker whose lease was taken (killed, paused or cut off past
  ``lease_until``, then claimed again with a higher fence) updates zero rows: its
  transaction is rolled back and the refusal counted (``refused``, shown by ``batch
  status``; a ``batch.stale_commit`` event);
- a commit whose answer was lost with the connection is recognised when it is sent
  again (the job already in that state under that fence and owner), not counted twice.

Idle workers are woken by ``NOTIFY tsuku_queue`` (sent in the transaction that adds,
gives back or ends a job) through a ``LISTEN`` connection whose socket trio waits on, with a
periodic look as the backstop for a lost notification and for leases that expire.

psycopg runs on worker threads (its sync API, as the event store does); a database out
of reach is ``ledger_unavailable``.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar, cast

import msgspec
import psycopg
import trio

from tsukud import log
from tsukud.batch import queue as q
from tsukud.batch.backend import Admission, RunSlot
from tsukud.batch.errors import BatchRunning
from tsukud.batch.results import Added, BatchStatus, Cleared, Exported, QueuedSource, Retried
from tsukud.batch.service import ADD_CHUNK, Lease, write_tree
from tsukud.batch.sources import parse
from tsukud.clock import Clock, iso
from tsukud.errors import DiskFull, LedgerUnavailable, UsageError
from tsukud.events.pg_pool import PgPool
from tsukud.events.pg_store import PgEventStore, _connect, unreachable

T = TypeVar("T")
CHANNEL = "tsuku_queue"
#: How long an idle worker waits for a notification before it looks again itself (the
#: backstop), as a share of the lease: a lease that expires is noticed within it.
BACKSTOP_SHARE = 0.5
#: A worker that found queued jobs locked by another daemon's claim looks again after this.
CONTENDED_S = 0.05
#: How often a worker retries a queue write while the database is out of reach.
RETRY_S = 1.0
#: How many times a batch event the ledger refuses is tried again (RETRY_S apart).
RECORD_TRIES = 60

_READY = (
    "(b.state = 'queued' OR (b.state = 'running' AND b.lease_until < now())"
    " OR (b.state = 'failed' AND b.not_before IS NOT NULL AND b.not_before <= now()))"
)
# The claim: one statement. ``refused`` holds the source prefixes whose registry's
# breaker held a job back during this claim (they stay queued, in their place).
_CLAIM = f"""
WITH c AS (
    SELECT b.id, b.state AS was, b.fence AS old_fence FROM tsuku.batch_items b
     WHERE {_READY} AND NOT (split_part(b.source, ':', 1) = ANY(%(refused)s::text[]))
     ORDER BY (b.state = 'failed'), b.priority DESC, b.id
     LIMIT 1 FOR UPDATE SKIP LOCKED)
UPDATE tsuku.batch_items b
   SET state = 'running', owner = %(owner)s, fence = b.fence + 1, attempts = b.attempts + 1,
       lease_until = now() + make_interval(secs => %(lease)s), not_before = NULL
  FROM c WHERE b.id = c.id
RETURNING b.job, b.tool, b.source, b.fence, b.attempts, c.was, c.old_fence
"""  # noqa: S608 (constant SQL; every value is bound)
_NOTIFY = f"SELECT pg_notify('{CHANNEL}', '')"
# An outcome: the job leaves ``running`` only under the lease's fence. The fence alone
# names the lease (every claim raises it): a worker whose lease was taken, even one
# whose job is still running under the new holder, changes nothing.
_SETTLE = (
    "UPDATE tsuku.batch_items SET state = %(state)s, lease_until = NULL,"
    " category = %(category)s, message = %(message)s,"
    " not_before = CASE WHEN %(backoff)s::float8 IS NULL THEN NULL"
    " ELSE now() + make_interval(secs => %(backoff)s::float8) END"
    " WHERE job = %(job)s AND fence = %(fence)s AND state = 'running'"
)
_RELEASE = (
    "UPDATE tsuku.batch_items SET state = 'queued', owner = NULL, lease_until = NULL"
    " WHERE job = %(job)s AND fence = %(fence)s AND state = 'running'"
)


def _epoch(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


class PgBatchService(RunSlot):
    """``BatchBackend`` on the shared database (see the module's docstring)."""

    def __init__(self, *, store: PgEventStore, clock: Clock, lease_seconds: float) -> None:
        self.store: PgEventStore = store
        self.clock = clock
        self._lease_seconds = lease_seconds
        # The origin names the daemon (its chain); the instance part tells a restarted
        # daemon's leases from those its dead predecessor left.
        self.owner = f"{store.origin}/d-{secrets.token_hex(6)}"
        self._pool = PgPool(store.url)
        self._woken_at = float("-inf")  # trio time of the last notification
        self._wake = trio.Event()

    @property
    def lease_seconds(self) -> float:
        return self._lease_seconds

    async def _db(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """Run ``fn`` on a pooled connection in a worker thread; every statement of the
        queue may run twice (a claim or an outcome whose answer was lost is recognised,
        or its lease runs out), so a connection found broken is replaced once."""

        return await trio.to_thread.run_sync(lambda: self._pool.run(fn, again=True))

    async def _record(
        self, type_: str, payload: dict[str, Any], session: str | None = None
    ) -> None:
        """Append a batch event to this daemon's chain. The row already changed (it is
        the truth), so a ledger that cannot take the event yet (the database just came
        back, the writer has not reconnected) is waited for, a while, then logged."""
        for _ in range(RECORD_TRIES):
            try:
                self.store.append_nowait(type_, payload, session)
                return
            except (LedgerUnavailable, DiskFull) as e:
                error = e.message
            await trio.sleep(RETRY_S)
        log.get().warning("batch.event_not_recorded", type=type_, error=error)

    # ---- the queue's contents -------------------------------------------------------

    async def add(self, text: str, first_line: int = 1) -> Added:
        parsed = parse(text, first_line)
        jobs = parsed.jobs

        def insert(conn: psycopg.Connection[Any]) -> tuple[set[str], int]:
            with conn.transaction():
                rows = conn.execute(
                    "INSERT INTO tsuku.batch_items (job, tool, source, priority)"
                    " SELECT j, t, s, p FROM unnest(%s::text[], %s::text[], %s::text[],"
                    " %s::int[]) WITH ORDINALITY AS u(j, t, s, p, n) ORDER BY n"
                    " ON CONFLICT (job) DO NOTHING RETURNING job",
                    (
                        [j.id for j in jobs],
                        [j.tool for j in jobs],
                        [j.source for j in jobs],
                        [j.priority for j in jobs],
                    ),
                ).fetchall()
                if rows:
                    conn.execute(_NOTIFY)
            return {str(r[0]) for r in rows}, self._remaining(conn)

        added, queued = await self._db(insert)
        new = [j for j in jobs if j.id in added]
        last = None
        for i in range(0, len(new), ADD_CHUNK):
            chunk = new[i : i + ADD_CHUNK]
            with contextlib.suppress(LedgerUnavailable, DiskFull):
                last = self.store.append_nowait(
                    "batch.added", {"jobs": [msgspec.to_builtins(j) for j in chunk]}
                )
        if last is not None:
            await self.store.wait_durable(last.id)
        return Added(
            added=len(new),
            already_queued=[QueuedSource(j.tool, j.source) for j in jobs if j.id not in added],
            duplicate_lines=parsed.duplicates,
            bad=parsed.bad,
            queued=queued,
        )

    @staticmethod
    def _remaining(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute(
            "SELECT count(*) FROM tsuku.batch_items WHERE state IN ('queued', 'running')"
            " OR (state = 'failed' AND not_before IS NOT NULL)"
        ).fetchone()
        return int(row[0]) if row else 0

    async def retry(self, *, failed: bool, deferred: bool) -> Retried:
        if not failed and not deferred:
            failed = deferred = True
        states = [s for s, on in (("failed", failed), ("deferred", deferred)) if on]

        def requeue(conn: psycopg.Connection[Any]) -> list[str]:
            with conn.transaction():
                rows = conn.execute(
                    "UPDATE tsuku.batch_items SET state = 'queued', attempts = 0,"
                    " not_before = NULL WHERE state = ANY(%s) RETURNING id, job",
                    (states,),
                ).fetchall()
                if rows:
                    conn.execute(_NOTIFY)
            return [str(job) for _id, job in sorted(rows)]

        jobs = await self._db(requeue)
        if jobs:
            ev = self.store.append_nowait("batch.retried", {"jobs": jobs, "states": states})
            await self.store.wait_durable(ev.id)
        return Retried(retried=len(jobs), states=states)

    async def clear(self) -> Cleared:
        self.refuse_clear_under_run()

        def drop(conn: psycopg.Connection[Any]) -> tuple[int, str | None]:
            with conn.transaction():
                conn.execute("LOCK TABLE tsuku.batch_items IN EXCLUSIVE MODE")
                held = conn.execute(
                    "SELECT owner FROM tsuku.batch_items"
                    " WHERE state = 'running' AND lease_until >= now() LIMIT 1"
                ).fetchone()
                if held is not None:
                    return 0, str(held[0])
                cur = conn.execute("DELETE FROM tsuku.batch_items")
                conn.execute("DELETE FROM tsuku.batch_recipes")
                return cur.rowcount, None

        count, holder = await self._db(drop)
        if holder is not None:
            raise BatchRunning(
                f"a batch run on another daemon ({holder}) holds jobs of the shared queue: "
                "it cannot be cleared under it",
                run=holder,
            )
        ev = self.store.append_nowait("batch.cleared", {"jobs": count})
        await self.store.wait_durable(ev.id)
        return Cleared(count)

    async def snapshot(self) -> q.Queue:
        """The shared queue as a :class:`~tsukud.batch.queue.Queue` (the fold's shape),
        read in one transaction, so status and export are the SQLite code over it."""

        def read(conn: psycopg.Connection[Any]) -> q.Queue:
            snap = q.Queue()
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                items = conn.execute(
                    "SELECT id, job, tool, source, priority, state, attempts, fence, owner,"
                    " lease_until, not_before, category, message, refused"
                    " FROM tsuku.batch_items ORDER BY id"
                ).fetchall()
                recipes = conn.execute(
                    "SELECT item, version, sha256, recipe, tag, generated_by, validated,"
                    " committed FROM tsuku.batch_recipes"
                ).fetchall()
                spent = conn.execute(
                    "SELECT coalesce(sum((payload::jsonb ->> 'spent_usd')::numeric), 0)"
                    " FROM tsuku.events WHERE type = 'batch.run_stopped' AND gid > coalesce("
                    "(SELECT max(gid) FROM tsuku.events WHERE type = 'batch.cleared'), 0)"
                ).fetchone()
            by_item: dict[int, q.Done] = {}
            for item, version, sha, recipe, tag, made_by, validated, committed in recipes:
                by_item[int(item)] = q.Done(
                    version or None, sha, recipe, tag, made_by, bool(validated), int(committed)
                )
            for row in items:
                (iid, job, tool, source, prio, state, attempts, fence, owner) = row[:9]
                lease_until, not_before, category, message, refused = row[9:]
                snap.jobs[job] = q.Job(
                    job,
                    tool,
                    source,
                    int(prio),
                    int(iid),
                    state=state,
                    attempts=int(attempts),
                    fence=int(fence),
                    owner=owner,
                    lease_until=_epoch(lease_until),
                    not_before=_epoch(not_before),
                    category=category,
                    message=message,
                    done=by_item.get(int(iid)),
                )
                snap.stale_commits += int(refused)
            snap.spent_usd = float(spent[0]) if spent else 0.0
            return snap

        return await self._db(read)

    async def status(self, examples: int = 3) -> BatchStatus:
        return q.status_of(await self.snapshot(), examples, self.active_run)

    async def export(self, directory: str, *, unvalidated: bool = False) -> Exported:
        """Each tool's newest recipe in ``batch_recipes`` (one row per (tool, version),
        so each is written once), as the SQLite export writes them."""
        root = Path(directory)
        if not root.is_absolute():
            raise UsageError(f"the export directory must be an absolute path (got {directory!r})")
        snap = await self.snapshot()
        files = q.export_files(snap, unvalidated=unvalidated)
        written = await trio.to_thread.run_sync(write_tree, root, files)
        return Exported(
            directory=str(root),
            written=written,
            unchanged=len(files) - len(written),
            recipes=len(files),
            unvalidated_skipped=0 if unvalidated else q.unvalidated_done(snap),
        )

    async def counts(self) -> dict[str, int]:
        def read(conn: psycopg.Connection[Any]) -> dict[str, int]:
            rows = conn.execute(
                "SELECT state, (state = 'failed' AND not_before IS NOT NULL), count(*)"
                " FROM tsuku.batch_items GROUP BY 1, 2"
            ).fetchall()
            out = dict.fromkeys((*q.STATES, "backoff"), 0)
            for state, backoff, n in rows:
                out["backoff" if backoff else state] += int(n)
            return out

        return await self._db(read)

    async def waiting_sources(self) -> list[str]:
        def read(conn: psycopg.Connection[Any]) -> list[str]:
            rows = conn.execute(
                f"SELECT b.source FROM tsuku.batch_items b WHERE {_READY} ORDER BY b.id"  # noqa: S608
            ).fetchall()
            return [str(r[0]) for r in rows]

        return await self._db(read)

    # ---- runs, leases and outcomes ----------------------------------------------------

    async def lease(self, admit: Admission | None = None) -> Lease | None:
        """Claim the next job. ``admit(source)`` is asked in the event loop while the
        claim's transaction is open: a job it holds back (its registry's breaker is
        open) is rolled back to the queue untouched, its registry left out of this
        claim, and the next job is claimed instead."""
        params = {"owner": self.owner, "lease": self._lease_seconds}

        def claim(conn: psycopg.Connection[Any]) -> Sequence[Any] | None:
            refused: list[str] = []
            while True:
                with conn.transaction():
                    row = conn.execute(_CLAIM, {**params, "refused": refused}).fetchone()
                    if row is None:
                        return None
                    if admit is None or trio.from_thread.run(admit.ask, row[2]):
                        return cast(Sequence[Any], row)  # committed as the block ends
                    refused.append(str(row[2]).split(":", 1)[0])
                    raise psycopg.Rollback()

        row = await self._db(claim)
        if row is None:
            return None
        job, tool, source, fence, attempts, was, old_fence = row
        if was == "running":  # its holder's lease ran out: taken over with fence + 1
            await self._record(
                "batch.requeued",
                {"job": job, "fence": int(old_fence), "reason": "lease expired"},
                f"batch-{job}-{old_fence}",
            )
        session = f"batch-{job}-{fence}"
        await self._record(
            "batch.leased", {"job": job, "fence": int(fence), "owner": self.owner}, session
        )
        return Lease(
            job=job,
            tool=tool,
            source=source,
            fence=int(fence),
            attempt=int(attempts),
            session=session,
        )

    async def renew(self, leases: list[Lease]) -> None:
        """The heartbeat: leases still held (same fence, same owner) are extended; a
        lease taken by another daemon is not given back by it."""
        if not leases:
            return

        def extend(conn: psycopg.Connection[Any]) -> None:
            conn.execute(
                "UPDATE tsuku.batch_items SET lease_until = now() + make_interval(secs => %s)"
                " WHERE owner = %s AND state = 'running' AND (job, fence) IN"
                " (SELECT * FROM unnest(%s::text[], %s::bigint[]))",
                (
                    self._lease_seconds,
                    self.owner,
                    [lease.job for lease in leases],
                    [lease.fence for lease in leases],
                ),
            )

        await self._db(extend)

    async def reap(self) -> int:
        """Nothing to do: an expired lease is taken over by the next claim."""
        return 0

    async def requeue_orphans(self, *, own: bool = False) -> int:
        """Jobs this daemon's previous instance (same origin) left running go back to
        the queue at once rather than after their lease; with ``own``, this instance's
        too (a run's start: no other run of this daemon is active)."""
        origin = self.store.origin

        def requeue(conn: psycopg.Connection[Any]) -> list[tuple[str, int, str]]:
            with conn.transaction():
                rows = conn.execute(
                    "UPDATE tsuku.batch_items SET state = 'queued', owner = NULL,"
                    " lease_until = NULL WHERE state = 'running' AND starts_with(owner, %s)"
                    " AND (owner <> %s OR %s) RETURNING job, fence, owner",
                    (origin + "/", self.owner, own),
                ).fetchall()
                if rows:
                    conn.execute(_NOTIFY)
            return [(str(j), int(f), str(o)) for j, f, o in rows]

        rows = await self._db(requeue)
        for job, fence, owner in rows:
            reason = "run stopped" if owner == self.owner else "owner gone"
            await self._record(
                "batch.requeued",
                {"job": job, "fence": fence, "reason": reason},
                f"batch-{job}-{fence}",
            )
        return len(rows)

    async def _commit(
        self,
        lease: Lease,
        type_: str,
        state: str,
        payload: dict[str, Any],
        write: Callable[[psycopg.Connection[Any]], None] | None = None,
    ) -> bool:
        """Move the job to ``state`` if ``lease`` is still its (fence and owner), with
        ``write`` in the same transaction; else roll back, count the refusal and
        record it. A commit already made under this lease (its answer was lost) is
        recognised, not counted."""
        held = {"job": lease.job, "fence": lease.fence, "owner": self.owner}

        def commit(conn: psycopg.Connection[Any]) -> int | None:
            with conn.transaction():
                cur = conn.execute(
                    _SETTLE,
                    {
                        **held,
                        "state": state,
                        "category": payload.get("category", payload.get("reason")),
                        "message": payload.get("message"),
                        "backoff": payload.get("backoff_s"),
                    },
                )
                if cur.rowcount != 1:
                    raise psycopg.Rollback()  # the lease is no longer this worker's
                if write is not None:
                    write(conn)
                conn.execute(_NOTIFY)  # idle workers elsewhere: maybe nothing is left
                return None
            row = conn.execute(
                "SELECT state, fence, owner FROM tsuku.batch_items WHERE job = %s", (lease.job,)
            ).fetchone()
            if row is not None and (row[0], row[1], row[2]) == (state, lease.fence, self.owner):
                return None  # this very commit, made before its answer was lost
            conn.execute(
                "UPDATE tsuku.batch_items SET refused = refused + 1 WHERE job = %s", (lease.job,)
            )
            return -1 if row is None else int(row[1])

        current = await self._retrying(commit)
        event = {k: v for k, v in payload.items() if k != "backoff_s"}
        if current is not None:
            await self._record(
                "batch.stale_commit",
                {"job": lease.job, "fence": lease.fence, "current": current, "outcome": type_},
                lease.session,
            )
            return False
        await self._record(type_, {"job": lease.job, "fence": lease.fence, **event}, lease.session)
        return True

    async def _retrying(self, fn: Callable[[psycopg.Connection[Any]], T]) -> T:
        """An outcome must reach the database: while it is out of reach, try again
        (the run goes on once it is back; a lease that ran out meanwhile is refused)."""
        while True:
            try:
                return await self._db(fn)
            except LedgerUnavailable as e:
                log.get().warning("batch.commit_waiting", error=e.message)
                await trio.sleep(RETRY_S)

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

        sha = recipe_sha256(recipe)

        def keep(conn: psycopg.Connection[Any]) -> None:
            conn.execute(
                "INSERT INTO tsuku.batch_recipes (tool, version, recipe, sha256, tag,"
                " generated_by, validated, item, fence, origin)"
                " SELECT %s, %s, %s, %s, %s, %s, %s, id, %s, %s FROM tsuku.batch_items"
                " WHERE job = %s ON CONFLICT (tool, version) DO NOTHING",
                (
                    lease.tool,
                    version or "",
                    recipe,
                    sha,
                    tag,
                    generated_by,
                    validated,
                    lease.fence,
                    self.store.origin,
                    lease.job,
                ),
            )

        payload = {
            "version": version,
            "sha256": sha,
            "recipe": recipe,
            "tag": tag,
            "generated_by": generated_by,
            "validated": validated,
        }
        return await self._commit(lease, "batch.done", "done", payload, keep)

    async def fail(self, lease: Lease, *, category: str, message: str, transient: bool) -> bool:
        backoff = None
        if transient and lease.attempt < q.MAX_ATTEMPTS:
            backoff = q.backoff(lease.attempt)
        payload = {
            "category": category,
            "message": message,
            "attempt": lease.attempt,
            "retry_at": None if backoff is None else iso(self.clock.now() + backoff),
            "backoff_s": backoff,
        }
        return await self._commit(lease, "batch.failed", "failed", payload)

    async def defer(self, lease: Lease, *, reason: str, message: str | None = None) -> bool:
        payload = {"reason": reason, "message": message}
        return await self._commit(lease, "batch.deferred", "deferred", payload)

    async def give_back(self, lease: Lease, reason: str) -> bool:
        held = {"job": lease.job, "fence": lease.fence, "owner": self.owner}

        def release(conn: psycopg.Connection[Any]) -> bool:
            with conn.transaction():
                cur = conn.execute(
                    _RELEASE,
                    held,
                )
                if cur.rowcount == 1:
                    conn.execute(_NOTIFY)
            return cur.rowcount == 1

        if not await self._retrying(release):
            return False
        await self._record(
            "batch.requeued",
            {"job": lease.job, "fence": lease.fence, "reason": reason},
            lease.session,
        )
        return True

    # ---- waiting for work -----------------------------------------------------------

    async def wait_for_work(self, since: float) -> bool:
        """Wait while jobs run anywhere (a lease may run out, a job may be given back
        or end); False when nothing runs, so nothing can become leasable during this
        run: jobs in backoff wait for a later run (as on SQLite), and so do queued
        jobs this run's breakers hold back. Queued jobs with nothing running may be
        another daemon's claim in flight (its row is skipped while locked): looked at
        once more, a moment later."""
        if self._woken_at > since:
            return True
        queued, running, expires_in = await self._db(self._look)
        if queued and not running:
            await trio.sleep(CONTENDED_S)
            if self._woken_at > since:
                return True
            queued, running, expires_in = await self._db(self._look)
        if not running:
            return False
        delay = self._lease_seconds * BACKSTOP_SHARE
        if expires_in is not None:
            delay = min(delay, max(expires_in, 0.0) + CONTENDED_S)
        with trio.move_on_after(delay):
            await self._wake.wait()
        return True

    @staticmethod
    def _look(conn: psycopg.Connection[Any]) -> tuple[int, int, float | None]:
        """Jobs queued, jobs running, and seconds until the first lease runs out."""
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE state = 'queued'),"
            " count(*) FILTER (WHERE state = 'running'),"
            " extract(epoch FROM min(lease_until) - now())"
            " FROM tsuku.batch_items WHERE state IN ('queued', 'running')"
        ).fetchone()
        assert row is not None
        return int(row[0]), int(row[1]), None if row[2] is None else float(row[2])

    def _woken(self) -> None:
        self._woken_at = trio.current_time()
        self._wake.set()
        self._wake = trio.Event()

    async def listen(self) -> None:
        """``LISTEN tsuku_queue`` on a connection of its own; its socket is awaited with
        trio's ``wait_readable``, then the notifications are drained without blocking.
        The connection lost: a wake-up (the backstop covers the gap), then again."""
        while True:
            try:
                conn = await trio.to_thread.run_sync(self._listening)
            except LedgerUnavailable:
                await trio.sleep(RETRY_S)
                continue
            try:
                while True:
                    await trio.lowlevel.wait_readable(conn.fileno())
                    pg = conn.pgconn
                    pg.consume_input()
                    heard = False
                    while pg.notifies() is not None:
                        heard = True
                    if heard:
                        self._woken()
            except (psycopg.Error, OSError) as e:
                log.get().warning("batch.listen_lost", error=str(e))
                self._woken()
                await trio.sleep(RETRY_S)
            finally:
                conn.close()

    def _listening(self) -> psycopg.Connection[Any]:
        conn = _connect(self.store.url)
        try:
            conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error as e:
            conn.close()
            raise unreachable(e) from None
        return conn

    def close(self) -> None:
        self._pool.close()
