"""The note after an install whose bin directory is not on PATH (issue 29, point 11):
before `hook install` it names that command; after it, it says the hook is in place
and only this shell predates it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tsukuctl import install_commands
from tsukuctl.hook_commands import add_line, source_line


def note(capsys: pytest.CaptureFixture[str], bin_dir: Path) -> str:
    install_commands._path_note([str(bin_dir / "stern")])
    return capsys.readouterr().err


def test_the_note_knows_whether_the_hook_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    home, tsuku_home = tmp_path / "u", tmp_path / "t"
    home.mkdir()
    env = {"HOME": str(home), "SHELL": "/bin/bash", "PATH": "/usr/bin:/bin"}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    bin_dir = tsuku_home / "bin"
    said = note(capsys, bin_dir)
    assert "`tsukuctl hook install` adds it for new shells" in said

    (home / ".bashrc").write_text(add_line("# mine\n", source_line("bash", str(tsuku_home), env)))
    said = note(capsys, bin_dir)
    assert "hook install" not in said
    assert f"{bin_dir} is not on this shell's PATH yet" in said and "exec $SHELL" in said

    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin")
    assert note(capsys, bin_dir) == ""
