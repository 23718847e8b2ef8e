"""``batch run --max-usd``: a cap on the whole command's tally. Every reservation, a run's
first or its extension, from any of the concurrent workers, must fit under it with what
the command has settled and what its runs hold; the one that would not is refused, so
the command can never spend past its cap. Real ledger, in-process."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest
import trio
import trio.lowlevel

from tests.unit.test_policy import ledger
from tsukud.clock import TrioClock
from tsukud.errors import BudgetExceeded
from tsukud.policy import spent


async def test_concurrent_reservations_never_pass_the_commands_cap(tmp_path: Path) -> None:
    granted: list[str] = []
    refused: list[BudgetExceeded] = []
    async with ledger(tmp_path / "t.db", TrioClock()) as lg:
        with spent.tally() as command:
            command.cap = Decimal("0.25")
            command.accepted = True  # --yes: the confirmation threshold is not the subject

            async def job() -> None:
                await trio.lowlevel.checkpoint()
                try:
                    g = await lg.budget.reserve(0.06, session=None, purpose="create")
                    granted.append(g.reservation)
                except BudgetExceeded as exc:
                    refused.append(exc)

            async with trio.open_nursery() as n:
                for _ in range(10):
                    n.start_soon(job)
            assert len(granted) == 4 and len(refused) == 6  # 4 x 0.06 = 0.24 ≤ 0.25
            assert "cap of $0.25" in refused[0].message and "--max-usd" in refused[0].hint
            # A settled run frees what it did not spend; what it spent still counts.
            await lg.budget.settle(granted[0], 0.05, session=None)
            await lg.budget.reserve(0.01, session=None, purpose="create")
            with pytest.raises(BudgetExceeded):
                # 0.05 settled + 3 x 0.06 held + 0.01 = 0.24; 0.02 more is past the cap
                await lg.budget.reserve(0.02, session=None, purpose="create")
            # An extension of a run counts against the cap like a first reservation.
            with pytest.raises(BudgetExceeded):
                await lg.budget.reserve(
                    0.02, session=None, purpose="create", extends=granted[1], prior_usd=0.06
                )
        # Outside the command, no cap: today's budget alone decides.
        await lg.budget.reserve(0.10, session=None, purpose="create", confirmed=True)
