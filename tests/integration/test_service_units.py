"""The service-manager files: systemd user units and the launchd agent (docs/service.md).

Static checks of the settings the daemon depends on, ``systemd-analyze verify --user`` on
copies of the units when systemd-analyze is installed (skipped otherwise), and a real
socket-activated start through ``systemd-socket-activate`` (the same LISTEN_FDS hand-off
as the socket unit) when that is installed.
"""

from __future__ import annotations

import os
import plistlib
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, Tsuku
from tsukud import paths

SYSTEMD = REPO / "systemd"
PLIST = REPO / "launchd" / "dev.tsuku.tsukud.plist"


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Sections → key → values (systemd allows a key more than once)."""
    out: dict[str, dict[str, list[str]]] = {}
    section = ""
    for raw in path.read_text().splitlines():
        text = raw.strip()
        if not text or text.startswith(("#", ";")):
            continue
        if text.startswith("[") and text.endswith("]"):
            section = text[1:-1]
            out.setdefault(section, {})
            continue
        key, sep, value = text.partition("=")
        assert sep, f"{path.name}: not a key=value line: {raw!r}"
        out[section].setdefault(key.strip(), []).append(value.strip())
    return out


def one(unit: dict[str, dict[str, list[str]]], section: str, key: str) -> str:
    values = unit[section][key]
    assert len(values) == 1, f"{section}.{key} set {len(values)} times"
    return values[0]


SOCKET = parse_unit(SYSTEMD / "tsukud.socket")
SERVICE = parse_unit(SYSTEMD / "tsukud.service")


# ---- systemd: static --------------------------------------------------------------------


def test_socket_unit_settings() -> None:
    assert one(SOCKET, "Socket", "ListenStream") == "%t/tsuku/tsukud.sock"
    assert one(SOCKET, "Socket", "SocketMode") == "0600"
    assert one(SOCKET, "Socket", "DirectoryMode") == "0700"
    assert one(SOCKET, "Socket", "Accept") == "no"
    assert one(SOCKET, "Install", "WantedBy") == "sockets.target"


def test_socket_path_is_the_clients_default() -> None:
    """With TSUKU_SOCKET unset, tsukuctl looks exactly where the socket unit listens."""
    runtime = "/run/user/1000"
    listen = one(SOCKET, "Socket", "ListenStream").replace("%t", runtime)
    assert paths.socket_path({"XDG_RUNTIME_DIR": runtime, "HOME": "/home/u"}) == listen
    # ... and the daemon is told the same path, so `status` reports it.
    env = dict(v.split("=", 1) for v in SERVICE["Service"]["Environment"])
    assert env["TSUKU_SOCKET"] == one(SOCKET, "Socket", "ListenStream")


def test_service_unit_settings() -> None:
    s = SERVICE["Service"]
    argv = one(SERVICE, "Service", "ExecStart").split()
    assert argv[0].startswith(("/", "%h/")) and argv[0].endswith("/tsukud")
    assert "--foreground" in argv[1:]
    assert one(SERVICE, "Service", "Restart") == "on-failure"
    assert one(SERVICE, "Service", "KillSignal") == "SIGTERM"
    assert "TimeoutStopSec" in s
    assert one(SERVICE, "Service", "NoNewPrivileges") == "yes"
    # These would break validation (docs/service.md, "Deliberately not set").
    for key in ("PrivateTmp", "ProtectHome", "ProtectSystem", "PrivateNetwork", "UMask"):
        assert key not in s, key
    assert "tsukud.socket" in SERVICE["Unit"]["Requires"]
    assert "tsukud.socket" in SERVICE["Install"]["Also"]


# ---- systemd: systemd-analyze -----------------------------------------------------------


def _exec_start() -> str:
    script = Path(sys.executable).parent / "tsukud"
    if script.exists():
        return f"{script} --foreground"
    return f"{sys.executable} -m tsukud --foreground"


def test_systemd_analyze_verify(tmp_path: Path) -> None:
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze is not installed")
    units = tmp_path / "units"
    units.mkdir()
    shutil.copy(SYSTEMD / "tsukud.socket", units / "tsukud.socket")
    text = (SYSTEMD / "tsukud.service").read_text()
    lines = [
        f"ExecStart={_exec_start()}" if ln.startswith("ExecStart=") else ln
        for ln in text.splitlines()
    ]
    (units / "tsukud.service").write_text("\n".join(lines) + "\n")
    runtime = tmp_path / "xdg"
    runtime.mkdir(mode=0o700)
    env = {**os.environ, "XDG_RUNTIME_DIR": str(runtime), "SYSTEMD_PAGER": "", "LC_ALL": "C"}
    cp = subprocess.run(
        [tool, "verify", "--user", str(units / "tsukud.socket"), str(units / "tsukud.service")],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    report = (cp.stdout + cp.stderr).strip()
    if "Failed to initialize manager" in report or "Failed to lookup" in report:
        pytest.skip(f"systemd-analyze cannot run a user manager here: {report[:200]}")
    assert report == "", report
    assert cp.returncode == 0


# ---- systemd: the LISTEN_FDS hand-off, for real -------------------------------------------


def _accepts(path: Path) -> bool:
    """True once something listens on the Unix socket ``path`` (the probe connects and
    closes at once; the activator then starts tsukud, which sees a closed connection)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        try:
            s.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            return False
    return True


