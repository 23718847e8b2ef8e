"""``eval.create``'s params that no command line sends are refused as usage errors,
not met later as an internal error or an unbounded cap."""

from __future__ import annotations

import pytest

from tsukud.errors import UsageError
from tsukud.flows.eval_run import EvalOptions, checked_options


@pytest.mark.parametrize("cap", [float("nan"), float("inf"), -0.01])
def test_a_cap_that_is_not_an_amount_is_refused(cap: float) -> None:
    with pytest.raises(UsageError, match="max_usd"):
        checked_options(EvalOptions(max_usd=cap))


@pytest.mark.parametrize("cap", [None, 0.0, 2.5])
def test_an_amount_is_accepted(cap: float | None) -> None:
    checked_options(EvalOptions(max_usd=cap))
