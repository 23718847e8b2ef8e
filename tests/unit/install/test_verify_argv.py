"""Verify commands on the host: an argv, never a shell, with the tool's own binary
directories first on PATH (real processes in a temporary tool tree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tsukud.install.checks import run_check, verify_argv
from tsukud.recipe import VerifyCheck, VerifyFailed


def script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


def check(command: str) -> VerifyCheck:
    return VerifyCheck(command=command)


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    install = tmp_path / "tools" / "age-1.2.0"
    script(install / "bin" / "age", 'echo "age v1.2.0"; for a in "$@"; do echo "arg:$a"; done\n')
    return install


async def test_the_tools_own_binary_runs_before_any_on_path(tool: Path, tmp_path: Path) -> None:
    decoy = script(tmp_path / "elsewhere" / "age", "echo decoy\n")
    env = {"PATH": f"{decoy.parent}:/usr/bin:/bin"}
    code, out = await run_check(check("age --version"), tool, [tool / "bin"], env)
    assert (code, out) == (0, "age v1.2.0\narg:--version")


async def test_shell_syntax_is_only_arguments(tool: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    command = f"age --version ; touch {marker} | cat $(touch {marker}) > {marker}"
    code, out = await run_check(check(command), tool, [tool / "bin"], {"PATH": "/usr/bin:/bin"})
    assert code == 0 and not marker.exists()
    assert out.splitlines()[1:4] == ["arg:--version", "arg:;", "arg:touch"]
    assert "arg:$(touch" in out  # nothing was expanded


async def test_quotes_split_like_a_shell_and_a_missing_program_is_127(tool: Path) -> None:
    code, out = await run_check(check("age 'two words'"), tool, [tool / "bin"], {})
    assert out.splitlines()[1] == "arg:two words"
    code, out = await run_check(check("nosuchtool --version"), tool, [tool / "bin"], {})
    assert (code, out) == (127, "nosuchtool: command not found")


def test_an_unsplittable_command_is_a_verify_failure() -> None:
    with pytest.raises(VerifyFailed, match="cannot be split"):
        verify_argv("age 'unclosed")
    with pytest.raises(VerifyFailed, match="empty"):
        verify_argv("   ")