def test_socket_activation_hand_off(tsuku: Tsuku) -> None:
    """tsukud adopts a listening fd 3 passed with LISTEN_FDS/LISTEN_PID, as from the unit."""
    tool = shutil.which("systemd-socket-activate")
    if tool is None:
        pytest.skip("systemd-socket-activate is not installed")
    tsuku.socket.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    argv = _exec_start().split()
    # systemd-socket-activate passes on only the variables named with -E.
    keep = [
        a
        for k in ("TSUKU_HOME", "TSUKU_SOCKET", "HOME", "PATH")
        if k in tsuku.env
        for a in ("-E", k)
    ]
    proc = subprocess.Popen(
        [tool, *keep, "-l", str(tsuku.socket), *argv],
        env=tsuku.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    tsuku.procs.append(proc)  # stopped and reaped by the fixture
    deadline = time.monotonic() + 10
    # The activator binds (the socket file appears) and only then listens: wait until a
    # connection is accepted, or a loaded machine sees ECONNREFUSED in between.
    while not _accepts(tsuku.socket):  # tsukud itself starts on the first connection
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "systemd-socket-activate did not listen"
        time.sleep(0.01)
    st = tsuku.call("status")
    assert st["activation"] == "systemd"
    assert st["socket"] == str(tsuku.socket)
    assert st["pid"] == proc.pid  # the activator exec'd into tsukud: LISTEN_PID matches
    tsuku.call("daemon.stop")
    assert proc.wait(timeout=15) == 0


# ---- launchd ----------------------------------------------------------------------------


def test_launchd_plist() -> None:
    with PLIST.open("rb") as f:
        p = plistlib.load(f)
    assert p["Label"] == "dev.tsuku.tsukud" == PLIST.stem
    args = p["ProgramArguments"]
    assert args[0].endswith("/tsukud")
    assert "--foreground" in args[1:]
    listeners = p["Sockets"]["Listeners"]
    assert listeners["SockPathMode"] == 384 == 0o600
    assert p["EnvironmentVariables"]["TSUKU_LAUNCHD"] == "1"
    assert p["KeepAlive"] == {"Crashed": True}
    assert p.get("RunAtLoad", False) is False
    assert p["StandardErrorPath"]
    assert p["StandardOutPath"]
    # Once __HOME__ is filled in, the socket is tsukuctl's default on macOS (no
    # XDG_RUNTIME_DIR there), so no TSUKU_SOCKET is needed.
    home = "/Users/someone"
    sock = listeners["SockPathName"].replace("__HOME__", home)
    assert sock == paths.socket_path({"HOME": home})
    assert len(sock.encode()) < 104  # sun_path on macOS
