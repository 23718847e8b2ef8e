"""The figures of an eval run and the difference between two runs: plain functions.

A success rate over a few dozen tools is a guess with error bars, so every rate comes
with its 95 % Wilson interval (it stays inside [0, 1] and is honest at 0 % and 100 %,
where the textbook normal interval collapses to a point). Two runs are compared with
Fisher's exact test on the 2x2 table of passed/failed: it is exact for the small counts
an eval has and valid when one run passed everything, where the two-proportion z-test's
variance estimate breaks down. Wall time and cost are reported as medians and 95th
percentiles (linear interpolation between ranks, as ``numpy.percentile`` does), since a
few slow or expensive tools would drag a mean away from the typical run.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import msgspec

Z95 = 1.959963984540054  # the normal quantile of 0.975
SIGNIFICANT = 0.05


class Outcome(msgspec.Struct, frozen=True, kw_only=True):
    """One corpus item's result, as ``eval.item`` records it."""

    tool: str
    ok: bool
    category: str | None = None  # why it failed (None when ok)
    duration_ms: int = 0
    cost_usd: float | None = 0.0  # None: a turn had no known price
    turns: int = 0
    repairs: int = 0
    # eval discover: the question a person would have been asked (``confirm``: the y/N
    # on one source, ``choice``: a numbered list), at which stage, and whether the
    # person who knows the right source would accept it; the LLM stage's machine time.
    asked: str | None = None
    asked_stage: str | None = None
    accepted: bool | None = None
    llm_ms: int | None = None


class Figures(msgspec.Struct, frozen=True, kw_only=True):
    items: int
    passed: int
    success_rate: float
    interval: tuple[float, float]  # 95 % Wilson
    wall_p50_s: float
    wall_p95_s: float
    cost_median_usd: float
    cost_p95_usd: float
    cost_total_usd: float
    unpriced: int  # items whose cost is unknown (counted as 0 above)
    turns_median: float
    turns_total: int
    repairs_total: int
    repairs_histogram: dict[str, int]  # repairs used -> items
    passed_after_repair: int  # passed with at least one repair
    failures: dict[str, int]  # category -> items


class DiscoverFigures(msgspec.Struct, frozen=True, kw_only=True):
    items: int
    right: int
    accuracy: float  # resolved to the known source, of the items measured
    interval: tuple[float, float]  # 95 % Wilson
    latency_p50_s: float
    latency_p95_s: float
    llm_items: int  # items that reached the LLM stage
    llm_p95_s: float  # that stage's machine time, P95 over those items
    cost_median_usd: float
    cost_p95_usd: float
    cost_total_usd: float
    unpriced: int
    asked: int  # items where a person would have been asked (install without --yes)
    asked_rate: float
    asked_by: dict[str, int]  # "confirm at llm", "choice at ecosystem", ... -> items
    accepted: int  # of those asked, the ones whose person would say yes
    accepted_rate: float | None  # None: nobody was asked
    failures: dict[str, int]  # category -> items


