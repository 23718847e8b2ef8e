"""``tsuku.ctl`` in-process (tests/ctl_runner.py) answers what the real ``tsukuctl``
process answers: the same exit code, stdout and stderr, for results, usage errors,
help, remote errors, questions answered on stdin, ``-q``, and the environment of the
call. The suite's hundreds of in-process calls stand on this."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
from pathlib import Path

import pytest

from tests import ctl_runner
from tests.conftest import SPAWNING_COMMANDS, Tsuku

CASES = [
    ("--version",),
    ("help", "install"),
    ("status", "--bogus"),  # usage error: exit 2, the command's usage on stderr
    ("instal", "x"),  # a mistyped command: "did you mean"
    ("config", "get", "llm.daily_budget"),
    ("config", "get", "no.such.key"),  # a remote error with its hint
    ("config", "set", "llm.daily_budget", "-5"),
    ("-q", "config", "get", "no.such.key"),  # quiet: the error is still printed
    ("events", "list", "--type", "nothing.matches", "--json"),
    ("list", "--json"),
    ("remove", "ghost"),
    ("list",),
]


def both(t: Tsuku, *args: str, **kw: object) -> tuple[object, object]:
    real = t.ctl(*args, spawn=True, **kw)  # type: ignore[arg-type]
    here = t.ctl(*args, **kw)  # type: ignore[arg-type]
    return (real.returncode, real.stdout, real.stderr), (here.returncode, here.stdout, here.stderr)


@pytest.mark.parametrize("args", CASES, ids=[" ".join(c) for c in CASES])
def test_in_process_answers_as_the_process_does(daemon: Tsuku, args: tuple[str, ...]) -> None:
    real, here = both(daemon, *args)
    assert here == real


def test_stdin_and_the_callers_environment_reach_the_command(daemon: Tsuku) -> None:
    # A value read from stdin (`config set KEY` without one), then a variable the
    # caller's shell exports.
    real, here = both(daemon, "config", "set", "llm.daily_budget", input="3\n")
    assert here == real and real[0] == 0, real  # type: ignore[index]
    env = {"NO_COLOR": "1", "TSUKU_LOG_LEVEL": "debug"}
    assert both(daemon, "status", shell_env=env)[1][0] == 0  # type: ignore[index]
    real, here = both(daemon, "config", "get", "llm.daily_budget")
    assert here == real and "3" in real[1], real  # type: ignore[index]


def test_the_test_process_is_left_as_it_was(daemon: Tsuku) -> None:
    import os
    import sys

    before = (dict(os.environ), sys.stdin, sys.stdout, sys.stderr, list(sys.argv))
    daemon.ctl("-q", "config", "get", "no.such.key", shell_env={"TSUKU_EXTRA": "1"})
    daemon.ctl("status", "--bogus")
    assert (dict(os.environ), sys.stdin, sys.stdout, sys.stderr, list(sys.argv)) == before


def test_which_calls_spawn(tsuku: Tsuku, monkeypatch: pytest.MonkeyPatch) -> None:
    """No daemon of ours running: the client would start one, so a real process runs
    (its daemon must not be this test process's child). The same for the commands that
    manage processes, off the main thread, and when asked."""
    monkeypatch.delenv("TSUKU_CTL_SPAWN", raising=False)
    assert not tsuku._in_process(("status",), spawn=False)
    tsuku.start()
    assert tsuku._in_process(("status",), spawn=False)
    assert not tsuku._in_process(("status",), spawn=True)
    for word in SPAWNING_COMMANDS:
        assert not tsuku._in_process((word, "status"), spawn=False)
    seen: list[bool] = []
    thread = threading.Thread(target=lambda: seen.append(ctl_runner.can_run_here()))
    thread.start()
    thread.join()
    assert seen == [False] and ctl_runner.can_run_here()
    monkeypatch.setenv("TSUKU_CTL_SPAWN", "1")  # the whole suite the old way
    assert not tsuku._in_process(("status",), spawn=False)


@pytest.mark.ctl_process
def test_the_marker_makes_every_call_a_process(daemon: Tsuku) -> None:
    assert not daemon._in_process(("status",), spawn=False)


def test_a_call_that_outlives_its_timeout_raises_as_subprocess_run_does(daemon: Tsuku) -> None:
    # A socket that takes the connection and never answers.
    silent = Path(tempfile.mkdtemp(prefix="tk-", dir="/tmp")) / "silent.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(silent))
        listener.listen(4)
        for spawn in (True, False):
            with pytest.raises(subprocess.TimeoutExpired):
                daemon.ctl(
                    "status", timeout=1.5, spawn=spawn, shell_env={"TSUKU_SOCKET": str(silent)}
                )
    finally:
        listener.close()
        shutil.rmtree(silent.parent, ignore_errors=True)
    assert daemon.ctl("status").returncode == 0  # and the next call is served
