"""Talking to tsukud: framing, calls, and starting the daemon on demand.

Standard library only: this runs from the shell's command-not-found hook, where every
millisecond of start-up is felt. The protocol is schema/rpc.md.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
import struct
import sys
import time

from tsukud import paths
from tsukud.errors import DaemonUnavailable, ExitCode, TsukuError, UsageError, exit_code_for

# typing is not imported at run time: it costs ~4 ms of every hook invocation.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    StrPath: TypeAlias = str | os.PathLike[str]
_HEADER = struct.Struct(">I")
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


class Client:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._ids = itertools.count(1)
        self._buf = b""

    @classmethod
    def connect(cls, path: StrPath | None = None, *, autostart: bool = True) -> Client:
        path = paths.socket_path() if path is None else path
        try:
            return cls(_connect(path))
        except (FileNotFoundError, ConnectionRefusedError):
            if not autostart:
                raise DaemonUnavailable(f"no tsukud answers on {path}") from None
        start_daemon(path)
        return cls(_connect(path))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        rid = next(self._ids)
        body = json.dumps({"id": rid, "method": method, "params": params or {}}).encode()
        if len(body) > MAX_FRAME:
            raise UsageError(
                f"request of {len(body)} bytes exceeds the {MAX_FRAME}-byte frame cap",
                hint="Split it into smaller requests.",
            )
        try:
            self.sock.sendall(_HEADER.pack(len(body)) + body)
        except (BrokenPipeError, ConnectionResetError):
            # The daemon may have refused us with an error frame before closing.
            frame = self.read_frame()
            if "error" in frame:
                raise RemoteError(frame["error"]) from None
            raise DaemonUnavailable("tsukud closed the connection") from None
        return rid

    def _recv_exact(self, n: int) -> bytes:
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

    def read_frame(self) -> dict[str, Any]:
        (n,) = _HEADER.unpack(self._recv_exact(4))
        if n > MAX_FRAME:
            raise DaemonUnavailable(f"tsukud sent an oversize frame ({n} bytes)")
        frame = json.loads(self._recv_exact(n))
        if not isinstance(frame, dict):
            raise DaemonUnavailable("tsukud sent a frame that is not an object")
        return frame

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Any], None] | None = None,
        on_confirm: Callable[[dict[str, Any]], bool] | None = None,
    ) -> Any:
        """Send one request and wait for its final frame.

        A ``confirm`` progress frame is a question from the daemon (schema/rpc.md): it is
        answered with ``confirm.answer`` on this connection, by ``on_confirm`` or, without
        one, with no.
        """
        rid = self.send(method, params)
        while True:
            frame = self.read_frame()
            if frame.get("id") not in (rid, None):
                continue
            progress = frame.get("progress")
            if isinstance(progress, dict) and isinstance(progress.get("confirm"), dict):
                question = progress["confirm"]
                yes = bool(on_confirm(question)) if on_confirm is not None else False
                self.send("confirm.answer", {"token": question.get("token"), "yes": yes})
                continue
            if "progress" in frame:
                if on_progress is not None:
                    on_progress(frame["progress"])
                continue
            if "error" in frame:
                raise RemoteError(frame["error"])
            return frame.get("result")


def _connect(path: StrPath) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(str(path))
    except BaseException:
        s.close()
        raise
    return s


def _stderr_path() -> str:
    return str(os.path.join(paths.log_dir(), "tsukud.stderr"))


def daemon_command() -> list[str]:
    return [sys.executable, "-m", "tsukud", "--foreground"]


def start_daemon(path: StrPath | None = None, timeout: float = START_TIMEOUT_S) -> int:
    """Start tsukud detached and wait until it accepts. Returns the daemon's pid.

    Two clients racing here both spawn a daemon; the single-instance lock lets one win
    and the other exits at once, and both clients simply wait for the socket.
    """
    import subprocess

    path = paths.socket_path() if path is None else path
    err_path = _stderr_path()
    os.makedirs(os.path.dirname(err_path), mode=0o700, exist_ok=True)
    with open(err_path, "ab") as err:
        offset = err.tell()
        proc = subprocess.Popen(
            daemon_command(),
            stdin=subprocess.DEVNULL,
            stdout=err,
            stderr=err,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    delay = 0.005
    while time.monotonic() < deadline:
        try:
            with Client(_connect(path)) as c:
                return int(c.call("ping")["pid"])
        except (FileNotFoundError, ConnectionRefusedError, DaemonUnavailable):
            pass
        rc = proc.poll()
        if rc not in (None, 0) and not _lost_race(err_path, offset):
            raise DaemonUnavailable(
                f"tsukud exited with status {rc} while starting:\n{_tail(err_path, offset)}",
                hint=_hint_from(err_path, offset),
            )
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    raise DaemonUnavailable(
        f"tsukud did not answer on {path} within {timeout:.0f} s",
        hint="See `tsukuctl daemon logs`.",
    )


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


__all__ = ["Client", "ExitCode", "RemoteError", "start_daemon"]
