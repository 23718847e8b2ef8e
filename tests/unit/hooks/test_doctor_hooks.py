"""Doctor's hooks line reports the hook file the managed rc line really sources, which
may be another home's than the one ``TSUKU_HOME`` names for this command."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukuctl.doctor_commands import check_hooks
from tsukuctl.hook_commands import SHELLS, install_rc, install_scripts, rc_path, sourced_file


def hooked(tmp_path: Path, home: Path) -> dict[str, str]:
    """A user whose bash rc carries the managed line written for ``home``."""
    user = tmp_path / "user"
    user.mkdir(exist_ok=True)
    env = {"HOME": str(user), "SHELL": "/bin/bash"}
    install_scripts(str(home))
    install_rc("bash", rc_path("bash", env), str(home), env)
    return env


def test_another_homes_hook_is_reported_as_what_the_line_sources(tmp_path: Path) -> None:
    hooked_home, this_home = tmp_path / "hE", tmp_path / "hG"
    env = hooked(tmp_path, hooked_home)
    result = check_hooks(str(this_home), env)
    sourced = hooked_home / "share" / "hooks" / "tsuku.bash"
    assert result["state"] == "ok", result
    assert f"sources {sourced}" in result["detail"]
    assert "missing" not in result["detail"] and str(this_home) in result["detail"]


def test_the_line_for_this_home(tmp_path: Path) -> None:
    home = tmp_path / "user" / ".tsuku"  # the default home: the line says "$HOME/.tsuku/…"
    env = hooked(tmp_path, home)
    result = check_hooks(str(home), env)
    assert result["state"] == "ok", result
    assert result["detail"] == (
        f"bash: {env['HOME']}/.bashrc sources {home}/share/hooks/tsuku.bash"
    )


def test_a_missing_sourced_hook_names_that_file(tmp_path: Path) -> None:
    hooked_home, this_home = tmp_path / "hE", tmp_path / "hG"
    env = hooked(tmp_path, hooked_home)
    install_scripts(str(this_home))  # this home's hook exists; the sourced one goes
    (hooked_home / "share" / "hooks" / "tsuku.bash").unlink()
    result = check_hooks(str(this_home), env)
    assert result["state"] == "FAIL"
    assert result["detail"].endswith(
        f"sources {hooked_home}/share/hooks/tsuku.bash, which is missing"
    )


@pytest.mark.parametrize("shell", SHELLS)
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20))
def test_sourced_file_reads_back_the_path_each_shell_line_names(shell: str, name: str) -> None:
    from tsukuctl.hook_commands import source_line

    env = {"HOME": "/home/u"}
    home = f"/opt/{name}"
    assert sourced_file(source_line(shell, home, env), env) == f"{home}/share/hooks/tsuku.{shell}"
