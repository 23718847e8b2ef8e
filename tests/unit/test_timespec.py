from __future__ import annotations

import pytest

from tsukuctl.timespec import BadTime, to_ledger_time

NOW = 1_795_300_000.0  # 2026-11-21T...Z


def test_relative_spans() -> None:
    assert to_ledger_time("7d", NOW) == to_ledger_time("1w", NOW)
    assert to_ledger_time("90m", NOW) == to_ledger_time("1.5h", NOW)


def test_dates_are_utc_midnight() -> None:
    assert to_ledger_time("2026-11-01") == "2026-11-01T00:00:00.000000Z"
    assert to_ledger_time("2026-11-01T08:30:00+02:00") == "2026-11-01T06:30:00.000000Z"


def test_bad_spec_says_what_works() -> None:
    with pytest.raises(BadTime, match="7d"):
        to_ledger_time("last tuesday")
