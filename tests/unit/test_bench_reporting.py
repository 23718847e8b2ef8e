"""The benchmarks' reporting: nearest-rank percentiles, and a goal that could not be
measured is listed as NOT MEASURED with its reason instead of vanishing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.conftest import REPO


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


common = _load("_common")
run_all = _load("run_all")


@pytest.mark.parametrize(
    ("data", "p", "want"),
    [
        # Nearest rank: the ceil(p/100 * n)-th smallest value.
        (list(range(1, 21)), 95, 19),  # 0.95 * 20 = 19 exactly (float math says 19.0000...4)
        (list(range(1, 21)), 50, 10),
        (list(range(1, 11)), 25, 3),  # 2.5 -> 3 (round-half-even would say 2)
        (list(range(1, 11)), 35, 4),  # 3.5 -> 4
        (list(range(1, 101)), 99, 99),
        (list(range(1, 101)), 99.9, 100),
        ([5.0, 1.0, 3.0], 0, 1.0),
        ([5.0, 1.0, 3.0], 100, 5.0),
        ([7.0], 50, 7.0),
    ],
)
def test_percentile_is_nearest_rank(data: list[float], p: float, want: float) -> None:
    assert common.percentile(list(reversed(data)), p) == want


def test_percentile_of_nothing_is_nan() -> None:
    assert common.percentile([], 50) != common.percentile([], 50)


def test_goal_report_lists_every_goal() -> None:
    printed = [
        "status_wall.goal: met (tsukuctl status 12 ms <= 50 ms)",
        "concurrent_reads.status_p99.goal: NOT met (status p99 30 ms <= 20 ms)",
        "validation_overhead.goal: NOT MEASURED (goal <= 1 s added; no container runtime)",
        "extra.goal: met (a goal the table does not know)",
    ]
    ran = {
        "status_wall": None,
        "concurrent_reads": None,
        "create_replayed": None,
        "validation_overhead": None,
        "discovery": "stopped after 180 s",
        "cold_start": "the benchmark failed (exit 1)",
    }
    assert run_all.goal_report(ran, printed) == [
        "status_wall.goal: met (tsukuctl status 12 ms <= 50 ms)",
        "concurrent_reads.status_p99.goal: NOT met (status p99 30 ms <= 20 ms)",
        "concurrent_reads.status_p99_with_session.goal: NOT MEASURED (no result printed)",
        "concurrent_reads.answered.goal: NOT MEASURED (no result printed)",
        "validation_overhead.goal: NOT MEASURED (goal <= 1 s added; no container runtime)",
        "discovery.goal: NOT MEASURED (stopped after 180 s)",
        "cold_start.goal: NOT MEASURED (the benchmark failed (exit 1))",
        "extra.goal: met (a goal the table does not know)",
    ]


def test_every_benchmark_has_a_goal_entry_and_its_goals_are_printed() -> None:
    """The table matches the benchmarks: each goal name appears in its script."""
    scripts = {p.stem for p in (REPO / "bench").glob("*.py") if not p.stem.startswith("_")}
    # batch_chaos is the acceptance run of issue 25, run at will (minutes, a database
    # crashed on purpose): it checks invariants and exits 1 if one fails, no goal to list.
    assert set(run_all.GOALS) == scripts - {"run_all", "batch_chaos"}
    for bench, goals in run_all.GOALS.items():
        text = (REPO / "bench" / f"{bench}.py").read_text()
        assert ("goal(" in text) == bool(goals), bench
        assert f'NAME = "{bench}"' in text, bench


def test_validation_overhead_without_docker_says_not_measured() -> None:
    """With no runtime at all (a closed DOCKER_HOST), the goal line says why."""
    cp = subprocess.run(
        [sys.executable, str(REPO / "bench" / "validation_overhead.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "DOCKER_HOST": "unix:///nonexistent/docker.sock"},
    )
    assert cp.returncode == 0, cp.stderr
    (goal_line,) = [ln for ln in cp.stdout.splitlines() if ".goal:" in ln]
    assert goal_line.startswith("validation_overhead.goal: NOT MEASURED (goal <= 1 s added; ")
    assert "no container runtime" in goal_line
