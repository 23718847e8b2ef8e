"""A real daemon's typed answers (issue 27, item 4) read as they always did: the keys
schema/rpc.md names, and none that only some answers carry (a shared ledger's
``origins``, a shared circuit's ``probe_owner``). ``llm.status`` is read by
tests/integration/llm/test_llm_daemon.py (its first call loads the SDK's model list:
seconds, not spent here)."""

from __future__ import annotations

from tests.conftest import Tsuku


def test_status_batch_status_and_reindex_keep_their_keys(daemon: Tsuku) -> None:
    status = daemon.call("status")
    assert list(status) == [
        "version",
        "pid",
        "uptime_s",
        "started_at",
        "socket",
        "activation",
        "home",
        "database",
        "budget",
        "generations",
        "breakers",
        "events",
        "sandbox",
        "connections",
        "settings",
        "problems",
    ]
    # One daemon's own ledger: no origins key at all.
    assert list(status["events"]) == [
        "count",
        "durable",
        "disk_full",
        "ledger",
        "unreachable",
        "origin",
    ]
    assert list(status["budget"]) == [
        "day",
        "spent_usd",
        "reserved_usd",
        "daily_budget_usd",
        "confirm_threshold_usd",
    ]
    assert list(status["generations"]) == ["count", "limit"]
    assert list(status["sandbox"]) == ["slots", "busy"]
    assert {tuple(s) for s in status["settings"]} == {("key", "value", "set", "secret", "source")}

    batch = daemon.call("batch.status")
    assert batch["failures"] == [] and batch["running"] == [] and batch["total"] == 0
    assert list(batch) == [
        "counts",
        "total",
        "remaining",
        "failures",
        "deferred",
        "running",
        "active_run",
        "spent_usd",
        "stale_commits",
    ]

    built = daemon.call("hooks.reindex")
    assert built["manifest"] == "not asked" and built["ignored_claims"] == []
