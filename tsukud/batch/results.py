"""What the batch queue's requests answer (``batch.add``, ``retry``, ``clear``,
``export``), as typed values both queues (SQLite, PostgreSQL) return alike.

The RPC layer sends them as they are: the frame encoder writes each Struct as the JSON
object it stands for, every field in order (schema/rpc.md, "Batch").
"""

from __future__ import annotations

import msgspec

from tsukud.batch.sources import BadLine


class QueuedSource(msgspec.Struct, frozen=True):
    tool: str
    source: str


class Added(msgspec.Struct, frozen=True, kw_only=True):
    """``batch.add``: how many jobs are new; the sources already queued, the lines that
    repeat an earlier one and the lines that could not be read, by number."""

    added: int
    already_queued: list[QueuedSource]
    duplicate_lines: list[int]
    bad: list[BadLine]
    queued: int  # jobs waiting in the queue now


class Retried(msgspec.Struct, frozen=True, kw_only=True):
    retried: int
    states: list[str]  # failed, deferred or both


class Cleared(msgspec.Struct, frozen=True):
    cleared: int  # jobs dropped


class Exported(msgspec.Struct, frozen=True, kw_only=True):
    """``batch.export``: the recipes written (files that already held the same bytes
    are left alone and counted as unchanged)."""

    directory: str
    written: list[str]
    unchanged: int
    recipes: int
    unvalidated_skipped: int  # recipes made with --skip-validation, left out


class FailureExample(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    source: str
    message: str


class FailureGroup(msgspec.Struct, frozen=True, kw_only=True):
    """Failed jobs of one category: how many, how many of them wait in a backoff, and
    the first few (by queue order) as examples."""

    category: str
    count: int
    backoff: int
    examples: list[FailureExample]


class Deferral(msgspec.Struct, frozen=True, kw_only=True):
    reason: str  # budget, breaker, ...
    count: int


class RunningJob(msgspec.Struct, frozen=True, kw_only=True):
    job: str
    tool: str
    source: str
    fence: int  # the lease's fence: a commit under an older one is refused
    attempt: int


class BatchStatus(msgspec.Struct, frozen=True, kw_only=True):
    """``batch.status``: counts by state (``backoff`` counted apart from ``failed``),
    failures by category, deferrals by reason, the running jobs, what finished runs
    spent and how many stale commits were refused."""

    counts: dict[str, int]
    total: int
    remaining: int
    failures: list[FailureGroup]
    deferred: list[Deferral]
    running: list[RunningJob]
    active_run: str | None
    spent_usd: float
    stale_commits: int
