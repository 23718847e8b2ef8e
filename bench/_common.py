"""Shared helpers for the benchmarks: a throw-away TSUKU_HOME, a real daemon, stats, output.

Every benchmark owns its environment: a short directory under /tmp (Unix socket paths are
limited to ~108 bytes) holding TSUKU_HOME and TSUKU_SOCKET, and a ``python -m tsukud
--foreground`` child process started with that environment and stopped (then the
directory removed) when the benchmark ends, even on error or Ctrl-C. Traffic goes only
to that local Unix socket.

Output lines have one shape, so ``run_all`` (and people) can read them::

    name: value unit (ratio vs baseline)
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # `python bench/x.py` puts bench/ first, not the repo
    sys.path.insert(0, str(REPO))

from tsukuctl.client import Client  # noqa: E402

PY = sys.executable
BIN = Path(PY).parent  # the venv's bin/ (console scripts live next to the interpreter)

# ---- command line ------------------------------------------------------------------------


def parse_args(
    description: str, argv: Sequence[str] | None = None, *, ledger: bool = False
) -> argparse.Namespace:
    """The common options; ``ledger``: the benchmark builds a ledger, whose size
    ``--events N`` sets (``args.events``, None for the benchmark's own default)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument(
        "--quick",
        action="store_true",
        default=os.environ.get("TSUKU_BENCH_QUICK", "") not in ("", "0"),
        help="smaller sizes (also: TSUKU_BENCH_QUICK=1)",
    )
    if ledger:
        ap.add_argument(
            "--events",
            type=int,
            default=None,
            metavar="N",
            help="events in the ledger it builds (default: the benchmark's own size)",
        )
    args = ap.parse_args(argv)
    # SIGTERM (run_all's time limit, a CI timeout) unwinds like Ctrl-C: the finally
    # blocks stop the daemon and remove the temporary home.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    return args


# ---- environment -------------------------------------------------------------------------

_STRIP_PREFIXES = ("TSUKU_", "XDG_RUNTIME_DIR", "ANTHROPIC_", "GEMINI_", "GOOGLE_API", "OPENAI_")
_STRIP_NAMES = ("GITHUB_TOKEN", "GH_TOKEN", "TAVILY_API_KEY", "BRAVE_API_KEY", "DOCKER_HOST")


def bench_env(home: Path) -> dict[str, str]:
    """The caller's environment minus anything tsuku or a provider would pick up."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(_STRIP_PREFIXES) and k not in _STRIP_NAMES
    }
    env["TSUKU_HOME"] = str(home)
    env["TSUKU_SOCKET"] = str(home / "run" / "tsukud.sock")
    # Bytecode caches are left on: an installed tsuku has its .pyc files, and without
    # them every run would recompile the client (tens of ms), measuring the wrong thing.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def daemon_argv() -> list[str]:
    """``python -m tsukud --foreground``; TSUKU_BENCH_DAEMON=script.py runs that script
    instead (with the same arguments), to A/B a patched daemon without touching the tree."""
    alt = os.environ.get("TSUKU_BENCH_DAEMON")
    return [PY, alt, "--foreground"] if alt else [PY, "-m", "tsukud", "--foreground"]


@dataclass
class Home:
    """A temporary TSUKU_HOME and, optionally, the daemon serving it."""

    path: Path
    env: dict[str, str]
    proc: subprocess.Popen[bytes] | None = None
    _stderr: Any = field(default=None, repr=False)

    @property
    def socket(self) -> str:
        return self.env["TSUKU_SOCKET"]

    @property
    def db(self) -> Path:
        return self.path / "tsuku.db"

    # -- daemon --

    def spawn(self) -> subprocess.Popen[bytes]:
        """Start ``python -m tsukud --foreground`` without waiting for it."""
        if self._stderr is None:
            self._stderr = open(self.path / "bench-daemon.stderr", "ab")  # noqa: SIM115
        self.proc = subprocess.Popen(
            daemon_argv(),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._stderr,
            stderr=self._stderr,
            start_new_session=True,
        )
        return self.proc

    def start(self, timeout: float = 30.0) -> float:
        """Start the daemon and wait until ``ping`` answers; returns the seconds it took."""
        t0 = time.perf_counter()
        proc = self.spawn()
        wait_ping(self.socket, proc, timeout=timeout)
        return time.perf_counter() - t0

    def stop(self, timeout: float = 30.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(Exception), self.client() as c:
            c.call("daemon.stop")
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def client(self) -> Client:
        return Client.connect(self.socket, autostart=False)

    def stderr_tail(self) -> str:
        try:
            return (self.path / "bench-daemon.stderr").read_text(errors="replace")[-2000:]
        except OSError:
            return ""

    def close(self) -> None:
        self.stop()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None


@contextlib.contextmanager
def temp_home(prefix: str = "tkb-") -> Iterator[Home]:
    path = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    h = Home(path, bench_env(path))
    try:
        yield h
    finally:
        try:
            h.close()
        finally:
            shutil.rmtree(path, ignore_errors=True)


@contextlib.contextmanager
def running_daemon(prefix: str = "tkb-") -> Iterator[Home]:
    with temp_home(prefix) as h:
        h.start()
        yield h


def try_ping(path: str) -> bool:
    """One connect + ping; False while nothing answers yet."""
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    except OSError:
        return False
    try:
        s.connect(path)
        c = Client(s)
        c.call("ping")
        return True
    except OSError:
        return False
    except Exception:  # DaemonUnavailable: accepted, then closed (still starting/stopping)
        return False
    finally:
        s.close()


def wait_ping(
    path: str, proc: subprocess.Popen[bytes] | None, timeout: float = 30.0, poll: float = 0.001
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if try_ping(path):
            return
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"tsukud exited with status {proc.returncode} before answering")
        time.sleep(poll)
    raise RuntimeError(f"tsukud did not answer on {path} within {timeout:.0f} s")


# ---- statistics ----------------------------------------------------------------------------


def median(xs: Sequence[float]) -> float:
    return float(statistics.median(xs))


def percentile(xs: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100) of unsorted data: the smallest value with at
    least p % of the data at or below it, i.e. the ceil(p/100 * n)-th smallest. Exact
    arithmetic, so 95 % of 20 values is the 19th, not the 20th by a rounding error."""
    s = sorted(xs)
    if not s:
        return float("nan")
    rank = math.ceil(Fraction(str(p)) * len(s) / 100)
    return float(s[max(1, min(len(s), rank)) - 1])


