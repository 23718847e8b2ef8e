"""Another user cannot talk to the daemon: the socket's mode stops them, and if that
fence is down (a loosened directory, a socket handed over by a service manager) the
daemon checks the peer's uid itself."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

import tsukuctl
from tests.conftest import Tsuku

SOURCE_ROOT = Path(tsukuctl.__file__).resolve().parents[1]

NOBODY = 65534

CLIENT = r"""
import json, socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("EACCES"); sys.exit(0)
body = json.dumps({"id": 1, "method": "status"}).encode()
try:
    s.sendall(struct.pack(">I", len(body)) + body)
except OSError:
    pass
buf = b""
while True:
    try:
        chunk = s.recv(65536)
    except ConnectionResetError:  # it hung up with our request unread
        break
    if not chunk:
        break
    buf += chunk
n = struct.unpack(">I", buf[:4])[0]
print(json.dumps(json.loads(buf[4:4 + n])))
"""

# nobody cannot enter root's pyenv; the client is stdlib-only, so any system Python does.
SYSTEM_PYTHON = next(
    (p for p in ("/usr/bin/python3", "/usr/local/bin/python3") if os.access(p, os.X_OK)), None
)

# CI runs as root (tests/skip_policy.py fails this skip there); a developer's run as an
# ordinary user cannot become another user.
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or SYSTEM_PYTHON is None,
    reason="needs root (to run a client as nobody) and a system python3",
)


def _drop() -> None:
    # Supplementary groups first (root's would otherwise stay), then gid, then uid.
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


READER = r"""
import sys
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            f.read(1)
    except PermissionError:
        print("EACCES")
    else:
        print("READ")
"""


def as_nobody(sock: str) -> str:
    return run_as_nobody(CLIENT, sock)


def run_as_nobody(script: str, *args: str) -> str:
    cp = subprocess.run(
        [str(SYSTEM_PYTHON), "-I", "-c", script, *args],
        capture_output=True,
        text=True,
        preexec_fn=_drop,
        timeout=30,
        cwd="/",
    )
    assert cp.returncode == 0, cp.stderr
    return cp.stdout.strip()


def tsukuctl_as_nobody(t: Tsuku, *args: str) -> subprocess.CompletedProcess[str]:
    """The real tsukuctl (stdlib only, so the system python runs it from the source tree),
    as user nobody, pointed at the daemon of the user running the tests."""
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(SOURCE_ROOT),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": "/nonexistent",
        "TSUKU_HOME": str(t.home),
        "TSUKU_SOCKET": str(t.socket),
    }
    return subprocess.run(
        [str(SYSTEM_PYTHON), "-m", "tsukuctl", *args],
        capture_output=True,
        text=True,
        preexec_fn=_drop,
        timeout=30,
        cwd="/",
        env=env,
    )


def test_socket_mode_keeps_other_users_out(daemon: Tsuku) -> None:
    os.chmod(daemon.home, 0o711)  # let nobody reach the run dir, which stays 0700
    assert as_nobody(str(daemon.socket)) == "EACCES"


def test_daemon_refuses_other_uid_even_when_the_socket_is_open(daemon: Tsuku) -> None:
    os.chmod(daemon.home, 0o711)
    os.chmod(daemon.socket.parent, 0o711)
    os.chmod(daemon.socket, 0o666)
    import json

    reply = json.loads(as_nobody(str(daemon.socket)))
    assert reply["error"]["code"] == "forbidden"
    assert "uid 65534" in reply["error"]["message"]
    assert "status" not in reply  # and nothing else was answered
    assert daemon.call("ping")["pong"] is True
    log = (daemon.home / "logs" / "tsukud.log").read_text()
    assert '"peer_uid": 65534' in log


def _one_clear_sentence(cp: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in cp.stderr, cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("hint: "), cp.stderr
    assert lines[0].startswith("tsukuctl: ")
    return lines[0]


def test_another_users_tsukuctl_is_told_in_one_sentence(daemon: Tsuku) -> None:
    os.chmod(daemon.home, 0o711)  # nobody reaches the run dir, which stays 0700
    cp = tsukuctl_as_nobody(daemon, "status")
    assert cp.returncode == 14, cp.stderr
    line = _one_clear_sentence(cp)
    assert line == (
        f"tsukuctl: permission denied on {daemon.socket}: that tsukud belongs to another user"
    )
    assert daemon.call("ping")["pong"] is True


def test_another_users_tsukuctl_refused_by_the_daemon_is_told_in_one_sentence(
    daemon: Tsuku,
) -> None:
    os.chmod(daemon.home, 0o711)
    os.chmod(daemon.socket.parent, 0o711)
    os.chmod(daemon.socket, 0o666)
    cp = tsukuctl_as_nobody(daemon, "status")
    assert cp.returncode == 14, cp.stderr
    assert _one_clear_sentence(cp) == "tsukuctl: uid 65534 may not use this daemon"


def test_the_ledger_its_wal_and_shm_are_owner_only(tsuku: Tsuku) -> None:
    home = tsuku.home
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o755)  # as an older version or a 0022 umask left it
    recipes = home / "recipes"
    recipes.mkdir(mode=0o755, exist_ok=True)
    os.chmod(recipes, 0o755)
    mine = recipes / "mine.toml"
    mine.write_text("# mine\n")
    os.chmod(mine, 0o644)
    tsuku.start()
    assert tsuku.call("ping")["pong"] is True
    ledger = [home / "tsuku.db", home / "tsuku.db-wal", home / "tsuku.db-shm"]
    for path in ledger:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE(recipes.stat().st_mode) == 0o700  # tightened at start
    assert stat.S_IMODE(mine.stat().st_mode) == 0o600
    log = home / "logs" / "tsukud.log"
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    # Open the home's fence to prove the files' own modes hold: a file left readable is
    # read by nobody, the ledger, its WAL and shm and the log are not.
    os.chmod(home, 0o711)
    os.chmod(log.parent, 0o711)
    control = home / "public.txt"
    control.write_text("x")
    os.chmod(control, 0o644)
    shown = run_as_nobody(READER, str(control), *map(str, ledger), str(log)).split()
    assert shown == ["READ", "EACCES", "EACCES", "EACCES", "EACCES"]