class Comparison(msgspec.Struct, frozen=True, kw_only=True):
    rate_a: float
    rate_b: float
    difference: float  # b - a, in points of success rate (0..1)
    p_value: float  # Fisher's exact test, two-sided
    test: str
    significant: bool  # p < SIGNIFICANT
    wall_p50_s: tuple[float, float]
    cost_median_usd: tuple[float, float]
    cost_total_usd: tuple[float, float]
    cost_per_success_usd: tuple[float | None, float | None]


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of ``successes`` out of ``n``; (0, 1) when n is 0."""
    if n <= 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks;
    0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def fisher_exact(a_pass: int, a_fail: int, b_pass: int, b_fail: int) -> float:
    """The two-sided p-value of Fisher's exact test on [[a_pass, a_fail], [b_pass,
    b_fail]]: the probability, with the margins fixed, of a table at most as likely as
    this one."""
    row_a, col_pass = a_pass + a_fail, a_pass + b_pass
    n = row_a + b_pass + b_fail
    if n == 0:
        return 1.0
    total = math.comb(n, col_pass)

    def prob(x: int) -> float:
        return math.comb(row_a, x) * math.comb(n - row_a, col_pass - x) / total

    observed = prob(a_pass)
    low, high = max(0, col_pass - (n - row_a)), min(row_a, col_pass)
    tolerance = observed * (1 + 1e-7)  # ties within rounding count as "as likely"
    return min(1.0, sum(p for x in range(low, high + 1) if (p := prob(x)) <= tolerance))


def figures(outcomes: Sequence[Outcome]) -> Figures:
    """What a run prints, over the items it measured (a run stopped early: those)."""
    n = len(outcomes)
    passed = sum(1 for o in outcomes if o.ok)
    walls = [o.duration_ms / 1000 for o in outcomes]
    costs = [o.cost_usd or 0.0 for o in outcomes]
    turns = [float(o.turns) for o in outcomes]
    repairs = Counter(str(o.repairs) for o in outcomes)
    failures = Counter(o.category or "unknown" for o in outcomes if not o.ok)
    return Figures(
        items=n,
        passed=passed,
        success_rate=passed / n if n else 0.0,
        interval=wilson(passed, n),
        wall_p50_s=percentile(walls, 50),
        wall_p95_s=percentile(walls, 95),
        cost_median_usd=percentile(costs, 50),
        cost_p95_usd=percentile(costs, 95),
        cost_total_usd=math.fsum(costs),
        unpriced=sum(1 for o in outcomes if o.cost_usd is None),
        turns_median=percentile(turns, 50),
        turns_total=sum(o.turns for o in outcomes),
        repairs_total=sum(o.repairs for o in outcomes),
        repairs_histogram=dict(sorted(repairs.items())),
        passed_after_repair=sum(1 for o in outcomes if o.ok and o.repairs > 0),
        failures=dict(failures.most_common()),
    )


def discover_figures(outcomes: Sequence[Outcome]) -> DiscoverFigures:
    """What ``eval discover`` prints: accuracy with its interval, latency, the LLM
    stage's latency, cost, and how often (and where) a person would be asked."""
    n = len(outcomes)
    right = sum(1 for o in outcomes if o.ok)
    costs = [o.cost_usd or 0.0 for o in outcomes]
    llm = [o.llm_ms / 1000 for o in outcomes if o.llm_ms is not None]
    asked = [o for o in outcomes if o.asked is not None]
    accepted = sum(1 for o in asked if o.accepted)
    where = Counter(f"{o.asked} at {o.asked_stage or '?'}" for o in asked)
    return DiscoverFigures(
        items=n,
        right=right,
        accuracy=right / n if n else 0.0,
        interval=wilson(right, n),
        latency_p50_s=percentile([o.duration_ms / 1000 for o in outcomes], 50),
        latency_p95_s=percentile([o.duration_ms / 1000 for o in outcomes], 95),
        llm_items=len(llm),
        llm_p95_s=percentile(llm, 95),
        cost_median_usd=percentile(costs, 50),
        cost_p95_usd=percentile(costs, 95),
        cost_total_usd=math.fsum(costs),
        unpriced=sum(1 for o in outcomes if o.cost_usd is None),
        asked=len(asked),
        asked_rate=len(asked) / n if n else 0.0,
        asked_by=dict(where.most_common()),
        accepted=accepted,
        accepted_rate=accepted / len(asked) if asked else None,
        failures=dict(Counter(o.category or "unknown" for o in outcomes if not o.ok).most_common()),
    )


def compare(a: Sequence[Outcome], b: Sequence[Outcome]) -> Comparison:
    """Run B against run A: the change in success rate with Fisher's exact p-value, and
    the change in typical wall time and cost."""
    fa, fb = figures(a), figures(b)
    p = fisher_exact(fa.passed, fa.items - fa.passed, fb.passed, fb.items - fb.passed)

    def per_success(f: Figures) -> float | None:
        return f.cost_total_usd / f.passed if f.passed else None

    return Comparison(
        rate_a=fa.success_rate,
        rate_b=fb.success_rate,
        difference=fb.success_rate - fa.success_rate,
        p_value=p,
        test="Fisher's exact test, two-sided",
        significant=p < SIGNIFICANT,
        wall_p50_s=(fa.wall_p50_s, fb.wall_p50_s),
        cost_median_usd=(fa.cost_median_usd, fb.cost_median_usd),
        cost_total_usd=(fa.cost_total_usd, fb.cost_total_usd),
        cost_per_success_usd=(per_success(fa), per_success(fb)),
    )
