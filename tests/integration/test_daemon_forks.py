"""The suite's forked daemons (tests/daemon_forks.py) are processes of their own that
behave as a fresh ``python -m tsukud`` would: their own pid and session, the test's
environment and working directory, output on the test's pipes, exit statuses as
``Popen`` reports a child's; and the tests named to exec a fresh interpreter do."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import daemon_forks
from tests.conftest import REPO, Tsuku
from tsukud.errors import CATALOGUE


def _parent_pid(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def test_a_forked_daemon_is_a_process_of_its_own(
    tsuku: Tsuku, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tsuku.env["TSUKU_LLM_DAILY_BUDGET"] = "2.5"  # the daemon's own environment
    monkeypatch.chdir(tmp_path)  # not the forking parent's directory
    proc = tsuku.start()
    assert isinstance(proc, daemon_forks.ForkedDaemon)
    pid = proc.pid
    assert tsuku.daemon_pid() == pid
    assert os.getsid(pid) == pid  # its own session, as start_new_session gave it
    assert _parent_pid(pid) != os.getpid()
    assert Path(f"/proc/{pid}/cwd").resolve() == tmp_path.resolve()
    status = json.loads(tsuku.ctl("status", "--json", check=True).stdout)
    assert status["budget"]["daily_budget_usd"] == 2.5
    assert (tsuku.home / "run" / "tsukud.lock").read_text().strip() == str(pid)
    assert proc.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=0.05)
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=10) == -signal.SIGKILL
    assert proc.poll() == -signal.SIGKILL


def test_forked_and_exec_daemons_exit_alike(tsuku: Tsuku) -> None:
    """A second daemon for a home refuses to start, with the same status and words
    whichever way it was started."""
    tsuku.start()
    outcomes = []
    for exec_it in (False, True):
        daemon_forks.exec_in_this_test = exec_it
        try:
            second = tsuku.start(wait=False)
        finally:
            daemon_forks.exec_in_this_test = False
        assert isinstance(second, daemon_forks.ForkedDaemon) is not exec_it
        out, err = second.communicate(timeout=30)
        outcomes.append((second.returncode, out, err.decode()))
    forked, executed = outcomes
    assert forked == executed
    assert forked[0] == CATALOGUE["already_running"].exit_code
    assert "tsukud is already running" in forked[2] and "hint:" in forked[2]


def test_an_interpreter_setting_of_its_own_gets_a_fresh_process(tsuku: Tsuku) -> None:
    tsuku.env["PYTHONFAULTHANDLER"] = "1"  # a fork could not honour it
    proc = tsuku.start()
    assert not isinstance(proc, daemon_forks.ForkedDaemon)
    assert tsuku.daemon_pid() == proc.pid


def test_the_named_process_tests_exist_and_exec() -> None:
    """A renamed module must not drop out of the named set unnoticed."""
    for prefix in daemon_forks.EXEC_STARTS:
        path, _, test = prefix.partition("::")
        assert (REPO / path).is_file(), prefix
        assert f"def {test}" in (REPO / path).read_text(), prefix
        assert daemon_forks.wants_exec(prefix + "x")
    assert not daemon_forks.wants_exec("tests/integration/test_daemon_forks.py::test_x")


def test_the_parent_holds_nothing_a_daemon_loads_only_when_needed(tsuku: Tsuku) -> None:
    """A forked daemon starts with what its parent imported: were an SDK, aiohttp or
    psycopg among it, every forked daemon would seem to have loaded it (and the tests of
    their lazy loading, as /proc/<pid>/maps shows it, would test the parent)."""
    proc = tsuku.start()
    assert isinstance(proc, daemon_forks.ForkedDaemon)
    maps = Path(f"/proc/{proc.pid}/maps").read_text()
    for heavy in ("/aiohttp/", "/pydantic_core/", "/psycopg", "/yarl/", "/multidict/"):
        assert heavy not in maps, heavy
    probe = subprocess.run(
        [sys.executable, "-c", PRELOADED_HEAVY],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    assert probe.stdout.strip() == "[]"


PRELOADED_HEAVY = (
    "import sys, tests.daemon_zygote as z; z.preload(); "
    "heavy = ('anthropic', 'google.genai', 'aiodocker', 'aiohttp', 'trio_websocket', 'psycopg'); "
    "print(sorted(m for m in heavy if m in sys.modules))"
)


def test_a_daemon_outliving_its_parent_is_still_waited_for(tsuku: Tsuku) -> None:
    """The parent ends (the worker's session end, or a crash) while a daemon runs: the
    daemon's wait must not hang for a status nobody will report, and the next start
    forks from a new parent."""
    proc = tsuku.start()
    assert isinstance(proc, daemon_forks.ForkedDaemon)
    daemon_forks.ZYGOTE.close()
    assert proc.poll() is None  # still running, its own process
    assert tsuku.daemon_pid() == proc.pid
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=15) == daemon_forks.UNKNOWN_STATUS
    second = Tsuku(tsuku.home, tsuku.env)
    again = second.start()
    try:
        assert isinstance(again, daemon_forks.ForkedDaemon) and again.pid != proc.pid
    finally:
        second.stop_all()
    assert again.returncode == 0


def test_a_daemon_of_a_test_not_named_is_forked(daemon: Tsuku) -> None:
    """The other half of test_daemon_cli's check: elsewhere a daemon is forked from the
    worker's parent (its command line is the parent's, not ``python -m tsukud``)."""
    if daemon_forks.exec_everywhere():
        return  # TSUKU_DAEMON_EXEC=1: every daemon is exec'd, by request
    (proc,) = daemon.procs
    cmdline = (Path("/proc") / str(proc.pid) / "cmdline").read_bytes().split(b"\0")
    assert b"--foreground" not in cmdline, cmdline
