"""What ``tsukuctl install`` shows while it works, by where its output goes, and what
Ctrl-C does: the real client on a pseudo-terminal (python ``pty``) or on pipes, a real
daemon, a download host on loopback that serves a 1.5 MB file slowly.

* a terminal: the download line is redrawn in place with size, speed and time left,
  finished stages in colour;
* ``NO_COLOR``: the same without colour; ``TERM=dumb`` and pipes: no redraws and no
  escape sequences at all, one plain line per stage;
* Ctrl-C: one line, "cancelled: nothing was installed", exit 130, nothing installed.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.conftest import Tsuku
from tests.integration.install.conftest import installed
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, kubectl_recipe, script
from tsukud.testing.download_host import FakeDownloadHost

SIZE = 1_500_000
BODY = script("Client Version: v1.30.2") + b"#" * (SIZE - 40) + b"\n"
REDRAW = "\r\x1b[K"


@pytest.fixture
def host(inst: Tsuku) -> Iterator[FakeDownloadHost]:
    with FakeDownloadHost() as fake:
        fake.add_json("/release/stable.json", {"version": "v1.30.2"})
        fake.add(f"/release/v1.30.2/bin/{HOST.os}/{HOST.arch}/kubectl", BODY)
        local_recipe(inst, "kubectl", kubectl_recipe(fake))
        yield fake


class PtyRun:
    """``tsukuctl`` with a pseudo-terminal as its controlling terminal and every stream."""

    def __init__(self, t: Tsuku, *args: str, **env: str) -> None:
        self.raw = b""
        pid, fd = pty.fork()
        if pid == 0:
            try:
                os.execve(
                    sys.executable, [sys.executable, "-m", "tsukuctl", *args], {**t.env, **env}
                )
            finally:
                os._exit(127)
        self.pid, self.fd = pid, fd

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")

    def read_until(self, pattern: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.text):
            left = deadline - time.monotonic()
            assert left > 0, f"no {pattern!r} within {timeout} s:\n{self.text!r}"
            if not self._read(left):
                raise AssertionError(f"exited before {pattern!r}:\n{self.text!r}")

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:  # EIO: the other side is gone
            chunk = b""
        self.raw += chunk
        return bool(chunk)

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def wait(self, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while self._read(max(0.0, deadline - time.monotonic())):
            assert time.monotonic() < deadline, f"still running:\n{self.text!r}"
        _, status = os.waitpid(self.pid, 0)
        os.close(self.fd)
        return os.waitstatus_to_exitcode(status)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def install_on_pty(t: Tsuku, **env: str) -> tuple[str, int]:
    run = PtyRun(t, "install", "kubectl", **env)
    try:
        status = run.wait()
    finally:
        run.kill()
    return run.text, status


@pytest.mark.slow  # a download throttled to ~2.5 s; the other terminal tests stay
def test_on_a_terminal_the_download_line_is_redrawn_with_speed_and_eta(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    host.rate = 600_000.0  # about 2.5 s
    text, status = install_on_pty(inst, TERM="xterm")
    assert status == 0, text
    redraws = [part.split("\r\n")[0] for part in text.split(REDRAW)[1:] if part.strip()]
    live = [r for r in redraws if r.startswith("downloading kubectl  ")]
    assert len(live) >= 3, text  # redrawn as the bytes came in
    assert any(re.search(r"/ 1\.4 MB \(\d+%\)  \d+\.\d KB/s  ETA \d+s$", r) for r in live), live
    assert re.search(r"downloaded kubectl \(1\.4 MB in \d+\.\ds, [\d.]+ KB/s\)\r\n", text), text
    assert "\x1b[32msha256 " in text  # a checked checksum, in green
    assert "installed kubectl 1.30.2" in text


def test_no_color_keeps_the_redraws_and_drops_the_colour(
    inst: Tsuku, host: FakeDownloadHost
) -> None:
    host.rate = 3_000_000.0
    text, status = install_on_pty(inst, TERM="xterm", NO_COLOR="1")
    assert status == 0, text
    assert REDRAW in text and "sha256 " in text
    assert not re.search(r"\x1b\[[0-9;]*m", text), repr(text)


@pytest.mark.slow  # a download throttled to ~2.5 s; the other terminal tests stay
def test_a_dumb_terminal_gets_plain_lines(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.rate = 600_000.0
    text, status = install_on_pty(inst, TERM="dumb")
    assert status == 0, text
    assert "\x1b" not in text and "\r\r" not in text, repr(text)
    lines = text.replace("\r\n", "\n").splitlines()
    assert "downloading kubectl (1.4 MB)…" in lines, lines
    assert any(line.startswith("downloaded kubectl (1.4 MB in ") for line in lines), lines


@pytest.mark.slow  # a download throttled to ~2.5 s; the other terminal tests stay
def test_a_pipe_gets_one_plain_line_per_stage(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.rate = 600_000.0
    cp = inst.ctl("install", "kubectl")
    assert cp.returncode == 0, cp.stderr
    assert "\x1b" not in cp.stderr and "\r" not in cp.stderr, repr(cp.stderr)
    lines = cp.stderr.splitlines()
    assert lines[0] == "resolving kubectl…", lines
    assert lines[1] == "downloading kubectl (1.4 MB)…", lines
    # About 2.5 s of download: throttled to the start and the end, no running numbers.
    assert not [x for x in lines if x.startswith("downloading kubectl  ")], lines
    assert lines[2].startswith("downloaded kubectl (1.4 MB in "), lines


def test_ctrl_c_cancels_says_so_and_exits_130(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.rate = 50_000.0  # 30 s: long enough to be interrupted
    run = PtyRun(inst, "install", "kubectl", TERM="xterm")
    try:
        run.read_until(r"downloading kubectl  \d")
        started = time.monotonic()
        run.type(b"\x03")  # what the terminal sends for Ctrl-C: SIGINT to the client
        status = run.wait(timeout=20)
    finally:
        run.kill()
    assert status == 130, run.text
    after = run.text.rsplit("downloading kubectl", 1)[1]
    assert after.count("cancelled") == 1, repr(after)
    assert re.search(r"\r\ncancelled: nothing was installed\r\n$", run.text), repr(run.text)
    assert "Traceback" not in run.text and "KeyboardInterrupt" not in run.text
    assert time.monotonic() - started < 10  # the daemon stopped the download at once
    assert installed(inst) == {}
    assert not (inst.home / "bin" / "kubectl").exists()
    calls = [json.loads(line) for line in log_lines(inst) if '"rpc.call"' in line]
    assert {"method": "install", "outcome": "cancelled"}.items() <= calls[-1].items(), calls


def log_lines(t: Tsuku) -> list[str]:
    deadline = time.monotonic() + 5
    while True:  # the daemon logs the call as it unwinds, just after the answer
        lines = (t.home / "logs" / "tsukud.log").read_text().splitlines()
        if any('"outcome": "cancelled"' in ln or '"outcome":"cancelled"' in ln for ln in lines):
            return lines
        if time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


def test_ctrl_c_on_pipes_exits_130_with_the_line(inst: Tsuku, host: FakeDownloadHost) -> None:
    host.rate = 50_000.0
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", "install", "kubectl"],
        env=inst.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == "resolving kubectl…\n"
        assert proc.stderr.readline() == "downloading kubectl (1.4 MB)…\n"
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 130, rest
    assert rest == "cancelled: nothing was installed\n", rest
    assert out == ""
    assert installed(inst) == {}
