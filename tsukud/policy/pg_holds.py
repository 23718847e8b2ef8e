"""One hold of the shared day's budget settled, once (``pg_policy`` settles its own
daemon's, ``pg_leases`` a silent origin's)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg


@dataclass
class DayTotals:
    limit: int = 0  # micro-USD; 0 until a reservation made the day's row
    spent: int = 0
    open: int = 0


def settle_hold(
    conn: psycopg.Connection[Any], rid: str, actual: int, by: str | None = None
) -> tuple[str, DayTotals] | None:
    """Settle one open hold at ``actual`` (once: a settled one is left alone, so a
    repeated settlement and two daemons settling a silent origin's hold together count
    it once). Held money falls to what was spent, never rises past what was reserved
    (the CHECK holds however much a call overran); the day's spend counts all of it.
    ``by``: the origin settling another's hold (``pg_leases``)."""
    row = conn.execute(
        "UPDATE tsuku.budget_holds SET actual_micro = %s, settled_at = now(), settled_by = %s"
        " WHERE reservation = %s AND actual_micro IS NULL RETURNING day, amount_micro",
        (actual, by, rid),
    ).fetchone()
    if row is None:
        return None
    day, amount = str(row[0]), int(row[1])
    totals = conn.execute(
        "UPDATE tsuku.budget_days SET held_micro = held_micro - %(a)s + LEAST(%(x)s, %(a)s),"
        " open_micro = open_micro - %(a)s, spent_micro = spent_micro + %(x)s WHERE day = %(d)s"
        " RETURNING limit_micro, spent_micro, open_micro",
        {"a": amount, "x": actual, "d": day},
    ).fetchone()
    assert totals is not None  # the hold's day row exists (a foreign key)
    return day, DayTotals(*(int(x) for x in totals))
