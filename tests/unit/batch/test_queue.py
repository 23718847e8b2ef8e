"""The batch queue: a fold of ``batch.*`` events (the same after a restart as live),
leases with fences (N workers never share a job; a stale worker cannot commit), backoff,
requeue of a dead owner's jobs, export byte-stability. Real ledger (EventStore on a
temporary file), a clock moved by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from tsukud.batch import queue as q
from tsukud.batch.errors import BatchRunning
from tsukud.batch.results import Cleared, Deferral, FailureExample, QueuedSource, Retried
from tsukud.batch.service import BatchService, Lease
from tsukud.clock import FixedClock
from tsukud.errors import UsageError
from tsukud.events.store import EventStore

NOW = 1_800_000_000.0
RECIPE = '[metadata]\nname = "{tool}"\n'


class Ledger:
    def __init__(self, path: Path, clock: FixedClock) -> None:
        self.path, self.clock = path, clock
        self.store = EventStore(path, clock=clock)

    def reload(self) -> q.Queue:
        """The queue as a fresh daemon would fold it from the ledger."""
        return self.store.read_sync(q.load)


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    led = Ledger(tmp_path / "t.db", FixedClock(NOW))
    led.store.open()
    async with trio.open_nursery() as nursery:
        await nursery.start(led.store.run)
        yield led
        await led.store.caught_up()
        led.store.close()
    led.store.close_connection()


def service(ledger: Ledger, owner: str = "d-one") -> BatchService:
    queue = ledger.reload()
    ledger.store.subscribe(queue.apply)
    return BatchService(store=ledger.store, queue=queue, clock=ledger.clock, owner=owner)


def lines(*tools: str) -> str:
    return "".join(f"{t} npm:{t}\n" for t in tools)


async def done(svc: BatchService, lease: Lease) -> bool:
    return await svc.done(
        lease,
        recipe=RECIPE.format(tool=lease.tool),
        version="1.0.0",
        tag="1.0.0",
        generated_by="npm builder",
        validated=True,
    )


def same(a: q.Queue, b: q.Queue) -> None:
    """Two folds agree on every job (the live one and one rebuilt from the ledger)."""
    assert a.jobs.keys() == b.jobs.keys()
    for jid, job in a.jobs.items():
        other = b.jobs[jid]
        for attr in ("state", "attempts", "fence", "owner", "not_before", "category", "done"):
            if attr == "done":
                assert (job.done is None) == (other.done is None)
                if job.done and other.done:
                    assert job.done.recipe == other.done.recipe
            else:
                assert getattr(job, attr) == getattr(other, attr), (jid, attr)
    assert a.stale_commits == b.stale_commits


async def test_add_keeps_each_source_once_and_leases_by_priority(ledger: Ledger) -> None:
    svc = service(ledger)
    res = await svc.add(lines("a", "b") + '{"tool": "c", "source": "npm:c", "priority": 5}\n')
    assert res.added == 3 and res.bad == []
    res = await svc.add(lines("b", "d"))
    assert res.added == 1 and res.already_queued == [QueuedSource("b", "npm:b")]
    order = []
    while (lease := await svc.lease()) is not None:
        order.append(lease.tool)
    assert order == ["c", "a", "b", "d"]  # priority first, then first added
    assert await svc.lease() is None and svc.queue.counts()["running"] == 4


async def test_concurrent_workers_never_lease_the_same_job(ledger: Ledger) -> None:
    svc = service(ledger)
    await svc.add(lines(*(f"t{i}" for i in range(40))))
    taken: list[str] = []

    async def worker() -> None:
        while (lease := await svc.lease()) is not None:
            taken.append(lease.job)
            await trio.lowlevel.checkpoint()  # every worker interleaves with the others
            assert await done(svc, lease)

    async with trio.open_nursery() as n:
        for _ in range(8):
            n.start_soon(worker)
    assert len(taken) == 40 == len(set(taken))
    await ledger.store.caught_up()
    same(svc.queue, ledger.reload())
    assert svc.queue.counts()["done"] == 40


async def test_a_stale_fence_is_refused_and_counted(ledger: Ledger) -> None:
    svc = service(ledger)
    await svc.add(lines("slow"))
    first = await svc.lease()
    assert first is not None and first.fence == 1
    # The worker's daemon sleeps past its lease (SIGSTOP): the reaper returns it.
    ledger.clock.advance(q.LEASE_SECONDS + 1)
    assert await svc.reap() == 1
    second = await svc.lease()
    assert second is not None and second.fence == 2 and second.job == first.job
    # The first worker wakes and tries to record its outcome: refused, counted.
    assert not await done(svc, first)
    assert not await svc.fail(first, category="x", message="late", transient=False)
    assert svc.queue.stale_commits == 2
    assert svc.queue.jobs[first.job].state == "running"  # still the second worker's
    # Renewal does not give the old worker its lease back.
    await svc.renew([first])
    assert await done(svc, second)
    job = svc.queue.jobs[first.job]
    assert (job.state, job.fence, job.attempts) == ("done", 2, 2)
    await ledger.store.caught_up()
    rebuilt = ledger.reload()
    same(svc.queue, rebuilt)
    assert rebuilt.stale_commits == 2


async def test_a_renewed_lease_is_not_reaped(ledger: Ledger) -> None:
    svc = service(ledger)
    await svc.add(lines("busy"))
    lease = await svc.lease()
    assert lease is not None
    for _ in range(5):
        ledger.clock.advance(q.LEASE_SECONDS / 2)
        assert await svc.reap() == 0
        await svc.renew([lease])
    assert await done(svc, lease)


async def test_jobs_of_a_dead_owner_return_to_the_queue(ledger: Ledger) -> None:
    old = service(ledger, owner="d-dead")
    await old.add(lines("a", "b"))
    a, b = await old.lease(), await old.lease()
    assert a is not None and b is not None and await done(old, a)
    await ledger.store.caught_up()
    # A new daemon instance folds the ledger: b is running under the dead owner.
    new = service(ledger, owner="d-new")
    assert new.queue.jobs[b.job].state == "running"
    assert await new.requeue_orphans() == 1
    again = await new.lease()
    assert again is not None and again.job == b.job and again.fence == b.fence + 1
    assert not await done(old, b)  # the dead owner's fence is refused
    assert await done(new, again)
    assert new.queue.counts()["done"] == 2


async def test_a_transient_failure_backs_off_and_a_final_one_waits_for_retry(
    ledger: Ledger,
) -> None:
    svc = service(ledger)
    await svc.add(lines("flaky", "broken"))
    flaky, broken = await svc.lease(), await svc.lease()
    assert flaky is not None and broken is not None
    assert await svc.fail(flaky, category="network", message="503", transient=True)
    assert await svc.fail(broken, category="not_found", message="no repo", transient=False)
    counts = svc.queue.counts()
    assert (counts["failed"], counts["backoff"], svc.queue.remaining()) == (1, 1, 1)
    assert await svc.lease() is None  # in backoff: not leasable now
    ledger.clock.advance(q.backoff(1) + 1)
    again = await svc.lease()
    assert again is not None and again.job == flaky.job and again.attempt == 2
    assert await svc.lease() is None  # the final failure is not retried by itself
    # Attempts run out: the last transient failure is final.
    lease = again
    for _ in range(q.MAX_ATTEMPTS - 2):
        assert await svc.fail(lease, category="network", message="503", transient=True)
        ledger.clock.advance(q.BACKOFF_CAP + 1)
        nxt = await svc.lease()
        assert nxt is not None
        lease = nxt
    assert lease.attempt == q.MAX_ATTEMPTS
    assert await svc.fail(lease, category="network", message="503", transient=True)
    assert svc.queue.counts()["backoff"] == 0 and svc.queue.counts()["failed"] == 2
    res = await svc.retry(failed=True, deferred=False)
    assert res == Retried(retried=2, states=["failed"])
    assert svc.queue.counts()["queued"] == 2
    await ledger.store.caught_up()
    same(svc.queue, ledger.reload())


async def test_deferred_jobs_and_retry_of_both(ledger: Ledger) -> None:
    svc = service(ledger)
    await svc.add(lines("pricey", "bad"))
    pricey, bad = await svc.lease(), await svc.lease()
    assert pricey is not None and bad is not None
    assert await svc.defer(pricey, reason="budget", message="cap")
    assert await svc.fail(bad, category="x", message="y", transient=False)
    assert (await svc.status()).deferred == [Deferral(reason="budget", count=1)]
    assert (await svc.retry(failed=False, deferred=False)).retried == 2


async def test_status_groups_failures_by_category(ledger: Ledger) -> None:
    svc = service(ledger)
    await svc.add(lines(*(f"t{i}" for i in range(6))))
    for i in range(6):
        lease = await svc.lease()
        assert lease is not None
        category = "no_binary_assets" if i < 4 else "github_not_found"
        assert await svc.fail(lease, category=category, message=f"m{i}", transient=False)
    groups = (await svc.status(examples=2)).failures
    assert [(g.category, g.count, len(g.examples)) for g in groups] == [
        ("no_binary_assets", 4, 2),
        ("github_not_found", 2, 2),
    ]
    assert groups[0].examples[0] == FailureExample(tool="t0", source="npm:t0", message="m0")


async def test_clear_is_refused_during_a_run_and_the_fold_starts_after_it(
    ledger: Ledger,
) -> None:
    svc = service(ledger)
    await svc.add(lines("a", "b"))
    run = svc.begin_run()
    with pytest.raises(BatchRunning):
        await svc.clear()
    with pytest.raises(BatchRunning):
        svc.begin_run()
    svc.end_run(run)
    assert (await svc.clear()) == Cleared(2)
    await svc.add(lines("c"))
    await ledger.store.caught_up()
    rebuilt = ledger.reload()
    assert [j.tool for j in rebuilt.jobs.values()] == ["c"]
    same(svc.queue, rebuilt)


async def test_export_writes_each_tool_once_and_is_byte_stable(
    ledger: Ledger, tmp_path: Path
) -> None:
    svc = service(ledger)
    await svc.add("stern github:stern/stern\nstern npm:stern\nrg crates:ripgrep\nx npm:x\n")
    leases = [await svc.lease() for _ in range(4)]
    assert all(leases)
    gh, npm_stern, rg, x = (lease for lease in leases if lease is not None)
    assert await done(svc, gh)
    assert await svc.done(
        npm_stern,
        recipe='[metadata]\nname = "stern"\n# newer\n',
        version="2.0.0",
        tag=None,
        generated_by="npm builder",
        validated=True,
    )
    assert await done(svc, rg)
    assert await svc.done(
        x, recipe="unvalidated", version="1", tag=None, generated_by="npm", validated=False
    )
    out = tmp_path / "out"
    first = await svc.export(str(out))
    assert sorted(first.written) == ["recipes/r/rg.toml", "recipes/s/stern.toml"]
    assert first.unvalidated_skipped == 1
    stern = out / "recipes" / "s" / "stern.toml"
    assert stern.read_text().endswith("# newer\n")  # the tool's latest done recipe
    stamp = stern.stat().st_mtime_ns
    again = await svc.export(str(out))
    assert again.written == [] and again.unchanged == 2
    assert stern.stat().st_mtime_ns == stamp  # unchanged files are not rewritten
    # Byte-stable: a daemon rebuilt from the ledger exports the same bytes.
    await ledger.store.caught_up()
    assert q.export_files(ledger.reload()) == q.export_files(svc.queue)
    with_unvalidated = await svc.export(str(out), unvalidated=True)
    assert with_unvalidated.written == ["recipes/x/x.toml"]
    with pytest.raises(UsageError):
        await svc.export("relative/dir")


async def test_a_run_start_returns_jobs_this_instance_left_without_a_worker(
    ledger: Ledger,
) -> None:
    """A worker that died of a bug left its job running under this instance: the next
    run's start (no other run can be active) gives it back; the daemon's start-up
    sweep, which may meet a run already started, returns only other owners' jobs."""
    svc = service(ledger)
    await svc.add(lines("a"))
    lost = await svc.lease()
    assert lost is not None
    assert await svc.requeue_orphans() == 0  # the start-up sweep: not another owner's
    assert await svc.requeue_orphans(own=True) == 1
    again = await svc.lease()
    assert again is not None and again.fence == lost.fence + 1
    assert not await done(svc, lost) and await done(svc, again)
