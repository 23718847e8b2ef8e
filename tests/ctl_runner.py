"""``tsukuctl`` run inside the test process: ``main(argv)`` with its own environment,
stdin, stdout and stderr, answered as ``subprocess.run`` would have answered.

A new Python process costs about 70 ms of CPU (the interpreter and the client's
imports); the integration suite makes hundreds of ``tsuku.ctl(...)`` calls whose subject
is what the command says and does, not how a process starts. Those run here. Tests
whose subject *is* the process (auto-start, signals, terminals, exit on a closed pipe,
peer uid) spawn the real one: ``tsuku.ctl(..., spawn=True)`` or
``@pytest.mark.ctl_process`` on the test (tests/conftest.py decides which path a call
takes).

What a real run would see, the in-process run sees too:

- ``os.environ`` is exactly the run's environment (restored afterwards), so
  ``caller_env``, ``paths`` and an auto-started daemon read what a child would;
- stdin holds ``input`` (or nothing: a child of the tests would read an empty pipe or
  ``/dev/null``), and none of the three streams is a terminal;
- stdout and stderr are encoded with the locale's encoding (stderr with
  ``backslashreplace``, as Python's own is) and decoded as ``text=True`` decodes a
  pipe: universal newlines, so a ``\\r`` of a progress line reads as ``\\n`` in both;
- ``SystemExit`` (argparse's usage errors, ``--help``) becomes the return code, and an
  exception that escapes ``main`` prints its traceback and returns 1, as the
  interpreter would;
- ``timeout`` raises :class:`subprocess.TimeoutExpired` (a ``SIGALRM`` timer, on the
  main thread only).
"""

from __future__ import annotations

import contextlib
import io
import locale
import os
import signal
import subprocess
import sys
import threading
import traceback
from collections.abc import Iterator, Mapping, Sequence
from types import FrameType

#: Set for the duration of a test marked ``ctl_process`` (tests/conftest.py).
spawn_in_this_test = False


class _TimedOut(BaseException):
    """Raised by the alarm inside ``main``; a BaseException so no ``except Exception``
    of the client swallows it."""


def can_run_here() -> bool:
    """Only the main thread may swap the process's streams and environment (a test that
    calls ``ctl`` from threads, to race clients, gets real processes)."""
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def _swapped_environ(env: Mapping[str, str]) -> Iterator[None]:
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _alarm(timeout: float | None) -> Iterator[None]:
    usable = timeout is not None and signal.getsignal(signal.SIGALRM) in (
        signal.SIG_DFL,
        signal.SIG_IGN,
        None,
    )
    if not usable or timeout is None:
        yield
        return

    def fire(_signum: int, _frame: FrameType | None) -> None:
        raise _TimedOut

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _decoded(data: bytes, encoding: str) -> str:
    """What ``subprocess.run(..., text=True)`` makes of a pipe's bytes."""
    return io.TextIOWrapper(io.BytesIO(data), encoding=encoding, newline=None).read()


def run(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """``tsukuctl *args`` in this process; the answer of ``subprocess.run``."""
    from tsukuctl.cli import main

    encoding = locale.getpreferredencoding(False)
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    stdin = io.TextIOWrapper(io.BytesIO((input or "").encode(encoding)), encoding=encoding)
    stdout = io.TextIOWrapper(out_bytes, encoding=encoding, errors="strict")
    stderr = io.TextIOWrapper(err_bytes, encoding=encoding, errors="backslashreplace")
    saved = sys.stdin, sys.stdout, sys.stderr, sys.argv
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    sys.argv = ["tsukuctl", *args]
    code: int
    timed_out = False
    try:
        with _swapped_environ(env), _alarm(timeout):
            try:
                code = main(list(args))
            except SystemExit as done:
                code = _exit_code(done, sys.stderr)
            except _TimedOut:
                timed_out = True
                code = -signal.SIGKILL
            except BaseException:  # what the interpreter prints for an uncaught one
                traceback.print_exc(file=sys.stderr)
                code = 1
    finally:
        # `-q` may have left sys.stderr on the null device if main was cut short.
        for stream in (sys.stdout, sys.stderr, stdout, stderr):
            with contextlib.suppress(ValueError):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved
    out = _decoded(out_bytes.getvalue(), encoding)
    err = _decoded(err_bytes.getvalue(), encoding)
    argv = ["tsukuctl", *args]
    if timed_out:
        raise subprocess.TimeoutExpired(argv, timeout or 0, output=out, stderr=err)
    return subprocess.CompletedProcess(argv, code, out, err)


def _exit_code(done: SystemExit, stderr: io.TextIOBase) -> int:
    """The exit status the interpreter gives ``sys.exit(done.code)``."""
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code & 0xFF
    print(done.code, file=stderr)
    return 1
