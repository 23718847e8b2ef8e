"""How progress is rendered, by where it goes: the pure parts (what a stream can take,
the speed and time left, the download line) and the frame renderer on a fake clock,
writing to real streams (a pseudo-terminal, a pipe)."""

from __future__ import annotations

import io
import os
import pty
from collections.abc import Iterator

import pytest

from tsukuctl.progress import Display, Progress, Rate, Style, download_text, eta, size


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def tty() -> Iterator[io.TextIOWrapper]:
    """A real terminal stream: the slave end of a pseudo-terminal."""
    master, slave = pty.openpty()
    stream = io.TextIOWrapper(io.FileIO(slave, "w"), encoding="utf-8", write_through=True)
    yield stream
    stream.close()
    os.close(master)


def test_style_by_stream_and_environment(tty: io.TextIOWrapper) -> None:
    pipe = io.StringIO()
    assert vars(Style.of(tty, {"TERM": "xterm"})) == {"live": True, "color": True}
    assert vars(Style.of(tty, {"TERM": "xterm", "NO_COLOR": "1"})) == {
        "live": True,
        "color": False,
    }
    assert vars(Style.of(tty, {"TERM": "xterm", "NO_COLOR": ""})) == {"live": True, "color": True}
    assert vars(Style.of(tty, {"TERM": "dumb"})) == {"live": False, "color": False}
    assert vars(Style.of(pipe, {"TERM": "xterm"})) == {"live": False, "color": False}
    assert Style(live=True, color=True).paint("ok", "ok") == "\x1b[32mok\x1b[0m"
    assert Style(live=True, color=False).paint("ok", "ok") == "ok"


def test_rate_is_measured_over_the_last_seconds() -> None:
    clock = Clock()
    rate = Rate(clock)
    clock.now += 0.1
    rate.update(1_000_000)  # a first burst: not a speed yet
    assert rate.per_s is None and rate.left(1_000_000, 10_000_000) is None
    for _ in range(10):  # then 100 KB every 0.1 s: 1 MB/s
        clock.now += 0.1
        rate.update(rate._samples[-1][1] + 100_000)
    assert rate.per_s == pytest.approx(2_000_000 / 1.1)  # the burst still counts
    for _ in range(40):  # 4 s later the burst is out of the window
        clock.now += 0.1
        rate.update(rate._samples[-1][1] + 100_000)
    assert rate.per_s == pytest.approx(1_000_000, rel=0.01)
    done = rate._samples[-1][1]
    assert rate.left(done, done + 3_000_000) == pytest.approx(3.0, rel=0.01)


def test_the_download_line_with_and_without_a_size() -> None:
    clock = Clock()
    rate = Rate(clock)
    clock.now += 2
    rate.update(2 * 1024 * 1024)
    assert download_text("a.tar.gz", 2 * 1024 * 1024, 8 * 1024 * 1024, rate) == (
        "downloading a.tar.gz  2.0 MB / 8.0 MB (25%)  1.0 MB/s  ETA 6s"
    )
    assert download_text("a.tar.gz", 2 * 1024 * 1024, None, rate) == (
        "downloading a.tar.gz  2.0 MB  1.0 MB/s"
    )
    assert [size(None), size(512), size(1536), eta(59.2), eta(61), eta(3700)] == [
        "?",
        "512 B",
        "1.5 KB",
        "1m00s",  # rounded up: never "0s" while bytes are left
        "1m01s",
        "1h01m",
    ]


def frames(total: int | None, step: int, every: float, count: int) -> Iterator[tuple[float, dict]]:  # type: ignore[type-arg]
    for i in range(count + 1):
        yield every, {"stage": "downloading", "file": "x.tgz", "bytes": i * step, "total": total}


def test_plain_output_is_throttled_and_announces_only_long_downloads() -> None:
    clock = Clock()
    pipe = io.StringIO()
    progress = Progress(display=Display(pipe, env={}), clock=clock)
    progress({"stage": "downloading", "file": "quick", "bytes": 0, "total": 10})
    progress({"stage": "downloading", "file": "quick", "bytes": 10, "total": 10})
    assert pipe.getvalue() == "downloaded quick (10 B in 0.0s)\n"
    pipe.seek(0)
    pipe.truncate()
    for every, frame in frames(None, 100_000, 0.1, 120):  # 12 s, size unknown
        clock.now += every
        progress(frame)
    progress({"stage": "downloading", "file": "x.tgz", "bytes": 12_000_000, "total": 12_000_000})
    lines = pipe.getvalue().splitlines()
    assert lines[0] == "downloading x.tgz (?)…"
    running = [line for line in lines if line.startswith("downloading x.tgz  ")]
    assert len(running) == 2, lines  # every 5 s, not every frame
    assert all(line.endswith("  976.6 KB/s") for line in running), running
    assert lines[-1].startswith("downloaded x.tgz (11.4 MB in 12.")
    assert "\r" not in pipe.getvalue() and "\x1b" not in pipe.getvalue()


def test_quiet_shows_nothing() -> None:
    pipe = io.StringIO()
    progress = Progress(quiet=True, display=Display(pipe, quiet=True))
    progress({"stage": "resolving", "tool": "x"})
    progress({"stage": "downloading", "file": "x", "bytes": 1, "total": 1})
    progress.close()
    assert pipe.getvalue() == ""


def test_placeholders_left_in_a_bottle_are_one_warning_line() -> None:
    pipe = io.StringIO()
    progress = Progress(display=Display(pipe, env={}))
    frame = {
        "stage": "relocation_left_alone",
        "tool": "git",
        "count": 5,
        "files": ["bin/a", "bin/b", "libexec/c"],
        "placeholders": ["@@HOMEBREW_JAVA@@", "@@HOMEBREW_PREFIX@@"],
    }
    progress(frame)
    progress({**frame, "tool": "hello", "count": 1, "files": ["share/blob.bin"]})
    assert pipe.getvalue().splitlines() == [
        "warning: git: 5 files keep a Homebrew placeholder that could not be rewritten "
        "(@@HOMEBREW_JAVA@@, @@HOMEBREW_PREFIX@@): bin/a, bin/b, libexec/c, …",
        "warning: hello: 1 file keeps a Homebrew placeholder that could not be rewritten "
        "(@@HOMEBREW_JAVA@@, @@HOMEBREW_PREFIX@@): share/blob.bin",
    ]


def test_a_cpan_distribution_checked_against_checksums_says_so() -> None:
    pipe = io.StringIO()
    progress = Progress(display=Display(pipe, env={}))
    frame = {"stage": "verified_checksum", "file": "A-1.0.tar.gz", "sha256": "ab"}
    progress({**frame, "checked": ["cpan_checksums"]})
    assert pipe.getvalue() == "sha256 ab (matches the CPAN mirror's CHECKSUMS)\n"
