"""``bench/batch_chaos.py`` (issue 25's acceptance run with chaos) at a small scale, so
the script cannot rot: 30 sources, three daemons on their own PostgreSQL, a kill -9, a
pause past short leases, a 3 s cut and a database crash; every invariant it prints holds."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.pg import PgServer
from tests.shared import REPO

CHECKS = (
    "bill_within_budget",
    "every_source_ended",
    "export_once",
    "events_verify",
    "ledger_equals_bill",
    "nothing_held_and_day_within_limit",
    "stale_commits_counted",
)


@pytest.mark.slow  # a PostgreSQL of its own, three daemons and the chaos (~25 s)
def test_the_chaos_acceptance_run_holds_every_invariant_at_a_small_scale(
    pg_server: PgServer,  # PostgreSQL is installed (the script starts a server of its own)
) -> None:
    cp = subprocess.run(
        [sys.executable, str(REPO / "bench" / "batch_chaos.py"), "--small"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    out = cp.stdout
    said = "\n".join(line for line in out.splitlines() if " log: " not in line)
    assert cp.returncode == 0, said[-6000:] + cp.stderr[-2000:]
    for name in CHECKS:
        assert f"batch_chaos.{name}: ok (" in out, said[-6000:]
    assert "batch_chaos: all invariants hold" in out
    assert "daemon 1 killed (kill -9)" in out and "PostgreSQL started again" in out
