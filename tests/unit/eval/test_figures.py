"""The eval statistics against published values: Wilson intervals (Newcombe 1998,
table I), Fisher's exact test (Fisher's tea-tasting table; the 2x2 example of
Wikipedia's "Fisher's exact test"), and percentiles as numpy's default computes them."""

from __future__ import annotations

import math

import pytest

from tsukud.eval.figures import (
    Outcome,
    compare,
    discover_figures,
    figures,
    fisher_exact,
    percentile,
    wilson,
)


def close(a: tuple[float, float], b: tuple[float, float], tol: float = 5e-5) -> bool:
    return all(math.isclose(x, y, abs_tol=tol) for x, y in zip(a, b, strict=True))


def test_wilson_known_values() -> None:
    assert close(wilson(81, 263), (0.2553, 0.3662))  # Newcombe's example
    assert close(wilson(15, 148), (0.0624, 0.1605))
    assert close(wilson(0, 20), (0.0, 0.1611))
    assert close(wilson(10, 10), (0.7225, 1.0))
    assert wilson(0, 0) == (0.0, 1.0)


def test_fisher_known_values() -> None:
    assert math.isclose(fisher_exact(3, 1, 1, 3), 34 / 70)  # the lady tasting tea
    assert math.isclose(fisher_exact(1, 9, 11, 3), 0.002759, rel_tol=1e-3)
    assert math.isclose(fisher_exact(14, 6, 20, 0), 2 * 38760 / 3838380)
    assert fisher_exact(5, 5, 5, 5) == 1.0
    assert fisher_exact(0, 0, 0, 0) == 1.0
    # symmetric in the runs
    assert fisher_exact(2, 8, 9, 1) == fisher_exact(9, 1, 2, 8)


@pytest.mark.parametrize(
    ("values", "q", "want"),
    [([1, 2, 3, 4], 50, 2.5), ([1, 2, 3, 4], 95, 3.85), ([7], 95, 7), ([], 50, 0.0)],
)
def test_percentile_interpolates_between_ranks(values: list[float], q: float, want: float) -> None:
    assert math.isclose(percentile(values, q), want)


def outcome(ok: bool, repairs: int = 0, cost: float | None = 0.01, **kw: object) -> Outcome:
    return Outcome(tool="t", ok=ok, repairs=repairs, cost_usd=cost, **kw)  # type: ignore[arg-type]


def test_figures_of_a_run() -> None:
    runs = [
        outcome(True, duration_ms=1000, turns=1),
        outcome(True, 1, duration_ms=3000, turns=6, cost=0.05),
        outcome(False, 2, duration_ms=2000, turns=11, category="validation", cost=None),
        outcome(False, duration_ms=4000, category="wrong_asset"),
    ]
    f = figures(runs)
    assert (f.items, f.passed, f.success_rate) == (4, 2, 0.5)
    assert (f.wall_p50_s, f.turns_median, f.turns_total) == (2.5, 3.5, 18)
    assert math.isclose(f.cost_total_usd, 0.07) and f.unpriced == 1
    assert f.repairs_histogram == {"0": 2, "1": 1, "2": 1} and f.repairs_total == 3
    assert f.passed_after_repair == 1
    assert f.failures == {"validation": 1, "wrong_asset": 1}
    empty = figures([])
    assert (empty.items, empty.success_rate, empty.interval) == (0, 0.0, (0.0, 1.0))


def test_compare_says_which_test_and_whether_significant() -> None:
    a = [outcome(i < 14) for i in range(20)]
    b = [outcome(True, cost=0.02) for _ in range(20)]
    c = compare(a, b)
    assert math.isclose(c.difference, 0.3) and c.significant and c.p_value < 0.05
    assert c.test.startswith("Fisher")
    assert c.cost_per_success_usd == (pytest.approx(0.2 / 14), pytest.approx(0.02))
    same = compare(a, a)
    assert same.p_value == 1.0 and not same.significant


def test_discover_figures_count_questions_where_they_are_asked() -> None:
    """Accuracy over the items measured; the web-search stage only over the items that
    reached it; a person asked only where a question was; accepted only of those."""
    runs = [
        outcome(
            True, duration_ms=500, llm_ms=400, asked="confirm", asked_stage="llm", accepted=True
        ),
        outcome(
            False,
            duration_ms=900,
            llm_ms=800,
            asked="confirm",
            asked_stage="llm",
            accepted=False,
            category="wrong_source",
        ),
        outcome(
            False,
            duration_ms=700,
            llm_ms=600,
            asked="choice",
            asked_stage="llm",
            accepted=True,
            category="ambiguous",
        ),
        outcome(True, duration_ms=100, cost=0.0),  # the registry: nobody asked
        outcome(False, duration_ms=300, llm_ms=200, category="not_found"),
    ]
    f = discover_figures(runs)
    assert (f.items, f.right, f.accuracy) == (5, 2, 0.4)
    assert close(f.interval, wilson(2, 5))
    assert (f.latency_p50_s, f.llm_items) == (0.5, 4)
    assert math.isclose(f.llm_p95_s, percentile([0.4, 0.8, 0.6, 0.2], 95))
    assert (f.asked, f.accepted, f.asked_rate) == (3, 2, 0.6)
    assert f.asked_by == {"confirm at llm": 2, "choice at llm": 1}
    assert f.accepted_rate is not None and math.isclose(f.accepted_rate, 2 / 3)
    assert f.failures == {"wrong_source": 1, "ambiguous": 1, "not_found": 1}
    assert math.isclose(f.cost_total_usd, 0.04)
    nobody = discover_figures([outcome(True)])
    assert (nobody.asked, nobody.accepted_rate, nobody.llm_items) == (0, None, 0)
