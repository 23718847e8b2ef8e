"""The installer's typed results go on the wire as the objects they replaced: every
field present (``null`` included), the same keys (schema/rpc.md, ``tools.remove`` and
``tools.verify``), through the one frame encoder the RPC server uses."""

from __future__ import annotations

import json

from tsukud.install.results import Removed, Verified
from tsukud.rpc.protocol import HEADER, encode_frame


def _wire(obj: object) -> dict[str, object]:
    frame = encode_frame({"id": 1, "result": obj})
    body = json.loads(frame[HEADER.size :])
    result: dict[str, object] = body["result"]
    return result


def test_removed_is_the_object_tools_remove_always_sent() -> None:
    removed = Removed(
        tool="kind",
        version=None,
        removed_links=["/h/bin/kind"],
        install_dir="/h/tools/kind-0.1",
        session="remove-1",
        unneeded_dependencies=[],
    )
    assert _wire(removed) == {
        "tool": "kind",
        "version": None,
        "removed_links": ["/h/bin/kind"],
        "install_dir": "/h/tools/kind-0.1",
        "session": "remove-1",
        "unneeded_dependencies": [],
    }


def test_verified_is_the_object_tools_verify_always_sent() -> None:
    verified = Verified(
        tool="kind", version="0.1", ok=True, binaries=["kind"], output=None, session="verify-1"
    )
    assert _wire(verified) == {
        "tool": "kind",
        "version": "0.1",
        "ok": True,
        "binaries": ["kind"],
        "output": None,
        "session": "verify-1",
    }


def test_a_batch_run_s_summary_is_the_object_batch_run_always_sent() -> None:
    from tsukud.flows.batch_run import RunSummary

    summary = RunSummary(
        run="r1",
        reason="finished",
        workers=2,
        done=3,
        failed=1,
        deferred=0,
        requeued=0,
        stale_commits=0,
        waiting_on_breakers={},
        remaining=0,
        backoff=0,
        counts={"queued": 0, "done": 3},
        spent_usd=0.0,
        duration_ms=12,
        rate_per_min=1.5,
    )
    wire = _wire(summary)
    assert list(wire) == [
        "run",
        "reason",
        "workers",
        "done",
        "failed",
        "deferred",
        "requeued",
        "stale_commits",
        "waiting_on_breakers",
        "remaining",
        "backoff",
        "counts",
        "spent_usd",
        "duration_ms",
        "rate_per_min",
    ]
    stopped = summary.stopped_event()
    assert stopped == {k: wire[k] for k in stopped}
    assert list(stopped) == [
        "run",
        "reason",
        "done",
        "failed",
        "deferred",
        "remaining",
        "spent_usd",
        "duration_ms",
    ]
