"""Under CI=true every kind of skip fails the run (tests/skip_policy.py); locally a skip
stays a skip. Each case runs a real child pytest with the policy loaded as a plugin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.unit.child_pytest import RUNNERS, child_pytest

CASES = """
import pytest

def test_runs():
    assert True

def test_skips_itself():
    pytest.skip("no frobnicator here")

@pytest.mark.skipif(True, reason="marked away")
def test_marked():
    pass

@pytest.fixture
def needs_tool():
    pytest.skip("fixture found no tool")

def test_fixture_skip(needs_tool):
    pass

@pytest.mark.parametrize("path", [])
def test_over_nothing(path):
    pass

@pytest.mark.xfail(reason="known bug", strict=True)
def test_xfail():
    assert False
"""

MODULE_SKIP = 'import pytest\npytest.skip("whole module away", allow_module_level=True)\n'


def _run(
    tmp_path: Path, ci: str | None, runner: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_cases.py").write_text(CASES)
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    return _child(tmp_path, ci, runner or [])


def _child(tmp_path: Path, ci: str | None, runner: list[str]) -> subprocess.CompletedProcess[str]:
    return child_pytest(
        tmp_path,
        "tests.skip_policy",
        "-rA",
        *runner,
        "--rootdir",
        str(tmp_path),
        str(tmp_path),
        ci=ci,
    )


@pytest.mark.parametrize("runner", list(RUNNERS.values()), ids=list(RUNNERS))
def test_every_kind_of_skip_fails_in_ci(tmp_path: Path, runner: list[str]) -> None:
    cp = _run(tmp_path, "true", runner)
    out = cp.stdout
    assert cp.returncode == 1, out
    # Four test-level skips fail: one in the call, three in setup (mark, fixture, empty
    # parametrisation), which pytest reports as errors. The skipped module stays
    # "skipped", since failing its collection would stop the whole run, but the session
    # fails and says why.
    summary = out.splitlines()[-1]
    assert "1 failed, 1 passed, 1 skipped, 1 xfailed, 3 errors" in summary, summary
    named = out.split("skips failed under CI=true")[1].split("short test summary info")[0]
    for name in ("test_skips_itself", "test_marked", "test_fixture_skip", "test_over_nothing"):
        assert named.count(f"test_cases.py::{name}") == 1, out
    assert "no frobnicator here" in out
    assert "got empty parameter set" in out
    assert "test_module_skip.py: Skipped: whole module away" in out


def test_a_skipped_module_alone_fails_the_session_in_ci(tmp_path: Path) -> None:
    """Under xdist the module's skip is seen by the workers; the controller, which
    decides the exit status, must fail the run all the same."""
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (tmp_path / "test_module_skip.py").write_text(MODULE_SKIP)
    for runner in RUNNERS.values():
        cp = _child(tmp_path, "true", runner)
        assert cp.returncode == 1, cp.stdout
        assert "test_module_skip.py: Skipped: whole module away" in cp.stdout, cp.stdout


@pytest.mark.parametrize("ci", [None, "false"])
def test_outside_ci_a_skip_stays_a_skip(tmp_path: Path, ci: str | None) -> None:
    cp = _run(tmp_path, ci, RUNNERS["xdist"] if ci is None else None)
    summary = cp.stdout.splitlines()[-1]
    assert cp.returncode == 0, cp.stdout
    assert "1 passed" in summary and "5 skipped" in summary and "1 xfailed" in summary, summary
