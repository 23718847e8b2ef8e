"""A real daemon's typed answers (issue 27, item 4) are their Structs' fields, in order,
and none that only some answers carry (a shared ledger's ``origins``): the Structs are
held to schema/rpc.md's keys by tests/unit/rpc/test_answers_wire.py. ``llm.status`` is read by
tests/integration/llm/test_llm_daemon.py (its first call loads the SDK's model list:
seconds, not spent here)."""

from __future__ import annotations

import msgspec

from tests.conftest import Tsuku
from tsukud.batch.results import BatchStatus
from tsukud.policy.budget import BudgetShown
from tsukud.policy.ratelimit import HourShown
from tsukud.rpc.control import DaemonStatus, LedgerShown, SettingShown, SlotsShown


def fields(struct: type[msgspec.Struct], *unsent: str) -> list[str]:
    return [f for f in struct.__struct_fields__ if f not in unsent]


def test_status_batch_status_and_reindex_keep_their_keys(daemon: Tsuku) -> None:
    status = daemon.call("status")
    assert list(status) == fields(DaemonStatus)
    assert list(status["events"]) == fields(LedgerShown, "origins")  # one daemon's ledger
    assert list(status["budget"]) == fields(BudgetShown)
    assert list(status["generations"]) == fields(HourShown)
    assert list(status["sandbox"]) == fields(SlotsShown)
    assert {tuple(s) for s in status["settings"]} == {tuple(fields(SettingShown))}

    batch = daemon.call("batch.status")
    assert batch["failures"] == [] and batch["running"] == [] and batch["total"] == 0
    assert list(batch) == fields(BatchStatus)

    built = daemon.call("hooks.reindex")
    assert built["manifest"] == "not asked" and built["ignored_claims"] == []
