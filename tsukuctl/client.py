"""Talking to tsukud: framing, calls, and starting the daemon on demand.

Standard library only: this runs from the shell's command-not-found hook, where every
millisecond of start-up is felt. The protocol is schema/rpc.md.
"""

from __future__ import annotations

import itertools
import os

from tsukud import caller_env, paths, wirejson
from tsukud.errors import DaemonUnavailable, ExitCode, Forbidden, UsageError
from tsukud.launch import HEADER as _HEADER
from tsukud.launch import MAX_FRAME, FrameReader, RemoteError, start_daemon
from tsukud.launch import connect as _connect

CANCEL_WAIT_S = 10.0  # for the daemon to stop a cancelled request and say what it spent

# typing is not imported at run time: it costs ~4 ms of every hook invocation.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from _socket import socket
    from collections.abc import Callable
    from typing import Any, TypeAlias

    StrPath: TypeAlias = str | os.PathLike[str]


class Client:
    """One connection to tsukud.

    A client that speaks for the user's shell (``connect()`` without a path, as every
    command does) sends with each request the caller's allowlisted environment, which
    the daemon applies to that request only, and the home it means: a daemon of another
    home refuses it (``wrong_daemon``) rather than act on the wrong tools. A client
    given a socket sends neither: it chose its daemon itself.
    """

    def __init__(
        self, sock: socket, *, env: dict[str, str] | None = None, home: str | None = None
    ) -> None:
        self.sock = sock
        self._ids = itertools.count(1)
        self._frames = FrameReader(sock)
        self._env = env or {}
        self._home = home

    @classmethod
    def connect(cls, path: StrPath | None = None, *, autostart: bool = True) -> Client:
        if path is None:
            sent = caller_env.collect(extra=caller_env.key_env_names(paths.config_path()))
            return cls._connect(paths.socket_path(), autostart, sent)
        return cls._connect(path, autostart, None)

    @classmethod
    def _connect(cls, path: StrPath, autostart: bool, env: dict[str, str] | None) -> Client:
        _check_socket_path(str(path))
        shell: dict[str, Any] = {} if env is None else {"env": env, "home": paths.tsuku_home()}
        try:
            return cls(_connect(path), **shell)
        except (FileNotFoundError, ConnectionRefusedError):
            if not autostart:
                raise DaemonUnavailable(
                    f"no tsukud answers on {path}",
                    hint="Start it with `tsukuctl daemon start`, or leave out --no-start to "
                    "have it started on demand.",
                ) from None
        except PermissionError:
            raise _not_yours(path) from None
        start_daemon(path)
        try:
            return cls(_connect(path), **shell)
        except PermissionError:
            raise _not_yours(path) from None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        rid = next(self._ids)
        request: dict[str, Any] = {"id": rid, "method": method, "params": params or {}}
        if self._home is not None:
            request["home"] = self._home
        if self._env:
            request["env"] = self._env
        body = wirejson.dumps(request).encode()
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

    def read_frame(self) -> dict[str, Any]:
        return self._frames.read()

    def _cancel(self, rid: int) -> None:
        """Ask the daemon to stop request ``rid`` (Ctrl-C). Its final frame, a
        ``cancelled`` error saying what the run spent, is then awaited for at most
        :data:`CANCEL_WAIT_S`; a daemon that cannot be told leaves a plain interrupt."""
        self.sock.settimeout(CANCEL_WAIT_S)
        try:
            self.send("cancel", {"id": rid})
        except (OSError, RemoteError, DaemonUnavailable):
            raise KeyboardInterrupt from None

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_progress: Callable[[Any], None] | None = None,
        on_confirm: Callable[[dict[str, Any]], bool | int] | None = None,
    ) -> Any:
        """Send one request and wait for its final frame.

        A ``confirm`` progress frame is a question from the daemon (schema/rpc.md): it is
        answered with ``confirm.answer`` on this connection, by ``on_confirm`` or, without
        one, with no (a numbered ``choose`` question: the number ``on_confirm`` returns).
        Ctrl-C cancels the request (``cancel``) and waits for its answer: a ``cancelled``
        error whose data says what the run spent.
        """
        rid = self.send(method, params)
        cancelling = False
        while True:
            try:
                frame = self.read_frame()
                if frame.get("id") not in (rid, None):
                    continue
                progress = frame.get("progress")
                if progress is not None and cancelling:
                    continue
                if isinstance(progress, dict) and isinstance(progress.get("confirm"), dict):
                    question = progress["confirm"]
                    from tsukuctl.choose import answer_params  # only when asked

                    said = on_confirm(question) if on_confirm is not None else False
                    self.send("confirm.answer", answer_params(question, said))
                    continue
                if "progress" in frame:
                    if on_progress is not None:
                        on_progress(frame["progress"])
                    continue
            except KeyboardInterrupt:
                if cancelling:
                    raise  # a second Ctrl-C: stop waiting for the daemon
                self._cancel(rid)
                cancelling = True
                continue
            except TimeoutError:
                raise KeyboardInterrupt from None  # the daemon did not answer the cancel
            if "error" in frame:
                raise RemoteError(frame["error"])
            return frame.get("result")


def _check_socket_path(path: str) -> None:
    """A socket path the kernel cannot take, or a directory someone else controls, is
    one clear error rather than a traceback or a talk with a stranger's daemon."""
    too_long = paths.too_long(path)
    if too_long is not None:
        raise UsageError(too_long, hint=paths.TOO_LONG_HINT)
    problem = paths.foreign_socket_dir(path)
    if problem is not None:
        raise _not_yours(path, problem)


def _not_yours(path: StrPath, why: str = "") -> Forbidden:
    """The socket (or its directory) is another user's: one sentence, no traceback."""
    return Forbidden(
        why or f"permission denied on {path}: that tsukud belongs to another user",
        hint="Each user runs their own tsukud; unset TSUKU_SOCKET (or point it at a "
        "path of your own) and tsukuctl starts yours.",
    )


__all__ = ["Client", "ExitCode", "RemoteError", "start_daemon"]
