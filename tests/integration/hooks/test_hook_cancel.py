"""Ctrl-C during an install the command-not-found hook started, in real bash, zsh and
fish on a pty: the real ``tsukuctl`` (no stub) cancels the request, says
"cancelled: nothing was installed" and exits 130; the hook then says "cancelled", not
"failed", and passes 130 on. The download hangs (the fake GitHub's asset host stalls
after 64 bytes), so the Ctrl-C always lands in the middle of the work.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.github import FakeGitHub, fixture_world
from tests.integration.hooks.conftest import SHELLS, ShellHome, need_shell, real_client_user
from tests.waiting import wait_until


@pytest.fixture(scope="module")
def world() -> Iterator[FakeGitHub]:
    with fixture_world() as fake:
        fake.stall_after = 64  # the asset host sends 64 bytes, then hangs
        yield fake


@pytest.fixture
def user(world: FakeGitHub, tmp_path: Path) -> Iterator[ShellHome]:
    with real_client_user(world.env(), tmp_path) as u:
        assert u.tsuku.call("hooks.reindex")["commands"] == 1
        yield u


@pytest.mark.parametrize("shell", SHELLS)
def test_ctrl_c_in_a_hook_install_says_cancelled_and_keeps_130(
    world: FakeGitHub, user: ShellHome, shell: str
) -> None:
    need_shell(shell)
    user.write_rc(shell)
    user.ctl("hook", "install", "--shell", shell)
    sh = user.spawn(shell, TSUKU_AUTO_INSTALL="auto", PYTHONPATH=str(Path.cwd()))
    before = len(world.requests_to("/releases/download/"))
    start = sh.pos
    sh.send(f'stern --version; echo "__RC_{sh.status_var}"__\n')
    sh.expect(r"resolving stern…")
    # Into the download, which hangs: the asset host has been asked for it.
    asked = lambda: len(world.requests_to("/releases/download/")) > before  # noqa: E731
    wait_until(asked, "the asset request")
    sh.send("\x03")  # Ctrl-C, as the terminal sends it
    m = sh.expect(r"__RC_(\d+)__", timeout=20)
    out, status = sh.text[start : m.start()], int(m.group(1))
    assert "cancelled: nothing was installed" in out, out
    assert "tsuku: installing stern cancelled" in out, out
    assert out.index("cancelled: nothing") < out.index("tsuku: installing stern cancelled")
    assert "failed" not in out and "Traceback" not in out, out
    if shell != "fish":  # fish reports 127 after an unknown command whatever the handler did
        assert status == 130, out
    assert not (user.tsuku.home / "bin" / "stern").exists()
