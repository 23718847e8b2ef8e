"""The command-not-found hook in real bash, zsh and fish, driven through a pty.

The daemon is stopped before any shell starts (``hooked_tsuku``): the suggest path reads
the index file and nothing else. ``tsukuctl --no-start hook install`` edits the rc files
of a throw-away HOME exactly as a user's would be.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tests.integration.hooks.conftest import RIPGREP, SHELLS, STERN, ShellHome, need_shell
from tsukuctl.hook_commands import rc_path

SUGGESTION = "stern is provided by stern. Install it with: tsukuctl install stern"
NORMAL = {
    "bash": "bash: {}: command not found",
    "zsh": "zsh: command not found: {}",
    "fish": "fish: Unknown command: {}",
}


def install_hook(user: ShellHome, shell: str, *extra: str) -> str:
    return user.ctl("--no-start", "hook", "install", "--shell", shell, *extra)


@pytest.mark.parametrize("shell", SHELLS)
def test_suggests_known_commands_and_keeps_127(user: ShellHome, shell: str) -> None:
    need_shell(shell)
    user.write_rc(shell)
    install_hook(user, shell)
    sh = user.spawn(shell)

    out, status = sh.run("stern --tail 1")
    assert SUGGESTION in out, out
    assert NORMAL[shell].format("stern") in out, out  # the shell's own message comes first
    assert out.index(NORMAL[shell].format("stern")) < out.index(SUGGESTION), out
    assert status == 127, out

    out, status = sh.run("rg foo")  # a local recipe whose command is not its name
    assert "rg is provided by ripgrep. Install it with: tsukuctl install ripgrep" in out, out
    assert status == 127, out

    out, status = sh.run("nosuchtool-xyz")
    assert NORMAL[shell].format("nosuchtool-xyz") in out, out
    assert "provided by" not in out, out
    assert status == 127, out

    # Names that are not commands of any tool (and would need escaping) are not looked up.
    out, status = sh.run("st.rn")
    assert "provided by" not in out and status == 127, out

    out, status = sh.run("echo still-fine")
    assert "still-fine" in out and status == 0, out


@pytest.mark.parametrize("shell", SHELLS)
def test_existing_handler_is_wrapped(user: ShellHome, shell: str) -> None:
    need_shell(shell)
    handler = {
        "bash": 'command_not_found_handle() { echo "user handler saw $1" >&2; return 127; }\n',
        "zsh": 'command_not_found_handler() { echo "user handler saw $1" >&2; return 127; }\n',
        "fish": 'function fish_command_not_found; echo "user handler saw $argv[1]" >&2; end\n',
    }[shell]
    user.write_rc(shell, handler)
    install_hook(user, shell)
    sh = user.spawn(shell)
    out, status = sh.run("stern")
    assert "user handler saw stern" in out, out
    assert SUGGESTION in out, out
    assert status == 127, out
    out, status = sh.run("nosuchtool-xyz")
    assert "user handler saw nosuchtool-xyz" in out, out
    assert "provided by" not in out, out
    assert status == 127, out


@pytest.mark.parametrize("shell", SHELLS)
def test_uninstall_restores_the_rc_file_and_silences_the_hook(user: ShellHome, shell: str) -> None:
    need_shell(shell)
    user.write_rc(shell, "# no final newline here")
    before = user.rc_file(shell).read_bytes()
    install_hook(user, shell)
    install_hook(user, shell)  # idempotent
    rc = Path(rc_path(shell, user.env))
    assert rc.read_text().count("# tsuku hook (managed") == 1
    status_out = user.ctl("hook", "status")
    assert f"{shell:<6} installed in {rc}" in status_out
    assert "index  " in status_out and "2 commands" in status_out

    out = user.ctl("hook", "uninstall", "--shell", shell)
    assert "removed" in out, out
    assert user.rc_file(shell).read_bytes() == before
    if shell == "fish":
        assert not rc.exists()  # conf.d/tsuku.fish was ours alone
    sh = user.spawn(shell)
    out, status = sh.run("stern")
    assert "provided by" not in out, out
    assert NORMAL[shell].format("stern") in out, out
    assert status == 127, out


@pytest.mark.parametrize("shell", SHELLS)
def test_confirm_mode_no_then_yes(user: ShellHome, shell: str) -> None:
    need_shell(shell)
    user.write_rc(shell)
    install_hook(user, shell, "--mode", "confirm")
    sh = user.spawn(shell)

    out, status = sh.run("stern --tail 1", answer="n")
    assert "stern is provided by stern." in out and "Install stern now? [y/N]" in out, out
    assert not user.stub_log.exists(), out  # nothing installed
    assert status == 127, out

    out, status = sh.run("stern --tail 1", answer="y")
    assert user.stub_log.read_text() == "install stern|hook_active=1\n", out
    assert "stub: installed stern" in out, out
    assert "fake stern ran with: --tail 1" in out, out  # the command ran again, with its args
    if shell != "fish":  # fish reports 127 after an unknown command whatever the handler did
        assert status == 0, out

    out, status = sh.run("stern again")  # installed now: found on PATH, no hook
    assert "fake stern ran with: again" in out and "provided by" not in out, out


@pytest.mark.parametrize("shell", SHELLS)
def test_auto_mode_from_the_environment(user: ShellHome, shell: str) -> None:
    need_shell(shell)
    user.write_rc(shell)
    install_hook(user, shell)
    sh = user.spawn(shell, TSUKU_AUTO_INSTALL="auto")
    out, _status = sh.run("stern -v")
    assert "installing it (auto-install mode)" in out, out
    assert "[y/N]" not in out, out
    assert "fake stern ran with: -v" in out, out
    assert user.stub_log.read_text() == "install stern|hook_active=1\n", out


@pytest.mark.parametrize("shell", SHELLS)
def test_non_interactive_shells_get_the_plain_127(user: ShellHome, shell: str) -> None:
    path = need_shell(shell)
    hook = user.tsuku.home / "share" / "hooks" / f"tsuku.{shell}"
    install_hook(user, shell)
    status = "$status" if shell == "fish" else "$?"
    script = f'source "{hook}"; stern; echo "rc={status}"'
    cp = subprocess.run(
        [path, "-c", script], env=user.env, capture_output=True, text=True, timeout=30
    )
    assert "provided by" not in cp.stdout + cp.stderr
    assert "rc=127" in cp.stdout


def test_no_lookup_inside_our_own_install(user: ShellHome) -> None:
    need_shell("bash")
    user.write_rc("bash")
    install_hook(user, "bash")
    sh = user.spawn("bash", TSUKU_HOOK_ACTIVE="1")
    out, status = sh.run("stern")
    assert "provided by" not in out and status == 127, out


# Among the slowest tests (issue 26): a real bash on a pty runs the hook, which installs
# through a real daemon.
@pytest.mark.slow  # a whole bash session on a pty; the other shell tests stay
def test_done_when_hook_install_in_bash_then_stern() -> None:
    """The issue's acceptance test: from an empty TSUKU_HOME and no daemon, `tsukuctl
    hook install` (which starts the daemon to build the index) and then `stern`."""
    need_shell("bash")
    home = short_home()
    t = Tsuku(home, base_env(home))
    (home / "registry" / "s").mkdir(parents=True)
    (home / "registry" / "s" / "stern.toml").write_text(STERN)
    (home / "recipes").mkdir()
    (home / "recipes" / "ripgrep.toml").write_text(RIPGREP)
    user = ShellHome(t, home / "user", home / "stub.log")
    user.home.mkdir()
    try:
        user.write_rc("bash")
        out = user.ctl("hook", "install", "--shell", "bash")
        assert "index" in out and "2 commands from 2 tools" in out, out
        assert user.ctl("daemon", "stop").startswith("tsukud stopped")
        sh = user.spawn("bash")
        out, status = sh.run("stern")
        assert SUGGESTION in out and status == 127, out
    finally:
        user.close()
        t.stop_all()
        import shutil

        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.parametrize("shell", SHELLS)
def test_a_hung_lookup_falls_through_within_the_deadline(user: ShellHome, shell: str) -> None:
    """A grep that never answers (a hung file system, say) costs the shell 100 ms, not
    its prompt: the normal message follows and the status is 127."""
    import time

    need_shell(shell)
    if shell == "fish" and shutil.which("timeout") is None:
        pytest.skip("fish's deadline needs timeout(1) (coreutils)")
    slow = user.home / "stubs" / "grep"
    slow.write_text("#!/bin/sh\nexec sleep 5\n")
    slow.chmod(0o755)
    user.write_rc(shell)
    install_hook(user, shell)
    sh = user.spawn(shell, TSUKU_HOOK_DEADLINE="")  # the hook's own 100 ms
    t0 = time.monotonic()
    out, status = sh.run("stern")
    elapsed = time.monotonic() - t0
    assert NORMAL[shell].format("stern") in out, out
    assert "provided by" not in out, out
    assert status == 127, out
    assert elapsed < 2.0, f"{elapsed:.2f} s"
