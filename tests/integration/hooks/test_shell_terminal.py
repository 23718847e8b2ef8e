"""``tsukuctl install`` typed at a real bash, zsh and fish prompt on a pty, as a user
runs it: on a colour terminal its lines are redrawn in place and coloured, under
``NO_COLOR`` only the colour goes, and Ctrl-C in the middle of a download prints one
"cancelled" line and hands the shell 130. (The same client behaviour is pinned in
detail, shell-less, by tests/integration/install/test_install_terminal.py; this checks
that nothing about a shell between the user and tsukuctl changes it.)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.github import FakeGitHub, fixture_world
from tests.integration.hooks.conftest import SHELLS, ShellHome, need_shell, real_client_user
from tests.waiting import wait_until

REDRAW = b"\r\x1b[K"
COLOUR = re.compile(rb"\x1b\[[0-9;]*m")


@pytest.fixture(scope="module")
def world() -> Iterator[FakeGitHub]:
    with fixture_world() as fake:
        yield fake


@pytest.fixture
def user(world: FakeGitHub, tmp_path: Path) -> Iterator[ShellHome]:
    with real_client_user(world.env(), tmp_path) as u:
        yield u


@pytest.mark.parametrize("shell", SHELLS)
def test_a_colour_terminal_gets_redraws_and_colour_and_no_color_only_loses_colour(
    user: ShellHome, shell: str
) -> None:
    need_shell(shell)
    user.write_rc(shell)
    for no_color, version in (("", "1.32.0"), ("1", "1.31.0")):
        extra = {"NO_COLOR": no_color} if no_color else {}
        sh = user.spawn(shell, TERM="xterm", PYTHONPATH=str(Path.cwd()), **extra)
        start = len(sh.raw)
        out, status = sh.run(f"tsukuctl install stern@{version} --force", timeout=60)
        raw = sh.raw[start:]
        assert status == 0, out
        # What tsukuctl wrote: from its first line to the echo after it (the shells'
        # own line editors colour the prompt and the typed line).
        raw = raw[raw.index(b"resolving stern") : raw.rindex(b"__RC_")]
        assert f"installed stern {version}" in out, out
        assert REDRAW in raw, raw  # stage lines redrawn in place
        coloured = bool(COLOUR.search(raw.replace(REDRAW, b"")))
        assert coloured is not bool(no_color), (no_color, raw)
        assert "Traceback" not in out


@pytest.mark.parametrize("shell", SHELLS)
def test_ctrl_c_at_the_prompt_cancels_with_one_line_and_130(
    world: FakeGitHub, user: ShellHome, shell: str
) -> None:
    need_shell(shell)
    user.write_rc(shell)
    sh = user.spawn(shell, TERM="xterm", PYTHONPATH=str(Path.cwd()))
    world.stall_after = 64  # the asset host sends 64 bytes, then hangs
    try:
        before = len(world.requests_to("/releases/download/"))
        start = sh.pos
        sh.send(f'tsukuctl install stern; echo "__RC_{sh.status_var}"__\n')
        sh.expect(r"downloading stern")
        # Into the download, which hangs: the asset host has been asked for it.
        asked = lambda: len(world.requests_to("/releases/download/")) > before  # noqa: E731
        wait_until(asked, "the asset request")
        sh.send("\x03")  # Ctrl-C, as the terminal sends it
        m = sh.expect(r"__RC_(\d+)__", timeout=20)
    finally:
        world.stall_after = None
    out, status = sh.text[start : m.start()], int(m.group(1))
    assert status == 130, out
    assert out.count("cancelled: nothing was installed") == 1, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out
    assert not (user.tsuku.home / "bin" / "stern").exists()
