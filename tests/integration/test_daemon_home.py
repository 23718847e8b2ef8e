"""The right daemon for the home: each TSUKU_HOME its own daemon, found without
TSUKU_SOCKET even when XDG_RUNTIME_DIR is set, and never another home's."""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tsukud import paths
from tsukud.errors import ExitCode

pytestmark = pytest.mark.ctl_process  # which daemon a client finds and starts: real processes


def without_socket(home: Path, runtime: Path | None) -> Tsuku:
    """A home whose socket tsuku picks itself (no TSUKU_SOCKET), as a user's would."""
    env = base_env(home)
    del env["TSUKU_SOCKET"]
    if runtime is not None:
        env["XDG_RUNTIME_DIR"] = str(runtime)
    return Tsuku(home, env)


@pytest.fixture
def runtime() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="tk-run-", dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def homes(runtime: Path) -> Iterator[list[Tsuku]]:
    made = [without_socket(short_home(), runtime) for _ in range(2)]
    try:
        yield made
    finally:
        for t in made:
            t.stop_all()  # the daemons tsukuctl started (found by their lock)
            shutil.rmtree(t.home, ignore_errors=True)


def status(t: Tsuku) -> dict:  # type: ignore[type-arg]
    return json.loads(t.ctl("status", "--json", check=True).stdout)  # type: ignore[no-any-return]


@pytest.mark.slow  # two homes, two daemons auto-started; its siblings stay
def test_two_homes_two_daemons_side_by_side(homes: list[Tsuku], runtime: Path) -> None:
    a, b = homes
    sa, sb = status(a), status(b)  # each starts its own daemon on demand
    assert sa["home"] == str(a.home) and sb["home"] == str(b.home)
    assert sa["pid"] != sb["pid"]
    assert sa["socket"] == str(a.home / "run" / "tsukud.sock")  # not the runtime dir's
    assert sb["socket"] == str(b.home / "run" / "tsukud.sock")
    assert not (runtime / "tsuku").exists()
    # Each keeps its own ledger: an annotation in one is not in the other.
    a.ctl("events", "--json", check=True)
    assert status(a)["pid"] == sa["pid"] and status(b)["pid"] == sb["pid"]
    assert (a.home / "tsuku.db").exists() and (b.home / "tsuku.db").exists()

    # The default home keeps the runtime dir's socket (the one service units activate).
    assert paths.socket_path({"HOME": "/home/u", "XDG_RUNTIME_DIR": str(runtime)}) == str(
        runtime / "tsuku" / "tsukud.sock"
    )


def test_a_client_never_talks_to_the_daemon_of_another_home(homes: list[Tsuku]) -> None:
    a, b = homes
    pid = status(a)["pid"]
    b.env["TSUKU_SOCKET"] = str(a.home / "run" / "tsukud.sock")  # a mix-up
    for args in (["status"], ["install", "kind"], ["events"], ["daemon", "stop"]):
        cp = b.ctl(*args)
        assert cp.returncode == ExitCode.DAEMON_UNAVAILABLE, cp.stderr
        assert f"serves {a.home}, not {b.home}" in cp.stderr, cp.stderr
        assert "TSUKU_SOCKET" in cp.stderr and "Traceback" not in cp.stderr
    cp = b.ctl("daemon", "start")
    assert cp.returncode == ExitCode.DAEMON_UNAVAILABLE and "serves" in cp.stderr, cp.stderr
    assert not (b.home / "tsuku.db").exists()
    assert status(a)["pid"] == pid  # the other home's daemon carries on, untouched
    cp = b.ctl("status", "--json")
    assert cp.returncode == ExitCode.DAEMON_UNAVAILABLE


@pytest.mark.slow  # two homes, two daemons auto-started; its siblings stay
def test_doctor_says_another_homes_daemon_answers_and_how_to_part_them(
    homes: list[Tsuku],
) -> None:
    a, b = homes
    pid = status(a)["pid"]
    socket = str(a.home / "run" / "tsukud.sock")
    b.env["TSUKU_SOCKET"] = socket  # a mix-up
    cp = b.ctl("doctor", "--json")
    assert cp.returncode == ExitCode.GENERAL, cp.stderr
    checks = {c["check"]: c for c in json.loads(cp.stdout)["checks"]}
    assert checks["daemon"] == {
        "check": "daemon",
        "state": "FAIL",
        "detail": f"another home's daemon answers on this socket ({socket}): "
        f"it serves {a.home}, not {b.home}",
        "fix": "Unset TSUKU_SOCKET: each home then gets a daemon of its own (or stop that "
        f"one: TSUKU_HOME={a.home} tsukuctl daemon stop).",
    }
    assert checks["sandbox"]["state"] == "skip"  # nothing asked of a stranger's daemon
    human = b.ctl("doctor").stdout.splitlines()
    assert human[0].startswith("FAIL") and "another home's daemon answers" in human[0]
    assert status(a)["pid"] == pid


@pytest.mark.slow  # a daemon auto-started by a real client; its siblings stay
def test_a_long_home_gets_a_short_socket(runtime: Path) -> None:
    base = short_home()
    home = base / ("long-home-" + "d" * 120)
    assert len(str(home / "run" / "tsukud.sock")) > paths.MAX_SOCKET_PATH
    t = without_socket(home, None)
    try:
        cp = t.ctl("status", "--json")
        assert cp.returncode == 0, cp.stderr
        st = json.loads(cp.stdout)
        assert st["home"] == str(home)
        sock = Path(st["socket"])
        assert len(str(sock)) <= paths.MAX_SOCKET_PATH
        assert sock.parent == Path(paths.shared_socket_dir())
        assert (sock.parent.stat().st_mode & 0o777) == 0o700
        assert sock.parent.stat().st_uid == sock.stat().st_uid
        # The same home always finds the same daemon; a runtime dir is preferred.
        assert json.loads(t.ctl("status", "--json", check=True).stdout)["pid"] == st["pid"]
        t.ctl("daemon", "stop", check=True)
        t.env["XDG_RUNTIME_DIR"] = str(runtime)
        cp = t.ctl("status", "--json")
        assert cp.returncode == 0, cp.stderr
        assert Path(json.loads(cp.stdout)["socket"]).parent == runtime / "tsuku"
    finally:
        t.stop_all()
        shutil.rmtree(base, ignore_errors=True)


def test_a_too_long_socket_given_explicitly_is_a_usage_error(tsuku: Tsuku) -> None:
    tsuku.env["TSUKU_SOCKET"] = str(tsuku.home / ("s" * 120) / "tsukud.sock")
    cp = tsuku.ctl("status")
    assert cp.returncode == ExitCode.USAGE
    assert "a Unix socket path may have at most" in cp.stderr and "Traceback" not in cp.stderr
    proc = tsuku.start(wait=False)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.CONFIG, err
    assert b"a Unix socket path may have at most" in err and b"Traceback" not in err