def cpu_seconds(pid: int, thread: int | None = None) -> float | None:
    """User + system CPU time a process (or one of its threads: ``thread``, the main
    thread's id being the pid) has used so far (Linux /proc; None elsewhere).

    Less sensitive than wall time to other work on a shared machine: the figure to compare
    when the wall-clock ones are noisy. Resolution is one clock tick (usually 10 ms).
    """
    path = f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat"
    try:
        with open(path) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def time_cmd(argv: Sequence[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one run of a command (fork + exec + exit), output discarded."""
    t0 = time.perf_counter()
    cp = subprocess.run(
        list(argv),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        check=False,
    )
    dt = time.perf_counter() - t0
    if cp.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({cp.returncode}): {cp.stderr.decode()}")
    return dt


# ---- output --------------------------------------------------------------------------------


def fmt(v: float) -> str:
    if v == 0 or abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def delta(v: float) -> str:
    """A signed difference: ``+3.20`` / ``-0.412``."""
    return ("+" if v >= 0 else "-") + fmt(abs(v))


def line(
    name: str, value: float, unit: str, ratio: float | None, baseline: str, extra: str = ""
) -> None:
    """``name: value unit (ratio vs baseline)``; ``extra`` is appended after a semicolon."""
    if ratio is None:
        paren = f"(baseline: {baseline}" if baseline else "("
    else:
        paren = f"({ratio:.2f}x vs {baseline}"
    if extra:
        paren += ("; " if paren != "(" else "") + extra
    print(f"{name}: {fmt(value)} {unit} {paren})", flush=True)


def goal(name: str, ok: bool, text: str) -> None:
    print(f"{name}.goal: {'met' if ok else 'NOT met'} ({text})", flush=True)


def not_measured(name: str, target: str, reason: str) -> None:
    """A goal that could not be measured here is said so, with why: a missing goal line
    would read as nothing to report."""
    print(f"{name}.goal: NOT MEASURED (goal {target}; {reason})", flush=True)


def note(name: str, text: str) -> None:
    print(f"{name}.method: {text}", flush=True)


def header(name: str, quick: bool) -> None:
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(
        f"# {name} (python {sys.version.split()[0]}, {os.cpu_count()} cpus,"
        f" load average {load}{', --quick' if quick else ''})",
        flush=True,
    )
