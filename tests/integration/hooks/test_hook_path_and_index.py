"""Shell integration that works at once, in real bash, zsh and fish on a pty: the rc
line puts ``$TSUKU_HOME/bin`` on PATH (once, however often the rc file is read),
``tsukuctl shell-init`` prints lines that do the same for hand-kept rc files, and a
fresh ``hook install`` fetches the registry's recipe list so the hook knows commands
(and the names recipes ``satisfies``) from the first prompt.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import base_env
from tests.integration.hooks.conftest import (
    SHELLS,
    STERN,
    ShellHome,
    hook_installed_from,
    need_shell,
)
from tsukuctl.hook_commands import rc_path

BARE_PATH = "/usr/bin:/bin"  # neither $TSUKU_HOME/bin nor the stub tsukuctl
SOURCE = {"bash": ". ~/.bashrc", "zsh": ". ~/.zshrc", "fish": "source {rc}"}
SHOW_PATH = {
    "bash": 'echo "P=$PATH"',
    "zsh": 'echo "P=$PATH"',
    "fish": 'echo "P="(string join : $PATH)',
}


@pytest.fixture
def tool(user: ShellHome) -> Iterator[str]:
    """An installed command, present only in $TSUKU_HOME/bin."""
    bin_dir = user.tsuku.home / "bin"
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / "s4tool"
    path.write_text('#!/bin/sh\necho "s4tool ran with: $*"\n')
    path.chmod(0o755)
    try:
        yield str(bin_dir)
    finally:
        path.unlink(missing_ok=True)


def path_entries(out: str) -> list[str]:
    line = next(x for x in out.splitlines() if x.startswith("P="))
    return line[2:].split(":")


@pytest.mark.parametrize("shell", SHELLS)
def test_hook_install_puts_tsuku_bin_first_on_path_once(
    user: ShellHome, shell: str, tool: str
) -> None:
    need_shell(shell)
    user.write_rc(shell)
    user.ctl("--no-start", "hook", "install", "--shell", shell)
    sh = user.spawn(shell, PATH=BARE_PATH)
    out, status = sh.run("s4tool hi")
    assert "s4tool ran with: hi" in out and status == 0, out
    sh.run(SOURCE[shell].format(rc=rc_path(shell, user.env)))  # an rc file read twice
    out, status = sh.run(SHOW_PATH[shell])
    entries = path_entries(out)
    assert entries[0] == tool and entries.count(tool) == 1, out
    assert "/usr/bin" in entries, out
    out, status = sh.run("stern")  # the same line sourced the hook
    assert "stern is provided by stern" in out and status == 127, out


@pytest.mark.parametrize("shell", SHELLS)
def test_shell_init_lines_do_what_the_rc_line_does(user: ShellHome, shell: str, tool: str) -> None:
    need_shell(shell)
    ctl = f"{sys.executable} -m tsukuctl shell-init {shell}"
    extra = f"{ctl} | source\n" if shell == "fish" else f'eval "$({ctl})"\n'
    user.write_rc(shell, extra)
    printed = user.ctl("shell-init", shell)
    assert printed.startswith("# tsuku: ") and "tsuku hook (managed" not in printed
    sh = user.spawn(shell, PATH=BARE_PATH)
    out, status = sh.run("s4tool")
    assert "s4tool ran with:" in out and status == 0, out
    out, status = sh.run("stern")
    assert "stern is provided by stern" in out and status == 127, out


HELIX = (
    STERN.replace('name = "stern"', 'name = "helix"\nsatisfies = { aliases = ["hx"] }')
    .replace("stern/stern", "helix-editor/helix")
    .replace('binaries = ["stern"]', 'binaries = ["hx"]')
)


@pytest.mark.slow  # a real shell waiting out a registry fetch; the other hook tests stay
def test_a_fresh_hook_install_fetches_the_registry_list_and_suggests_aliases() -> None:
    """From an empty TSUKU_HOME: `hook install` starts the daemon, which fetches the
    manifest (progress on stderr) and indexes every listed recipe and its aliases."""
    need_shell("bash")
    recipes = {"helix": (HELIX, {}), "stern": (STERN, {})}
    with hook_installed_from(recipes) as (user, out):
        assert "fetching the registry's recipe list" in out, out
        assert "3 commands from 2 tools" in out, out  # helix, hx, stern
        sh = user.spawn("bash")
        out, status = sh.run("hx")
        assert "hx is provided by helix. Install it with: tsukuctl install helix" in out
        assert status == 127, out
        out, status = sh.run("stern")
        assert "stern is provided by stern" in out and status == 127, out


@pytest.mark.slow  # a real shell waiting out a registry fetch; the other hook tests stay
def test_an_unreachable_registry_is_a_warning_not_a_failure(user: ShellHome) -> None:
    """The registry's list cannot be fetched (closed port): the index is still built
    from what is on disk, and the user is told why it knows no more."""
    t = user.tsuku
    (t.home / "registry" / "manifest.json").unlink(missing_ok=True)
    try:
        t.start()
        user.write_rc("bash")
        out = user.ctl("hook", "install", "--shell", "bash")
        assert "2 commands from 2 tools" in out, out
        assert "warning: the registry's recipe list could not be fetched" in out, out
    finally:
        t.stop_all()
        t.procs.clear()


def test_scripts_dir_is_not_needed_before_shell_init(tmp_path: Path) -> None:
    """shell-init on a home that has never seen `hook install` writes the scripts its
    lines source (else they would silently do nothing)."""
    home = tmp_path / "th"
    import subprocess

    cp = subprocess.run(
        [sys.executable, "-m", "tsukuctl", "shell-init", "zsh"],
        env={**base_env(home), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    assert (home / "share" / "hooks" / "tsuku.zsh").is_file()
    assert f'"{home}/share/hooks/tsuku.zsh"' in cp.stdout
