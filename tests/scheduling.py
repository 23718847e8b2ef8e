"""The order the suite's tests are handed to pytest-xdist's workers: the long ones
first, dealt one to each worker in turn.

``--dist worksteal`` splits the collection into one contiguous share per worker (the
first share to the first worker, ...) and, when a worker runs dry, moves half of the
longest remaining queue's *tail* to it. So a test placed near the end may start last
and leave one worker running alone while the others idle (the tail), and tests placed
together at the front all land in the first worker's share and run one after the
other there. Dealt round-robin to the heads of the shares, each worker starts with
its part of the long tests and the many short ones fill the gaps at the end.

"Long" is the ``slow`` set (CI mode runs it) and :data:`LONG`: tests that take many
seconds each, most of it waiting (real leases, a database's restart, package
managers, several daemons) — measured with ``--durations``; keep it to tests over
~4 s. A test missing from it is only scheduled less well.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

#: Node-id prefixes of long tests that are not marked ``slow`` (a module path takes
#: all of its tests).
LONG: tuple[str, ...] = (
    "tests/integration/ledger_pg/",
    "tests/integration/batch_pg/",
    "tests/integration/create/test_create_money.py",
    "tests/integration/create/test_create_kill.py",
    "tests/integration/llm/test_llm_daemon.py::test_twenty_concurrent_runs_never_overspend",
    "tests/integration/batch/test_batch_300.py",
    "tests/integration/test_startup_race.py",
    "tests/integration/install/test_untrusted_code.py",
    "tests/integration/install/test_install_crash.py",
    "tests/integration/install/test_native_ecosystem_installs.py",
    "tests/integration/source_build/test_configure_make.py",
    "tests/integration/source_build/test_build_dependencies.py::test_a_build_dependency_is_",
    "tests/integration/test_caller_env.py",
    "tests/integration/test_ledger_integrity.py",
    "tests/integration/test_disk_full.py",
    "tests/integration/discover/test_instructions_e2e.py",
    "tests/integration/discover/test_page_visibility_e2e.py",
    "tests/integration/eval/",
    "tests/unit/test_collect_floor.py",
)


def rank(nodeid: str, slow: bool) -> int:
    """0 for the slow set, 1 for :data:`LONG`, 2 for the rest."""
    if slow:
        return 0
    return 1 if nodeid.startswith(LONG) else 2


def shares(total: int, workers: int) -> list[int]:
    """How many tests worksteal's first hand gives each worker (as xdist computes it)."""
    sizes = []
    for w in range(workers):
        size = total // (workers - w)
        sizes.append(size)
        total -= size
    return sizes


def deal(items: Sequence[T], workers: int, rank_of: Callable[[T], int]) -> list[T]:
    """``items`` reordered: the long ones (rank < 2, slow before long) dealt in turn to
    the heads of the ``workers`` shares, each share then filled with the rest in their
    order. Serially (one worker) that is simply the long tests first."""
    ranked = sorted(items, key=rank_of)  # stable: the collection's order within a rank
    long = [i for i in ranked if rank_of(i) < 2]
    rest = ranked[len(long) :]
    heads = [long[w::workers] for w in range(max(workers, 1))]
    out: list[T] = []
    taken = 0
    for head, size in zip(heads, shares(len(items), len(heads)), strict=True):
        out += head
        more = max(0, size - len(head))
        out += rest[taken : taken + more]
        taken += more
    out += rest[taken:]
    return out
