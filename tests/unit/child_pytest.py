"""A real child pytest for the tests of the suite's own plugins (the collected floor,
the skip policy): it runs in a project of its own with only the plugin under test
loaded. Plugin autoloading is off, so the child starts in a fraction of the time, and
xdist runs only where a runner names it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

# Serially, and under pytest-xdist (a plugin's hooks run in the workers and the controller).
RUNNERS: dict[str, list[str]] = {"serial": [], "xdist": ["-p", "xdist.plugin", "-n", "2"]}


def child_pytest(
    project: Path, plugin: str, *args: str, ci: str | None = None
) -> subprocess.CompletedProcess[str]:
    """``pytest -q *args`` in ``project`` with ``plugin`` loaded; ``CI`` is ``ci`` there
    (unset when None, whatever this run has)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if ci is not None:
        env["CI"] = ci
    env["PYTHONPATH"] = str(REPO)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", plugin, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=120,
    )
