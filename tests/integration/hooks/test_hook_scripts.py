"""The hook scripts parse in their shells, and the bash one passes shellcheck."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO, in_ci
from tests.integration.hooks.conftest import SHELLS, need_shell

HOOKS = REPO / "tsukuctl" / "hooks"


@pytest.mark.parametrize("shell", SHELLS)
def test_script_parses(shell: str) -> None:
    path = need_shell(shell)
    cp = subprocess.run(
        [path, "-n", str(HOOKS / f"tsuku.{shell}")], capture_output=True, text=True, timeout=30
    )
    assert cp.returncode == 0, cp.stderr


def test_bash_script_passes_shellcheck() -> None:
    if shutil.which("shellcheck") is None:
        msg = "shellcheck is not installed (Debian package shellcheck)"
        if in_ci():
            pytest.fail(msg + "; CI must have it")
        pytest.skip(msg)
    cp = subprocess.run(
        ["shellcheck", "-s", "bash", str(HOOKS / "tsuku.bash")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert cp.returncode == 0, cp.stdout


def test_scripts_are_package_data() -> None:
    """pyproject's package-data globs must ship them, or `hook install` breaks in a wheel."""
    text = (REPO / "pyproject.toml").read_text()
    for shell in SHELLS:
        assert f'"*.{shell}"' in text
        assert Path(HOOKS / f"tsuku.{shell}").is_file()
