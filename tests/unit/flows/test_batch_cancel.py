"""A batch job cancelled while its create is inside a nursery (a download, a
validation) is given back to the queue: trio delivers that cancellation grouped
(BaseExceptionGroup[Cancelled]), which an ``except trio.Cancelled`` does not catch, so
a Ctrl-C there left the job ``running`` (seen as a CI flake of
test_batch_kill.test_ctrl_c_stops_the_run_and_gives_the_running_jobs_back)."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tsukud.batch.service import Lease
from tsukud.flows.batch_run import BatchRunner, RunOptions, _Tally


class Store:
    async def caught_up(self) -> None:
        await trio.lowlevel.checkpoint()


class Queue:
    """The one part of the batch backend a cancelled job touches: its give-back."""

    def __init__(self) -> None:
        self.store = Store()
        self.given_back: list[tuple[str, str]] = []

    async def give_back(self, lease: Lease, reason: str) -> bool:
        self.given_back.append((lease.job, reason))
        return True


async def create_in_a_nursery(*args: Any, **kwargs: Any) -> Any:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(trio.sleep_forever)
        await trio.sleep_forever()


async def create_sleeping(*args: Any, **kwargs: Any) -> Any:
    await trio.sleep_forever()


@pytest.mark.parametrize("create", [create_in_a_nursery, create_sleeping])
async def test_a_cancelled_job_is_given_back_however_the_cancel_reaches_it(create: Any) -> None:
    queue = Queue()
    runner = BatchRunner(batch=queue, create=create)  # type: ignore[arg-type]
    lease = Lease(job="j1", tool="t", source="github:o/t", fence=1, attempt=1, session="s")
    tally = _Tally()
    with trio.move_on_after(0.05) as scope:
        await runner._run_job(lease, RunOptions(), tally)
    assert scope.cancelled_caught
    assert queue.given_back == [("j1", "run stopped")] and tally.requeued == 1


class ProbeBreakers:
    """A registry's breaker half open: the next job is its one probe."""

    def __init__(self) -> None:
        self.released: list[str] = []

    def state(self, scope: str) -> str:
        return "half_open"

    async def admit_job(self, scope: str) -> str:
        await trio.lowlevel.checkpoint()
        return "probe"

    async def release_job(self, scope: str) -> None:
        self.released.append(scope)

    def retry_at(self, scope: str) -> float | None:
        return None


class ClaimLost(Queue):
    """The shared queue's claim: admitted, then its commit fails (the database went
    away), so no lease comes of it."""

    clock = None

    async def lease(self, admit: Any) -> Lease | None:
        assert await admit.ask("npm:left-pad")
        from tsukud.errors import LedgerUnavailable

        raise LedgerUnavailable("the shared ledger stopped answering")


async def test_a_probe_admitted_for_a_claim_that_failed_is_given_back() -> None:
    breakers = ProbeBreakers()
    runner = BatchRunner(batch=ClaimLost(), create=create_sleeping, breakers=breakers)  # type: ignore[arg-type]
    tally = _Tally()
    with trio.move_on_after(0.05):
        await runner._next_lease(tally)
    assert breakers.released and set(breakers.released) == {"registry:npm"}
    assert tally.admitted_probe is None
