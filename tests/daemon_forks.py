"""Tests' daemons forked from a parent that has imported them already
(tests/daemon_zygote.py), instead of a fresh ``python -m tsukud`` each.

Why: the suite starts about 300 daemons in a local run; a fresh interpreter spends about
0.25 s of CPU importing before it serves (on 2 cores shared by 3 workers, that is about a
minute of the run). A forked daemon runs the same ``tsukud`` ``__main__`` in its own
process, session, environment, working directory and standard streams; its ``Popen``
(:class:`ForkedDaemon`) answers ``pid``, ``poll``, ``wait``, ``send_signal``,
``communicate`` and ``returncode`` as a child's would.

What a fork cannot be is a fresh interpreter: ``/proc/<pid>/environ`` and ``cmdline``
show the parent's, and an interpreter setting (a ``PYTHON*`` variable, ``LD_PRELOAD``,
the locale) in the test's environment would not apply. So a fresh ``python -m tsukud`` is still
started:

- for the tests named in :data:`EXEC_STARTS`, whose subject is the process itself
  (start-up, signals, kill -9, crashes, disk full, peer uid, terminals, service units,
  the caller's environment);
- when the test's environment sets an interpreter variable differently from the parent's;
- for every start under ``TSUKU_DAEMON_EXEC=1`` (to check that both ways agree) or when
  the parent cannot be started.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: Node-id prefixes of the tests whose daemons are a fresh ``python -m tsukud`` process
#: (a module path takes all of its tests): the process's start, end and surroundings
#: are what they test.
EXEC_STARTS: tuple[str, ...] = (
    "tests/integration/test_daemon_cli.py",
    "tests/integration/test_daemon_home.py",
    "tests/integration/test_startup_race.py",
    "tests/integration/test_crash_recovery.py",
    "tests/integration/test_disk_full.py",
    "tests/integration/install/test_install_disk_full.py",
    "tests/integration/install/test_install_crash.py",
    "tests/integration/create/test_create_kill.py",
    "tests/integration/test_instructions_crash.py",
    "tests/integration/test_peer_uid.py",
    "tests/integration/test_caller_env.py",
    "tests/integration/test_prompt_ctrl_c.py",
    "tests/integration/test_config_edit_pty.py",
    "tests/integration/test_service_units.py",
    "tests/integration/test_ledger_integrity.py",
    # A daemon killed with SIGKILL or stopped with SIGSTOP mid-work.
    "tests/integration/batch/test_batch_crash_money.py",
    "tests/integration/batch/test_batch_kill.py",
    "tests/integration/discover/test_discover_search_kill.py",
    "tests/integration/ledger_pg/test_expired_holds.py",
    "tests/integration/batch_pg/test_shared_queue.py::test_a_daemon_killed_mid_job",
    "tests/integration/batch_pg/test_shared_queue.py::test_a_daemon_paused_past_its_lease",
)

#: Variables read when an interpreter starts, a process is loaded or its locale is set: a
#: fork keeps the parent's, so a test that sets one differently gets a fresh process.
_PROCESS_START_PREFIXES = ("PYTHON", "LD_", "LANG", "LC_")

#: Set by tests/conftest.py's autouse fixture for the running test.
exec_in_this_test = False


def exec_everywhere() -> bool:
    """``TSUKU_DAEMON_EXEC=1``: every daemon a fresh ``python -m tsukud``, as before."""
    return os.environ.get("TSUKU_DAEMON_EXEC") == "1"


def wants_exec(nodeid: str) -> bool:
    return nodeid.startswith(EXEC_STARTS)


def _start_settings(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k.startswith(_PROCESS_START_PREFIXES)}


@dataclass
class _Exit:
    """One forked daemon's end, as its parent reports it. Kept per daemon, not per pid:
    the parent reaps a daemon at once, so its pid may be another daemon's a moment later
    (pids wrap quickly on a busy machine)."""

    status: int | None = None
    #: The parent ended before the daemon (closed, or died): nobody will report it.
    orphaned: bool = False


class ForkedDaemon(subprocess.Popen[bytes]):
    """The ``Popen`` of a daemon forked by the parent: not this process's child, so its
    exit status comes from the parent (:class:`Zygote`), not from ``waitpid``."""

    def __init__(
        self, zygote: Zygote, pid: int, end: _Exit, args: list[str], stdout: int, stderr: int
    ) -> None:
        # Popen's own __init__ would start a process: set what its methods read.
        self.args = args
        self.pid = pid
        self.returncode: Any = None
        self.stdin = None
        self.stdout = open(stdout, "rb")  # noqa: SIM115 (closed as Popen's are)
        self.stderr = open(stderr, "rb")  # noqa: SIM115
        self.text_mode = False
        self.encoding = None
        self.errors = None
        self.universal_newlines = False
        self._waitpid_lock = threading.Lock()
        self._input = None
        self._communication_started = False
        self._sigint_wait_secs = 0.25
        self._closed_child_pipe_fds = True
        self._child_created = False  # nothing for Popen.__del__ to reap
        self._zygote = zygote
        self._end = end

    def _internal_poll(self, _deadstate: object = None, **_ignored: object) -> int | None:
        if self.returncode is None:
            self.returncode = self._zygote.status(self.pid, self._end, timeout=0)
        return self.returncode  # type: ignore[no-any-return]

    def _wait(self, timeout: float | None) -> int:
        if self.returncode is None:
            status = self._zygote.status(self.pid, self._end, timeout=timeout)
            if status is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = status
        return self.returncode  # type: ignore[no-any-return]


class Zygote:
    """This worker's parent process of forked daemons, started at its first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._exited = threading.Condition()
        #: The running daemons of the current parent, by pid.
        self._running: dict[int, _Exit] = {}
        self._answers: queue.Queue[tuple[dict[str, Any], _Exit | None]] = queue.Queue()
        self._proc: subprocess.Popen[bytes] | None = None
        self._ctl: socket.socket | None = None
        self._settings: dict[str, str] = {}
        self.broken = False

    def _start(self, env: dict[str, str]) -> socket.socket:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        zenv = {"PATH": env.get("PATH", os.defpath), **_start_settings(env)}
        self._settings = _start_settings(zenv)
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOT, str(theirs.fileno())],
            env=zenv,
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=None,
            pass_fds=(theirs.fileno(),),
            start_new_session=True,
        )
        theirs.close()
        self._proc, self._ctl = proc, ours
        threading.Thread(target=self._read, args=(ours,), daemon=True).start()
        return ours

    def _read(self, ctl: socket.socket) -> None:
        """The parent's messages, in the order it sent them: a fork's pid always comes
        before that daemon's end."""
        while True:
            try:
                data = ctl.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                if ctl is self._ctl:  # not closed by close(): the parent died
                    with self._exited:
                        self.broken = True
                        self._orphan_all()
                    self._answers.put(({"error": "the daemons' parent process ended"}, None))
                return
            message = json.loads(data)
            with self._exited:
                if "exited" in message:
                    end = self._running.pop(message["exited"], None)
                    if end is not None:
                        end.status = message["status"]
                        self._exited.notify_all()
                    continue
                end = None
                if "pid" in message:
                    end = self._running[message["pid"]] = _Exit()
            self._answers.put((message, end))

    def _orphan_all(self) -> None:
        """(Holding ``_exited``.) The parent is gone: its running daemons are orphans."""
        for end in self._running.values():
            end.orphaned = True
        self._running.clear()
        self._exited.notify_all()

    def can_fork(self, env: dict[str, str]) -> bool:
        if self.broken:
            return False
        return self._ctl is None or _start_settings(env) == self._settings

    def spawn(self, argv: list[str], env: dict[str, str]) -> ForkedDaemon:
        """``python -m tsukud *argv`` in ``env``, forked; output on pipes, as Popen's."""
        # The test's own stdin, as a child of the test would inherit it.
        try:
            stdin = os.dup(0)
        except OSError:
            stdin = os.open(os.devnull, os.O_RDONLY)
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with self._lock:
                ctl = self._ctl or self._start(env)
                request = {"argv": argv, "env": env, "cwd": os.getcwd()}
                fds = array.array("i", [stdin, out_w, err_w])
                ctl.sendmsg(
                    [json.dumps(request).encode()],
                    [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)],
                )
                try:
                    answer, end = self._answers.get(timeout=30)
                except queue.Empty:
                    # A late answer must not be taken for the next start's: no more forks.
                    self.broken = True
                    raise RuntimeError("the daemons' parent did not answer in 30 s") from None
        finally:
            for fd in (stdin, out_w, err_w):
                os.close(fd)
        if end is None:
            os.close(out_r)
            os.close(err_r)
            raise RuntimeError(f"the daemons' parent could not fork: {answer.get('error')}")
        args = [sys.executable, "-m", "tsukud", *argv]
        return ForkedDaemon(self, int(answer["pid"]), end, args, out_r, err_r)

    def status(self, pid: int, end: _Exit, timeout: float | None) -> int | None:
        """The daemon's exit status once the parent has reaped it; ``None`` if it has not
        within ``timeout`` seconds."""
        with self._exited:
            self._exited.wait_for(lambda: end.status is not None or end.orphaned, timeout)
            if end.status is not None or not end.orphaned:
                return end.status
        return _orphan_status(pid, timeout)

    def close(self) -> None:
        """End the parent (its daemons are not waited for: they were retired); a later
        start starts a new one."""
        with self._lock, self._exited:
            ctl, proc = self._ctl, self._proc
            self._ctl = self._proc = None
            self._orphan_all()
        if ctl is not None:
            with contextlib.suppress(OSError):
                ctl.shutdown(socket.SHUT_RDWR)
            ctl.close()
        if proc is not None:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


#: The status reported for a daemon whose parent ended before it: the exit code went to
#: init, which reaped it.
UNKNOWN_STATUS = 255


def _ended(pid: int) -> bool:
    """Whether ``pid`` has exited (gone, or a zombie its new parent has not reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def _orphan_status(pid: int, timeout: float | None) -> int | None:
    """Wait (polling) until ``pid`` has exited; its exit code is not ours to know."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        if _ended(pid):
            return UNKNOWN_STATUS
        if deadline is not None and time.monotonic() >= deadline:
            return None
        time.sleep(0.02)


#: Runs in the parent: its control socket's fd is the argument.
_BOOT = "import sys, socket, tests.daemon_zygote as z; z.preload(); z.serve_fd(int(sys.argv[1]))"

ZYGOTE = Zygote()
