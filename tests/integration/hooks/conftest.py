"""Real bash, zsh and fish on a pseudo-terminal, with a throw-away HOME and TSUKU_HOME.

Each shell is started interactively (so it reads its rc file and the hook's interactive
guard passes) on a pty that is its controlling terminal (``/dev/tty`` works, as the
confirm prompt needs). Commands are typed; each is followed by an ``echo`` of a marker
carrying the exit status, and output is read up to that marker. Terminal escape
sequences are stripped before matching.

A shell that is not installed skips its tests locally and fails them in CI (CI=true),
where scripts/dev installs them.
"""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import shutil
import signal
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, in_ci, short_home

SHELLS = ("bash", "zsh", "fish")

STERN = """\
[metadata]
name = "stern"
description = "Multi-pod log tailing for Kubernetes"

[[steps]]
action = "github_archive"
when = { os = ["linux"] }
repo = "stern/stern"
asset_pattern = "stern_{version}_linux_{arch}.tar.gz"
binaries = ["stern"]

[verify]
command = "stern --version"
"""

RIPGREP = """\
[metadata]
name = "ripgrep"

[[steps]]
action = "github_archive"
repo = "BurntSushi/ripgrep"
asset_pattern = "ripgrep-{version}-x86_64-unknown-linux-musl.tar.gz"
strip_dirs = 1
binaries = ["rg"]
"""

_ESCAPES = re.compile(
    r"\x1b\[[0-9;?<=>]*[ -/]*[@-~]"  # CSI (colours, cursor, bracketed paste)
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC (window title)
    r"|\x1b[()][0-9A-Za-z]|\x1b[=>78]"
)


def clean(raw: bytes) -> str:
    return _ESCAPES.sub("", raw.decode("utf-8", "replace")).replace("\r", "")


