"""`-q` and `-v` against a real daemon: quiet keeps the result line and errors only,
verbose adds where the request went, its time and its session."""

from __future__ import annotations

from tests.conftest import Tsuku
from tsukud.errors import ExitCode


def test_quiet_install_prints_the_result_line_only(inst: Tsuku) -> None:
    cp = inst.ctl("-q", "install", "kind")
    assert cp.returncode == 0 and cp.stderr == ""
    assert cp.stdout.startswith("installed kind 2.5.0") and len(cp.stdout.splitlines()) == 1


def test_quiet_still_prints_errors(inst: Tsuku) -> None:
    cp = inst.ctl("verify", "kind", "-q")
    assert cp.returncode == ExitCode.GENERAL
    assert cp.stderr.startswith("tsukuctl: kind is not installed") and "hint:" in cp.stderr


def test_verbose_shows_the_request_its_time_and_session(inst: Tsuku) -> None:
    cp = inst.ctl("install", "kind", "-v")
    assert cp.returncode == 0, cp.stderr
    debug = [line for line in cp.stderr.splitlines() if line.startswith("debug: ")]
    assert debug[0] == f"debug: request install on {inst.socket}"
    assert any(line.startswith("debug: install answered in ") for line in debug)
    assert any(line.startswith("debug: session install-") for line in debug)
    timings = [line for line in debug if line.startswith("debug: daemon timings: ")]
    assert len(timings) == 1 and ", resolve " in timings[0] and " ms" in timings[0]
    assert "resolving kind" in cp.stderr  # the usual progress is still there
    plain = inst.ctl("list")
    assert "debug:" not in plain.stderr
