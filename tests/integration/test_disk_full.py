"""A real full disk (a small tmpfs holding TSUKU_HOME) under a real daemon: new work is
refused with ``disk_full`` (exit 29), reads keep working, SIGTERM stops it promptly, and
once space returns it resumes by itself, with nothing acknowledged lost."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tsukud.errors import ExitCode
from tsukud.launch import RemoteError

pytestmark = pytest.mark.ctl_process  # a full disk is met by real processes


@pytest.fixture
def small_disk() -> Iterator[Tsuku]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (CI runs as root)")
    home = short_home()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", str(home)], check=True
    )
    t = Tsuku(home, base_env(home))
    try:
        yield t
    finally:
        t.stop_all()
        subprocess.run(["umount", "-l", str(home)], check=False)
        shutil.rmtree(home, ignore_errors=True)


def fill(home: Path) -> Path:
    """Take every free block; returns the file to delete to give them back."""
    filler = home / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (65536, 4096, 512):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def append(t: Tsuku, marker: str, size: int = 2000) -> None:
    t.call(
        "events.append",
        {"events": [{"type": "client.fill", "payload": {"m": marker, "pad": "x" * size}}]},
    )


def append_until_full(t: Tsuku, acked: list[str], prefix: str) -> RemoteError:
    for i in range(500):
        try:
            append(t, f"{prefix}-{i}", 16000)
        except RemoteError as e:
            return e
        acked.append(f"{prefix}-{i}")
    raise AssertionError("the disk never filled up")


def test_a_full_disk_refuses_writes_keeps_reads_and_resumes(small_disk: Tsuku) -> None:
    t = small_disk
    proc = t.start()
    acked: list[str] = []
    for i in range(20):
        append(t, f"before-{i}")
        acked.append(f"before-{i}")

    filler = fill(t.home)
    err = append_until_full(t, acked, "full")
    assert err.remote_code == "disk_full" and err.remote_exit == ExitCode.DISK_FULL
    assert str(t.home / "tsuku.db") in err.message and "free now" in err.hint
    assert err.data["path"] == str(t.home / "tsuku.db")
    with pytest.raises(RemoteError) as again:  # new work: refused at once
        append(t, "refused")
    assert again.value.remote_code == "disk_full"

    # Reads still answer; config set is a typed error, not "a bug in tsuku".
    status = t.ctl("status", "--json")
    assert status.returncode == 0, status.stderr
    events = json.loads(status.stdout)["events"]
    assert events["durable"] >= 21 and events["disk_full"] is True
    listed = t.ctl("events", "--type", "client.fill", "--limit", "3", "--json")
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) == 3
    cfg = t.ctl("config", "set", "llm.daily_budget", "3")
    assert cfg.returncode == ExitCode.DISK_FULL, cfg.stderr
    assert "no space left" in cfg.stderr and "bug in tsuku" not in cfg.stderr

    filler.unlink()  # space comes back: the daemon resumes by itself
    deadline = time.monotonic() + 10
    while True:
        try:
            append(t, "after-0")
            acked.append("after-0")
            break
        except RemoteError as e:
            assert e.remote_code == "disk_full"
            assert time.monotonic() < deadline, "the daemon did not resume"
            time.sleep(0.1)
    assert t.ctl("config", "set", "llm.daily_budget", "3").returncode == 0

    # Full again, then SIGTERM: the stop is prompt and clean.
    filler = fill(t.home)
    append_until_full(t, acked, "full2")
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - t0 < 5
    assert proc.stderr is not None
    assert "Traceback" not in proc.stderr.read().decode()
    filler.unlink()

    # Nothing acknowledged was lost, and the ledger verifies.
    t.start()
    assert t.ctl("events", "verify").returncode == 0
    stored = {
        json.loads(line)["payload"]["m"]
        for line in t.ctl(
            "events", "--type", "client.fill", "--limit", "0", "--json", check=True
        ).stdout.splitlines()
    }
    missing = set(acked) - stored
    assert not missing, sorted(missing)[:5]


def test_a_full_disk_error_keeps_being_an_oserror() -> None:
    """Code that copes with a failed write (a cache it can do without) keeps coping."""
    from tsukud.fsutil import disk_full

    e = disk_full("/nonexistent/dir/file", "cannot write file")
    assert isinstance(e, OSError) and e.code == "disk_full"
    assert e.exit_code == ExitCode.DISK_FULL and e.data["path"] == "/nonexistent/dir/file"
    assert errno.ENOSPC  # the errno write_atomic maps


def test_a_daemon_started_on_a_full_disk_serves_reads_and_settles_once_space_returns(
    small_disk: Tsuku,
) -> None:
    """After a crash, a daemon started on a full disk must still come up: it serves reads,
    keeps the dead daemon's reservation held, and settles it as soon as space returns
    (issue 31: it used to wait for the next start, blocking that budget until then)."""
    t = small_disk
    proc = t.start()
    t.call("budget.reserve", {"amount_usd": 0.05, "session": "s-1", "confirmed": True})
    os.kill(proc.pid, signal.SIGKILL)  # leaves tsuku.db-wal and -shm, as a crash does
    proc.wait()
    filler = fill(t.home)

    proc = t.start()
    status = json.loads(t.ctl("status", "--json", check=True).stdout)
    assert status["events"]["disk_full"] is True
    assert status["budget"]["reserved_usd"] == pytest.approx(0.05)  # held, not dropped
    assert t.ctl("events", "--limit", "5").returncode == 0
    filler.unlink()

    # The same daemon, no restart: settled at the writer's next try.
    deadline = time.monotonic() + 15
    while t.ctl("events", "--type", "budget.settled", "--json").stdout.strip() == "":
        assert time.monotonic() < deadline, "the abandoned reservation was never settled"
        time.sleep(0.05)
    status = json.loads(t.ctl("status", "--json", check=True).stdout)
    assert status["budget"]["reserved_usd"] == 0
    settled = t.ctl("events", "--type", "budget.settled", "--json").stdout.splitlines()
    assert len(settled) == 1  # once, not again by a retry
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read().decode()
    t.start()  # and the next start finds nothing left to settle
    assert len(t.ctl("events", "--type", "budget.settled", "--json").stdout.splitlines()) == 1
    assert t.ctl("events", "verify").returncode == 0


def test_a_ledger_that_cannot_even_be_opened_for_want_of_space_says_so(
    small_disk: Tsuku,
) -> None:
    """A cleanly closed WAL database needs a new -shm file to open: with no space at all
    tsukud cannot start, and says why with exit 29 (tsukuctl too), not a traceback."""
    t = small_disk
    proc = t.start()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    filler = fill(t.home)
    proc = t.start(wait=False)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.DISK_FULL, err.decode()
    assert "cannot open the event ledger" in err.decode() and "Traceback" not in err.decode()
    ctl = t.ctl("status")
    assert ctl.returncode == ExitCode.DISK_FULL and "Traceback" not in ctl.stderr
    filler.unlink()
    t.start()
    assert t.ctl("events", "verify").returncode == 0
