"""RPC methods for batch generation: ``batch.add``, ``batch.run``, ``batch.status``,
``batch.retry``, ``batch.export``, ``batch.clear`` (schema/rpc.md, docs/batch.md).

The queue's work is a ``tsukud.batch.backend.BatchBackend`` (SQLite or PostgreSQL); the
run loop, which spans create and validation, is ``tsukud.flows.batch_run``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from tsukud.flows.batch_run import RunOptions, RunSummary
from tsukud.rpc.registry import NoParams, method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.batch.results import Added, BatchStatus, Cleared, Exported, Retried


class AddParams(msgspec.Struct, forbid_unknown_fields=True):
    text: str  # TOOL SOURCE lines or JSON lines (a long file comes in parts)
    first_line: int = 1  # the number of the text's first line in the file


class RetryParams(msgspec.Struct, forbid_unknown_fields=True):
    failed: bool = False
    deferred: bool = False


class ExportParams(msgspec.Struct, forbid_unknown_fields=True):
    directory: str  # absolute
    unvalidated: bool = False  # also recipes made with --skip-validation


class StatusParams(msgspec.Struct, forbid_unknown_fields=True):
    examples: int = 3


@method("batch.add", AddParams)
async def batch_add(s: Services, p: AddParams, call: Call) -> Added:
    """Queue sources (each tool and source once); bad lines come back with their numbers."""
    from tsukud.errors import UsageError

    if not 1 <= p.first_line <= 1 << 40:
        raise UsageError(f"first_line must be 1 or more (got {p.first_line})")
    return await s.batch.add(p.text, p.first_line)


@method("batch.run", RunOptions)
async def batch_run(s: Services, p: RunOptions, call: Call) -> RunSummary:
    """Drain the queue through create; progress frames after each job."""
    import math

    from tsukud.errors import UsageError

    if p.deterministic_only and p.llm:
        raise UsageError("--deterministic-only and --llm exclude each other")
    if p.jobs is not None and not 1 <= p.jobs <= 256:
        raise UsageError(f"--jobs must be between 1 and 256 (got {p.jobs})")
    if p.max_usd is not None and not (math.isfinite(p.max_usd) and p.max_usd >= 0):
        raise UsageError(f"--max-usd must be a finite amount ≥ 0 (got {p.max_usd})")
    return await s.batch_run.run(p, progress=call.progress)


@method("batch.status", StatusParams)
async def batch_status(s: Services, p: StatusParams, call: Call) -> BatchStatus:
    """Counts by state, failures grouped by category, running jobs, spend."""
    return await s.batch.status(max(0, min(p.examples, 50)))


@method("batch.retry", RetryParams)
async def batch_retry(s: Services, p: RetryParams, call: Call) -> Retried:
    """Queue failed and/or deferred jobs again (both when neither is named)."""
    return await s.batch.retry(failed=p.failed, deferred=p.deferred)


@method("batch.export", ExportParams)
async def batch_export(s: Services, p: ExportParams, call: Call) -> Exported:
    """Write each tool's latest done recipe once, in the registry layout."""
    return await s.batch.export(p.directory, unvalidated=p.unvalidated)


@method("batch.clear", NoParams)
async def batch_clear(s: Services, p: NoParams, call: Call) -> Cleared:
    """Drop the queue (refused while a run is active)."""
    return await s.batch.clear()
