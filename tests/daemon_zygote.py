"""The parent that tests' daemons are forked from (started by tests/daemon_forks.py).

A ``python -m tsukud`` spends about 0.25 s of its 0.33 s of CPU (start to stop) importing
trio, structlog, the config, the ledger and every RPC method module; the suite starts
hundreds. This process imports them once (what a daemon imports before it serves and
at its first install, and nothing a daemon loads only when needed: :func:`preload`)
and then forks a child per daemon, which runs
``tsukud``'s ``__main__`` as ``python -m tsukud`` would, in its own session, with the
test's environment, working directory and standard streams. The child is a real
daemon process (its own pid, signals, sockets, exit status); what it skips is only the
interpreter's start and the imports. tests/daemon_forks.py is the test side, and says
which tests still exec a fresh interpreter.

Protocol, over the SOCK_SEQPACKET socket it inherits: a request is a JSON object
``{"argv": [...], "env": {...}, "cwd": "..."}`` carrying three file descriptors (stdin,
stdout, stderr); the answer is ``{"pid": n}`` or ``{"error": "..."}``. When a child
exits, ``{"exited": pid, "status": returncode}`` follows (negative: killed by that
signal, as ``subprocess`` reports it). End of file on the socket ends this process.

Imports only the standard library, tsukud and what tsukud imports: nothing from the
tests, so a daemon holds nothing a real one would not.
"""

from __future__ import annotations

import array
import contextlib
import gc
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import threading
import traceback
from typing import Any

MAX_FDS = 3
MAX_MESSAGE = 1 << 20


def preload() -> None:
    """What ``python -m tsukud --foreground`` imports before it answers its first ping
    (tsukud/__main__.py's ``_run_foreground``, ``Daemon.open`` and ``amain``), the
    container runtime its start-up sweep imports, and the installer and HTTP transport
    most tests' daemons import at their first install. Nothing a test holds to staying
    unloaded until it is needed: no SDK, no aiohttp/aiodocker, no DevTools stack, no
    psycopg (tests/integration/test_daemon_forks.py checks)."""
    import argparse  # noqa: F401
    import faulthandler  # noqa: F401

    import httpcore2  # noqa: F401
    import trio  # noqa: F401
    import truststore  # noqa: F401

    # Not tsukud.__main__ itself: the child runs it as ``__main__``, as ``-m`` does.
    import tsukud.batch.backend
    import tsukud.batch.service
    import tsukud.config
    import tsukud.daemon
    import tsukud.errors
    import tsukud.fsutil
    import tsukud.groups
    import tsukud.install.installer
    import tsukud.install.layout
    import tsukud.llm.ceiling
    import tsukud.llm.providers
    import tsukud.log
    import tsukud.private_home
    import tsukud.rpc.registry
    import tsukud.rpc.server
    import tsukud.sandbox.runtime
    import tsukud.sandbox.service

    tsukud.rpc.registry.load_methods()


def _receive(ctl: socket.socket) -> tuple[dict[str, Any], list[int]] | None:
    fds = array.array("i")
    msg, anc, _flags, _addr = ctl.recvmsg(MAX_MESSAGE, socket.CMSG_SPACE(MAX_FDS * fds.itemsize))
    for level, kind, data in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    if not msg:
        for fd in fds:
            os.close(fd)
        return None
    return json.loads(msg), list(fds)


def _send(ctl: socket.socket, message: dict[str, Any]) -> None:
    ctl.sendall(json.dumps(message).encode())


def _exit_status(status: int) -> int:
    """``subprocess``'s returncode: the exit code, or minus the signal that killed it."""
    return os.waitstatus_to_exitcode(status)


def _run_daemon(request: dict[str, Any]) -> int:
    """In the child: be ``python -m tsukud <argv>`` and return its exit status."""
    sys.argv = ["-m", *request["argv"]]
    try:
        runpy.run_module("tsukud", run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code & 0xFF
        print(done.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1


def _finalize(code: int) -> int:
    """What the interpreter does at exit: wait for non-daemon threads, run ``atexit``
    functions, flush the standard streams."""
    import atexit

    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]
    with contextlib.suppress(BaseException):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()
    return code


def _child(ctl: socket.socket, wake: int, request: dict[str, Any], fds: list[int]) -> None:
    code = 1
    try:
        ctl.close()
        os.close(wake)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        os.setsid()  # start_new_session=True, as tests/conftest.py's Popen had it
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.path[0] = os.getcwd()  # as `python -m` sets it
        code = _finalize(_run_daemon(request))
    finally:
        os._exit(code)


def serve(ctl: socket.socket) -> None:
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)
    children: set[int] = set()
    selector = selectors.DefaultSelector()
    selector.register(ctl, selectors.EVENT_READ, "ctl")
    selector.register(wake_r, selectors.EVENT_READ, "wake")
    # Objects imported so far are never collected: a child's collections then do not
    # walk (and copy, page by page) the parent's heap.
    gc.freeze()
    while True:
        for key, _mask in selector.select():
            if key.data == "wake":
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
                _reap(ctl, children)
                continue
            received = _receive(ctl)
            if received is None:
                return
            request, fds = received
            try:
                pid = os.fork()
            except OSError as e:
                _send(ctl, {"error": f"fork: {e}"})
                pid = -1
            if pid == 0:
                _child(ctl, wake_r, request, fds)
            for fd in fds:
                os.close(fd)
            if pid > 0:
                children.add(pid)
                _send(ctl, {"pid": pid})
        _reap(ctl, children)


def _reap(ctl: socket.socket, children: set[int]) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children.discard(pid)
            _send(ctl, {"exited": pid, "status": _exit_status(status)})


def serve_fd(fd: int) -> None:
    """Serve on the inherited control socket ``fd`` until the test worker closes it."""
    ctl = socket.socket(fileno=fd)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        serve(ctl)
