"""A full run that collects fewer tests than tests/collected_floor.txt fails, serially
and under pytest-xdist; a narrowed run (paths, -k, -m) only prints its count. Each case
runs a real child pytest with the plugin loaded, in a project of its own."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.collect_floor import FLOOR_FILE
from tests.conftest import REPO
from tests.unit.child_pytest import RUNNERS, child_pytest

THREE = "def test_a():\n    pass\n\ndef test_b():\n    pass\n\ndef test_c():\n    pass\n"


def _project(tmp_path: Path, floor: int) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_three.py").write_text(THREE)
    (tmp_path / FLOOR_FILE).write_text(f"{floor}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    return tmp_path


def _pytest(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return child_pytest(project, "tests.collect_floor", *args)


@pytest.mark.parametrize("runner", list(RUNNERS.values()), ids=list(RUNNERS))
def test_a_full_run_below_the_floor_fails_and_says_so(tmp_path: Path, runner: list[str]) -> None:
    cp = _pytest(_project(tmp_path, 4), *runner)
    assert cp.returncode == 1, cp.stdout
    assert "3 passed" in cp.stdout
    assert "collected 3 tests (floor 4" in cp.stdout
    assert "3 tests collected, fewer than the floor of 4" in cp.stdout


@pytest.mark.parametrize("runner", list(RUNNERS.values()), ids=list(RUNNERS))
def test_a_full_run_at_the_floor_passes_and_prints_its_count(
    tmp_path: Path, runner: list[str]
) -> None:
    cp = _pytest(_project(tmp_path, 3), *runner)
    assert cp.returncode == 0, cp.stdout
    assert "collected 3 tests (floor 3" in cp.stdout
    assert "fewer than the floor" not in cp.stdout


def test_a_narrowed_run_is_not_held_to_the_floor(tmp_path: Path) -> None:
    project = _project(tmp_path, 4)
    for narrowing in (["-k", "test_a"], ["-m", "not slow"], ["tests/test_three.py"]):
        cp = _pytest(project, *narrowing)
        assert cp.returncode == 0, (narrowing, cp.stdout)
        assert "fewer than the floor" not in cp.stdout, narrowing
    # The same suite named by its root is a full run.
    assert _pytest(project, "tests").returncode == 1


def test_the_repository_keeps_a_floor() -> None:
    """The floor is a number, and no lower than the count this suite had when it was
    set (2,687 tests on 2026-11-28): it only goes down in a commit that says why."""
    text = (REPO / FLOOR_FILE).read_text().split("#", 1)[0].strip()
    assert int(text) >= 2687
