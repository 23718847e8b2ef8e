"""Issue 24's money acceptance: ``batch run --llm --max-usd 1.00`` over twenty sources
with the greedy fake Claude (real SDK; it reads three 49 KB files on every turn), four
workers, a daily budget well above the cap. The fake's bill stays within $1.00 and equals
the ledger's charges (every billed call an ``llm.turn``); jobs the cap cannot hold are
deferred (``budget``), none failed for money, none left running, nothing left reserved."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from decimal import Decimal

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.batch.conftest import ctl_json
from tests.integration.create.greedy import Greedy, greedy_world, ledger
from tests.integration.create.test_create_kill import tsuku_for, wait_settled

CAP = Decimal("1.00")
JOBS = 20


@pytest.fixture
def world() -> Iterator[FakeGitHub]:
    yield from greedy_world()


@pytest.mark.slow  # twenty greedy model runs through the real SDK
def test_a_greedy_batch_never_passes_max_usd_and_the_ledger_equals_the_bill(
    world: FakeGitHub,
) -> None:
    greedy = Greedy()
    with FakeAnthropic(fallback=greedy) as claude:
        t = tsuku_for(world, claude)  # daily budget $5: the cap is what binds
        try:
            t.start()
            queue = "".join(f"stern{i} github:stern/stern\n" for i in range(JOBS))
            ctl_json(t, "batch", "add", "-", input=queue)
            res = ctl_json(
                t,
                "batch",
                "run",
                "--llm",
                "--yes",
                "--skip-validation",
                "--max-usd",
                str(CAP),
                "--jobs",
                "4",
                timeout=600,
            )
            billed = sum(greedy.billed, Decimal(0))
            assert 0 < billed <= CAP, (billed, res)
            # The cap bound: the greedy model asks for more on every turn, so the runs
            # that started end deferred when their next extension would pass the cap,
            # and the rest could not start; none failed for money.
            assert res["deferred"] > 0 and res["failed"] == 0, res
            counts = ctl_json(t, "batch", "status")["counts"]
            assert counts["running"] == counts["queued"] == 0, counts
            assert counts["done"] + counts["deferred"] + counts["failed"] == JOBS, counts
            events = ledger(t)
            deferred = [e["payload"] for e in events if e["type"] == "batch.deferred"]
            assert deferred and all(p["reason"] == "budget" for p in deferred), deferred
            charged = sum(
                (
                    Decimal(str(e["payload"]["cost_usd"]))
                    for e in events
                    if e["type"] in ("llm.turn", "llm.cut_off")
                ),
                Decimal(0),
            )
            turns = [e for e in events if e["type"] == "llm.turn"]
            assert len(turns) == len(greedy.billed)  # every billed call is on the ledger
            assert round(charged, 4) == round(billed, 4), (charged, billed)
            assert Decimal(str(res["spent_usd"])).quantize(Decimal("0.0001")) == round(billed, 4)
            assert wait_settled(t)["reserved_usd"] == 0
            assert t.ctl("events", "verify").returncode == 0
        finally:
            t.stop_all()
            shutil.rmtree(t.home, ignore_errors=True)
