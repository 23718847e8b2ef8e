"""Starting tsukud detached and waiting until it answers.

Both ``tsukud`` (without ``--foreground``) and ``tsukuctl`` (on demand) start the daemon
this way, so it lives on the daemon's side and imports only the standard library plus
``paths``, ``caller_env`` and ``errors``: ``tsukuctl`` runs from the shell's
command-not-found hook, where every millisecond of start-up is felt. The protocol is schema/rpc.md.
"""

from __future__ import annotations

import os
import struct
import sys
import time

# The socket module's import (its enums, selectors) costs the client ~3 ms on the
# benchmark machine; its base class, the C socket, is all a Unix stream needs.
from _socket import AF_UNIX, SOCK_STREAM
from _socket import socket as _socket

from tsukud import caller_env, paths, wirejson
from tsukud.errors import (
    DaemonUnavailable,
    DiskFull,
    ExitCode,
    LedgerCorrupt,
    TsukuError,
    exit_code_for,
)

# typing is not imported at run time: it costs ~4 ms of every hook invocation.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeAlias

    StrPath: TypeAlias = str | os.PathLike[str]

HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 20
START_TIMEOUT_S = 15.0


class RemoteError(TsukuError):
    """An error frame from the daemon, re-raised on the client side."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "error")), hint=str(error.get("hint") or ""))
        self.remote_code = str(error.get("code", "internal"))
        self.remote_exit = int(error.get("exit_code") or exit_code_for(self.remote_code))
        self.retryable_remote = bool(error.get("retryable", False))
        self.data = dict(error.get("data") or {})

    @property
    def exit_status(self) -> int:
        return self.remote_exit


def connect(path: StrPath) -> _socket:
    """A stream connected to ``path`` (the C socket ``socket.socket`` derives from)."""
    s = _socket(AF_UNIX, SOCK_STREAM)
    try:
        s.connect(str(path))
    except BaseException:
        s.close()
        raise
    return s


def ping(path: StrPath) -> int:
    """The pid of the daemon answering on ``path`` (one ``ping`` round trip)."""
    s = connect(path)
    try:
        body = wirejson.dumps({"id": 1, "method": "ping", "params": {}}).encode()
        # The daemon may have refused us with an error frame before closing: read it.
        # (Not contextlib.suppress: importing contextlib costs the shell hook ~0.5 ms.)
        try:  # noqa: SIM105
            s.sendall(HEADER.pack(len(body)) + body)
        except (BrokenPipeError, ConnectionResetError):
            pass
        frame = FrameReader(s).read()
    finally:
        s.close()
    if "error" in frame:
        raise RemoteError(frame["error"])
    return int(frame["result"]["pid"])


class FrameReader:
    """Reads length-prefixed JSON frames off a connected socket."""

    def __init__(self, sock: _socket) -> None:
        self.sock = sock
        self._buf = b""

    def _exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            try:
                chunk = self.sock.recv(max(65536, n - len(self._buf)))
            except (ConnectionResetError, BrokenPipeError):
                raise DaemonUnavailable("tsukud reset the connection") from None
            if not chunk:
                raise DaemonUnavailable("tsukud closed the connection")
            self._buf += chunk
        out, self._buf = self._buf[:n], self._buf[n:]
        return out

    def read(self) -> dict[str, Any]:
        (n,) = HEADER.unpack(self._exact(4))
        if n > MAX_FRAME:
            raise DaemonUnavailable(f"tsukud sent an oversize frame ({n} bytes)")
        frame = wirejson.loads(self._exact(n))
        if not isinstance(frame, dict):
            raise DaemonUnavailable("tsukud sent a frame that is not an object")
        return frame


def stderr_path() -> str:
    return str(os.path.join(paths.log_dir(), "tsukud.stderr"))


def daemon_command(*, accept_ledger: bool = False) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tsukud",
        "--foreground",
        *(["--accept-ledger"] if accept_ledger else []),
    ]


def start_daemon(
    path: StrPath | None = None, timeout: float = START_TIMEOUT_S, *, accept_ledger: bool = False
) -> int:
    """Start tsukud detached and wait until it accepts. Returns the daemon's pid.

    Two clients racing here both spawn a daemon; the single-instance lock lets one win
    and the other exits at once, and both clients simply wait for the socket. The daemon
    gets our environment less what requests carry (``caller_env.daemon_environ``): it
    would otherwise keep this one caller's settings and keys for every later request.
    """
    import subprocess

    path = paths.socket_path() if path is None else path
    err_path = stderr_path()
    os.makedirs(os.path.dirname(err_path), mode=0o700, exist_ok=True)
    with open(err_path, "ab") as err:
        offset = err.tell()
        proc = subprocess.Popen(
            daemon_command(accept_ledger=accept_ledger),
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            cwd="/",
            env=caller_env.daemon_environ(extra=caller_env.key_env_names(paths.config_path())),
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    delay = 0.005
    while time.monotonic() < deadline:
        try:
            return ping(path)
        except (FileNotFoundError, ConnectionRefusedError, DaemonUnavailable):
            pass
        rc = proc.poll()
        if rc not in (None, 0) and not _lost_race(err_path, offset):
            raise _start_failed(rc, err_path, offset)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    raise DaemonUnavailable(
        f"tsukud did not answer on {path} within {timeout:.0f} s",
        hint="See `tsukuctl daemon logs`.",
    )


_REFUSED_START: dict[int, type[TsukuError]] = {
    ExitCode.LEDGER_CORRUPT: LedgerCorrupt,
    ExitCode.DISK_FULL: DiskFull,
}


def _start_failed(rc: int, err_path: str, offset: int) -> TsukuError:
    """A daemon that will not start on a damaged ledger or a full disk says so with its
    own exit code; the client keeps that code (and its meaning)."""
    # The hint line goes into the error's hint, not into its message too: printed once.
    tail = "\n".join(x for x in _tail(err_path, offset).splitlines() if not x.startswith("hint: "))
    if not tail and _no_room(os.path.dirname(err_path)):
        # Its reason could not even be written (stderr is a file under TSUKU_HOME).
        return DiskFull(
            f"tsukud could not start: no space left on the disk holding {err_path}",
            hint="Free some space there and run the command again.",
        )
    return _REFUSED_START.get(rc, DaemonUnavailable)(
        f"tsukud exited with status {rc} while starting:\n{tail}",
        hint=_hint_from(err_path, offset),
    )


def _no_room(directory: str) -> bool:
    """Under a MiB free (tsukud.fsutil's threshold; the client may not import it)."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1 << 20


def _tail(p: str, offset: int) -> str:
    try:
        with open(p, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-10:])


def _lost_race(p: str, offset: int) -> bool:
    return "already running" in _tail(p, offset)


def _hint_from(p: str, offset: int) -> str:
    for line in _tail(p, offset).splitlines():
        if line.startswith("hint: "):
            return line[6:]
    return "See `tsukuctl daemon logs`."
