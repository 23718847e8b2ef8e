"""Shared fixtures: an isolated TSUKU_HOME and a real tsukud process.

Unix socket paths are limited to ~108 bytes, and pytest's tmp_path can be longer, so
homes live in short directories under /tmp.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# The plugins below (pytest_plugins) are imported here first: rewrite their asserts too.
pytest.register_assert_rewrite("tests.skip_policy", "tests.collect_floor")

from tests import ctl_runner, daemon_forks, hypothesis_profiles, scheduling  # noqa: E402
from tests.skip_policy import in_ci  # noqa: E402, F401  (imported from here by tests)
from tsukuctl.client import Client  # noqa: E402
from tsukud.testing.http import take_violations, unclaimed  # noqa: E402

hypothesis_profiles.load()  # before any test module makes its settings

pytest_plugins = [
    "pytester",  # tests of the fixtures below run pytest in-process
    "tests.skip_policy",  # in CI a skip is a failure
    "tests.collect_floor",  # a full run collects no fewer tests than the floor
]

REPO = Path(__file__).resolve().parents[1]


# Command words whose subject is processes (they start, stop or run daemons and
# clients themselves): always a real tsukuctl.
SPAWNING_COMMANDS = frozenset({"daemon", "demo"})


def ctl_spawns_everywhere() -> bool:
    """``TSUKU_CTL_SPAWN=1``: every ``ctl`` call a real process, the suite as it was
    before calls ran in-process (to check that both ways agree)."""
    return os.environ.get("TSUKU_CTL_SPAWN") == "1"


CLOSED_PORT = "http://127.0.0.1:9"
OUTSIDE_ENDPOINTS = (
    "TSUKU_GITHUB_API_URL",
    "TSUKU_GITHUB_URL",
    "TSUKU_REGISTRY_URL",
    "TSUKU_MANIFEST_URL",
    "ANTHROPIC_BASE_URL",
    "TSUKU_GEMINI_BASE_URL",
    "TSUKU_CRATES_URL",
    "TSUKU_CRATES_INDEX_URL",
    "TSUKU_NPM_URL",
    "TSUKU_NPM_DOWNLOADS_URL",
    "TSUKU_PYPI_URL",
    "TSUKU_RUBYGEMS_URL",
    "TSUKU_GOPROXY_URL",
    "TSUKU_DDG_URL",
    "TSUKU_TAVILY_URL",
    "TSUKU_BRAVE_URL",
    "TSUKU_HOMEBREW_API_URL",
    "TSUKU_HOMEBREW_REGISTRY_URL",
    "TSUKU_CPAN_MIRROR_URL",
)


def base_env(home: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TSUKU_", "XDG_RUNTIME_DIR", "ANTHROPIC_", "GEMINI_", "GOOGLE_API"))
        and k not in ("GITHUB_TOKEN", "GH_TOKEN", "TAVILY_API_KEY", "BRAVE_API_KEY")
        and k.lower() not in ("https_proxy", "http_proxy", "all_proxy", "no_proxy")
    }
    # No test talks to the internet: every external endpoint points at a closed loopback
    # port unless the test points it at its fake (connection refused, at once).
    for name in OUTSIDE_ENDPOINTS:
        env[name] = CLOSED_PORT
    env["TSUKU_HOME"] = str(home)
    env["TSUKU_SOCKET"] = str(home / "run" / "tsukud.sock")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


@dataclass
class Tsuku:
    """A TSUKU_HOME with helpers to run the real binaries against it."""

    home: Path
    env: dict[str, str]
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def socket(self) -> Path:
        return Path(self.env["TSUKU_SOCKET"])

    def ctl(
        self,
        *args: str,
        input: str | None = None,
        check: bool = False,
        timeout: float = 60,
        shell_env: dict[str, str] | None = None,
        spawn: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """``tsukuctl`` in this home; ``shell_env`` adds to the environment of this run
        only (a variable exported in the user's shell after the daemon started).

        The command runs in this process (tests/ctl_runner.py: same environment, stdin,
        output and exit code as a child would have) when a daemon this fixture started is
        running, so nothing but the command is exercised; it is a real ``python -m
        tsukuctl`` process with ``spawn=True``, in a test marked ``ctl_process``, for the
        commands that manage processes (:data:`SPAWNING_COMMANDS`), when no daemon of
        ours runs (the call would auto-start one), off the main thread, and for every
        call under ``TSUKU_CTL_SPAWN=1``."""
        env = {**self.env, **(shell_env or {})}
        if self._in_process(args, spawn):
            cp = ctl_runner.run(args, env, input=input, timeout=timeout)
        else:
            cp = subprocess.run(
                [sys.executable, "-m", "tsukuctl", *args],
                env=env,
                input=input,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        if check and cp.returncode != 0:
            raise AssertionError(f"tsukuctl {' '.join(args)} failed:\n{cp.stdout}\n{cp.stderr}")
        return cp

    def _in_process(self, args: tuple[str, ...], spawn: bool) -> bool:
        if spawn or ctl_runner.spawn_in_this_test or ctl_spawns_everywhere():
            return False
        if not ctl_runner.can_run_here():
            return False
        words = [a for a in args if not a.startswith("-")]
        if words and words[0] in SPAWNING_COMMANDS:
            return False
        # Only against a daemon we started and that still runs: a client that finds
        # none starts one itself, and that daemon's parent must not be this process.
        return any(p.poll() is None for p in self.procs)

    def start(self, *extra: str, wait: bool = True) -> subprocess.Popen[bytes]:
        """``tsukud --foreground`` in this home: forked from a parent that has imported
        it already (tests/daemon_forks.py: the same process otherwise), or a fresh
        ``python -m tsukud`` for the tests whose subject is the process
        (``daemon_forks.EXEC_STARTS``) and under ``TSUKU_DAEMON_EXEC=1``."""
        argv = ["--foreground", *extra]
        proc: subprocess.Popen[bytes]
        if self._forked():
            proc = daemon_forks.ZYGOTE.spawn(argv, self.env)
        else:
            proc = subprocess.Popen(
                [sys.executable, "-m", "tsukud", *argv],
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        self.procs.append(proc)
        if wait:
            self.wait_ready(proc)
        return proc

    def _forked(self) -> bool:
        if daemon_forks.exec_in_this_test or daemon_forks.exec_everywhere():
            return False
        return daemon_forks.ZYGOTE.can_fork(self.env)

    def wait_ready(self, proc: subprocess.Popen[bytes] | None = None, timeout: float = 15) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with self.client(autostart=False) as c:
                    c.call("ping")
                    return
            except Exception:
                if proc is not None and proc.poll() is not None:
                    _out, err = proc.communicate()
                    raise AssertionError(
                        f"tsukud exited {proc.returncode}: {err.decode()}"
                    ) from None
                time.sleep(0.01)
        raise AssertionError("tsukud did not become ready")

    def client(self, autostart: bool = False) -> Client:
        old = os.environ.copy()
        os.environ.update({k: self.env[k] for k in ("TSUKU_HOME", "TSUKU_SOCKET")})
        try:
            return Client.connect(self.socket, autostart=autostart)
        finally:
            os.environ.clear()
            os.environ.update(old)

    def call(self, method: str, params: dict[str, Any] | None = None) -> Any:
        with self.client() as c:
            return c.call(method, params)

    def daemon_pid(self) -> int:
        return int(self.call("ping")["pid"])

    def stop_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
            for s in (p.stdout, p.stderr):
                if s is not None:
                    s.close()
        # Daemons started by tsukuctl itself (auto-start) are not in procs.
        lock = self.home / "run" / "tsukud.lock"
        if lock.exists():
            pid_text = lock.read_text().strip()
            if pid_text.isdigit():
                try:
                    os.kill(int(pid_text), signal.SIGTERM)
                    for _ in range(500):
                        reap(int(pid_text))
                        os.kill(int(pid_text), 0)
                        time.sleep(0.01)
                except (ProcessLookupError, PermissionError):
                    pass


def start_together(*homes: Tsuku) -> list[subprocess.Popen[bytes]]:
    """Start a daemon in each home at once and wait until each answers: the start-ups
    overlap (as a team's may, sharing a ledger) instead of adding up."""
    procs = [t.start(wait=False) for t in homes]
    for t, proc in zip(homes, procs, strict=True):
        t.wait_ready(proc)
    return procs


def reap(pid: int) -> None:
    """Collect ``pid`` if it is an exited child of this process (a daemon auto-started
    by an in-process ``tsukuctl``), so it does not linger as a zombie."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: a worker per CPU and one more. Integration tests spend much of their
    time waiting (a container's start, a package manager, a daemon's timeout), and the
    extra worker runs while they wait; more would only add CPU contention to tests
    with deadlines."""
    return len(os.sched_getaffinity(0)) + 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slow set and the other long tests first, dealt in turn to the workers'
    shares (tests/scheduling.py): each worker starts with its part of them and the many
    short tests fill the workers at the end, instead of a long test starting last or
    all of them queued on one worker."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    items[:] = scheduling.deal(
        items,
        workers,
        lambda item: scheduling.rank(item.nodeid, item.get_closest_marker("slow") is not None),
    )


@pytest.fixture(autouse=True)
def fakes_saw_no_refused_request() -> Iterator[None]:
    """Fail the test if a fake service recorded a request the real service would have
    refused (and the test did not claim it with ``take_violations()``): the product
    must not pass by coping with an answer the world would never have given it."""
    earlier = take_violations()
    assert not earlier, "before this test: " + unclaimed(earlier)
    yield
    found = take_violations()
    if found:
        pytest.fail(unclaimed(found), pytrace=False)


def short_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="tk-", dir="/tmp"))


