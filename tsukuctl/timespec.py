"""``--since 7d`` / ``--until 2026-11-01``: relative spans and ISO dates to ledger time."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

_REL = re.compile(r"^(\d+(?:\.\d+)?)\s*(s|m|h|d|w)$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class BadTime(ValueError):
    pass


def to_ledger_time(spec: str, now: float | None = None) -> str:
    """'7d' → seven days ago; '2026-11-01' → that day 00:00 UTC; ISO datetimes as given
    (naive ones are UTC). Returns the ledger's fixed-width UTC form."""
    spec = spec.strip()
    now = time.time() if now is None else now
    m = _REL.match(spec)
    if m:
        ts = now - float(m.group(1)) * _UNIT[m.group(2)]
        return _fmt(datetime.fromtimestamp(ts, UTC))
    try:
        dt = datetime.fromisoformat(spec.replace("Z", "+00:00"))
    except ValueError:
        raise BadTime(
            f"cannot read {spec!r} as a time: use e.g. 30m, 12h, 7d, 2w, 2026-11-01 "
            "or 2026-11-01T08:00:00Z"
        ) from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return _fmt(dt.astimezone(UTC))


def _fmt(dt: datetime) -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