def need_shell(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        msg = f"{name} is not installed (Debian package {name})"
        if in_ci():
            pytest.fail(msg + "; CI must have it")
        pytest.skip(msg)
    return path


class PtyShell:
    """An interactive shell on a pty: type lines, read until a pattern."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        self.raw = b""
        self.pos = 0  # matches start after what was already consumed
        pid, fd = pty.fork()
        if pid == 0:  # child: the pty is its controlling terminal
            try:
                os.chdir(cwd)
                os.execve(argv[0], argv, env)
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd
        self.status_var = "$status" if os.path.basename(argv[0]) == "fish" else "$?"

    @property
    def text(self) -> str:
        return clean(self.raw)

    def send(self, data: str) -> None:
        os.write(self.fd, data.encode())

    def expect(self, pattern: str, timeout: float = 20.0) -> re.Match[str]:
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.text
            m = rx.search(text, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no {pattern!r} within {timeout} s; screen:\n{text}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:  # EIO: the shell exited
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"shell exited waiting for {pattern!r}:\n{text}")
                self.raw += chunk

    def ready(self) -> None:
        """Wait until the rc files ran and the line editor reads input."""
        self.send('echo "__READ""Y__"\n')
        self.expect(r"__READY__")

    def run(
        self, line: str, *, answer: str | None = None, timeout: float = 20.0
    ) -> tuple[str, int]:
        """Type ``line``; returns (screen text it produced, exit status). ``answer`` is
        typed after a ``[y/N]`` prompt appears."""
        start = self.pos
        self.send(f'{line}; echo "__RC_{self.status_var}"__\n')
        if answer is not None:
            self.expect(r"\[y/N\] ", timeout)
            self.send(answer + "\n")
        m = self.expect(r"__RC_(\d+)__", timeout)
        return self.text[start : m.start()], int(m.group(1))

    def close(self) -> None:
        """Hang up as a closed terminal window does: the pty's master side is closed
        first (the shell's reads end and the kernel signals its foreground job), then
        SIGHUP; SIGKILL after 5 s. A SIGHUP alone was sometimes not acted on within
        the 5 s on a busy machine, and every such test waited them out."""
        os.close(self.fd)
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGHUP)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            done, _ = os.waitpid(self.pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.01)
        else:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)


@dataclass
class ShellHome:
    """One user's HOME (rc files) on top of a shared TSUKU_HOME."""

    tsuku: Tsuku
    home: Path
    stub_log: Path
    shells: list[PtyShell] = field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        env = dict(self.tsuku.env)
        for k in ("ZDOTDIR", "BASH_ENV", "ENV", "PROMPT_COMMAND", "TSUKU_AUTO_INSTALL"):
            env.pop(k, None)
        env.update(
            HOME=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_DATA_HOME=str(self.home / ".local" / "share"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            TERM="dumb",
            LANG="C.UTF-8",
            LC_ALL="C.UTF-8",
            STUB_LOG=str(self.stub_log),
            PATH=os.pathsep.join(
                [str(self.home / "stubs"), str(self.tsuku.home / "bin"), "/usr/bin", "/bin"]
            ),
        )
        return env

    def rc_file(self, shell: str) -> Path:
        if shell == "bash":
            return self.home / ".bashrc"
        if shell == "zsh":
            return self.home / ".zshrc"
        return self.home / ".config" / "fish" / "config.fish"

    def write_rc(self, shell: str, extra: str = "") -> None:
        """A quiet prompt (and ``extra``), as the user's own rc file."""
        base = {
            "bash": "PS1='$ '\nunset PROMPT_COMMAND\n",
            "zsh": "PROMPT='%% '\nunsetopt PROMPT_SP\n",
            "fish": "set -g fish_greeting\nfunction fish_prompt; echo -n '> '; end\n",
        }[shell]
        rc = self.rc_file(shell)
        rc.parent.mkdir(parents=True, exist_ok=True)
        rc.write_text(base + extra)

    def ctl(self, *args: str, check: bool = True) -> str:
        """The real tsukuctl, with this HOME (so the rc files land here)."""
        import subprocess
        import sys

        env = {
            **self.tsuku.env,
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
        }
        cp = subprocess.run(
            [sys.executable, "-m", "tsukuctl", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and cp.returncode != 0:
            raise AssertionError(f"tsukuctl {' '.join(args)} failed:\n{cp.stdout}\n{cp.stderr}")
        return cp.stdout + cp.stderr

    def spawn(self, shell: str, **env: str) -> PtyShell:
        path = need_shell(shell)
        argv = {"bash": [path, "-i"], "zsh": [path, "-d", "-i"], "fish": [path, "-i"]}[shell]
        # zsh -d: no /etc/zsh/zshrc (Debian's may bring its own prompt and handlers).
        # The hook's 100 ms lookup deadline is lengthened for tests that are not about
        # it: under a parallel suite on two cores a grep can miss 100 ms. A test of the
        # deadline itself passes TSUKU_HOOK_DEADLINE="" (the hook's own default).
        env = {"TSUKU_HOOK_DEADLINE": "5", **env}
        sh = PtyShell(argv, {**self.env, **env}, self.home)
        self.shells.append(sh)
        sh.ready()
        return sh

    def close(self) -> None:
        for sh in self.shells:
            sh.close()


def write_stub_tsukuctl(home: Path) -> None:
    """A stand-in for ``tsukuctl install``: logs its argv and "installs" a fake stern
    into $TSUKU_HOME/bin, so confirm/auto are tested without the install pipeline."""
    stubs = home / "stubs"
    stubs.mkdir(parents=True, exist_ok=True)
    stub = stubs / "tsukuctl"
    stub.write_text(
        "#!/bin/sh\n"
        'printf "%s|hook_active=%s\\n" "$*" "${TSUKU_HOOK_ACTIVE:-}" >> "$STUB_LOG"\n'
        '[ "$1" = install ] || exit 2\n'
        'mkdir -p "$TSUKU_HOME/bin"\n'
        "cat > \"$TSUKU_HOME/bin/$2\" <<'EOF'\n"
        "#!/bin/sh\n"
        'echo "fake $(basename "$0") ran with: $*"\n'
        "EOF\n"
        'chmod +x "$TSUKU_HOME/bin/$2"\n'
        'echo "stub: installed $2"\n'
    )
    stub.chmod(0o755)


@pytest.fixture(scope="module")
def hooked_tsuku() -> Iterator[Tsuku]:
    """A TSUKU_HOME whose index knows stern (registry) and rg (local ripgrep), built by
    the daemon; the daemon is stopped again: the hooks must not need it."""
    home = short_home()
    t = Tsuku(home, base_env(home))
    (home / "registry" / "s").mkdir(parents=True)
    (home / "registry" / "s" / "stern.toml").write_text(STERN)
    (home / "recipes").mkdir()
    (home / "recipes" / "ripgrep.toml").write_text(RIPGREP)
    try:
        t.start()
        res = t.call("hooks.reindex")
        assert res["commands"] == 2, res
        t.stop_all()
        t.procs.clear()
        yield t
    finally:
        t.stop_all()
        shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def stub_user(t: Tsuku, tmp_path: Path, installs: Iterable[str]) -> Iterator[ShellHome]:
    """A user with a fresh HOME and the stub ``tsukuctl`` on ``t``'s TSUKU_HOME; what
    the stub may have "installed" (``installs``) and the hook mode go afterwards."""
    home = tmp_path / "home"
    home.mkdir()
    write_stub_tsukuctl(home)
    u = ShellHome(t, home, tmp_path / "stub.log")
    try:
        yield u
    finally:
        u.close()
        for name in installs:
            (t.home / "bin" / name).unlink(missing_ok=True)
        (t.home / "share" / "hooks" / "mode").unlink(missing_ok=True)


@pytest.fixture
def user(hooked_tsuku: Tsuku, tmp_path: Path) -> Iterator[ShellHome]:
    with stub_user(hooked_tsuku, tmp_path, ["stern"]) as u:
        yield u


@contextlib.contextmanager
def hook_installed_from(
    recipes: Mapping[str, tuple[str, Mapping[str, Any]]],
) -> Iterator[tuple[ShellHome, str]]:
    """From an empty TSUKU_HOME and no daemon, the fake registry serving ``recipes``
    (name → (text, extra manifest fields)): ``tsukuctl hook install --shell bash``
    starts the daemon, which fetches the manifest and builds the index; the daemon is
    stopped again (the hook never needs it). Yields the user and what it printed."""
    from tsukud.testing.github import FakeGitHub

    home = short_home()
    with FakeGitHub() as gh:
        for name, (text, manifest) in recipes.items():
            gh.add_recipe(name, text, **manifest)
        t = Tsuku(home, {**base_env(home), **gh.env()})
        user = ShellHome(t, home / "user", home / "stub.log")
        user.home.mkdir()
        try:
            user.write_rc("bash")
            out = user.ctl("hook", "install", "--shell", "bash")
            assert (home / "registry" / "manifest.json").is_file(), out
            assert user.ctl("daemon", "stop").startswith("tsukud stopped")
            yield user, out
        finally:
            user.close()
            t.stop_all()
            shutil.rmtree(home, ignore_errors=True)


@contextlib.contextmanager
def real_client_user(world_env: dict[str, str], tmp_path: Path) -> Iterator[ShellHome]:
    """A user whose PATH has the real ``tsukuctl`` (as ``scripts/dev`` links it), a
    running daemon against ``world_env``'s fakes, and stern in the registry."""
    import sys

    home = short_home()
    t = Tsuku(home, {**base_env(home), **world_env})
    (home / "registry" / "s").mkdir(parents=True)
    (home / "registry" / "s" / "stern.toml").write_text(STERN)
    u = ShellHome(t, tmp_path / "home", tmp_path / "unused.log")
    (u.home / "stubs").mkdir(parents=True)
    real = u.home / "stubs" / "tsukuctl"
    real.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m tsukuctl "$@"\n')
    real.chmod(0o755)
    try:
        t.start()
        yield u
    finally:
        u.close()
        t.stop_all()
        shutil.rmtree(home, ignore_errors=True)