@pytest.fixture(autouse=True)
def ctl_process_marker(request: pytest.FixtureRequest) -> Iterator[None]:
    """``@pytest.mark.ctl_process``: every ``Tsuku.ctl`` of this test is a real process,
    whichever fixture or helper made its ``Tsuku``."""
    ctl_runner.spawn_in_this_test = request.node.get_closest_marker("ctl_process") is not None
    yield
    ctl_runner.spawn_in_this_test = False


class Retiring:
    """Daemons of finished tests, stopped and their homes removed in the background.

    A daemon's orderly stop takes from 0.2 s to over a second (more once it has loaded
    the LLM SDKs), time in which the next test can already run. A test's daemons get
    SIGTERM at its teardown (so they stop serving at once); a thread waits for them
    (SIGKILL after 10 s, as ``stop_all`` does) and then removes the home. The session
    waits for all of them at its end, so none outlives the run.
    """

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []

    def retire(self, t: Tsuku) -> None:
        for p in t.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        thread = threading.Thread(target=self._finish, args=(t,), daemon=True)
        thread.start()
        self._threads = [th for th in self._threads if th.is_alive()] + [thread]

    @staticmethod
    def _finish(t: Tsuku) -> None:
        t.stop_all()
        shutil.rmtree(t.home, ignore_errors=True)

    def wait(self) -> None:
        for thread in self._threads:
            thread.join()
        self._threads.clear()


RETIRING = Retiring()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    RETIRING.wait()
    daemon_forks.ZYGOTE.close()


@pytest.fixture(autouse=True)
def daemon_exec_named(request: pytest.FixtureRequest) -> Iterator[None]:
    """The tests named in ``daemon_forks.EXEC_STARTS`` start fresh ``python -m tsukud``
    processes, whichever fixture or helper starts their daemons."""
    daemon_forks.exec_in_this_test = daemon_forks.wants_exec(request.node.nodeid)
    yield
    daemon_forks.exec_in_this_test = False


@pytest.fixture
def tsuku() -> Iterator[Tsuku]:
    home = short_home()
    t = Tsuku(home, base_env(home))
    try:
        yield t
    finally:
        RETIRING.retire(t)


@pytest.fixture
def daemon(tsuku: Tsuku) -> Tsuku:
    """A running tsukud (foreground child process) for this test."""
    tsuku.start()
    return tsuku
