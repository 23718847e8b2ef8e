"""A real PostgreSQL server for tests: Debian's ``postgresql`` package, started with
``initdb``/``pg_ctl`` in a temporary directory on a free loopback port (never the system
service), once per pytest-xdist worker, and one fresh database per test.

The server runs as a non-root user (``initdb`` refuses root): under root that is the
``postgres`` system user the package creates (its data directory is chowned to it and
the commands run through ``runuser``); otherwise the current user. It listens on
127.0.0.1 only, with no Unix socket, and every role logs in with a password
(scram-sha-256), so a test that gives a daemon its own role exercises real
authentication. Durability settings are relaxed (``fsync=off``): a test server's data
must survive its process being killed (the page cache keeps it), not the machine
losing power.

``scripts/dev setup`` installs the package; without it the fixtures skip locally and
fail in CI (``tests/skip_policy.py``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

ADMIN = "tsuku_admin"
_BIN_GLOB = "/usr/lib/postgresql/*/bin"


def find_bin() -> Path | None:
    """The newest installed server's bin directory (``/usr/lib/postgresql/<major>/bin``)."""
    found = [Path(p) for p in glob.glob(_BIN_GLOB) if (Path(p) / "initdb").exists()]
    if not found:
        return None
    return max(found, key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def url(user: str, password: str, port: int, database: str, host: str = "127.0.0.1") -> str:
    return f"postgresql://{quote(user)}:{quote(password)}@{host}:{port}/{quote(database)}"


class PgServer:
    """One server: ``start()``, ``create_database()``/``drop_database()``, ``stop()``."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.password = secrets.token_urlsafe(16)
        self.port = 0
        # Not under pytest's tmp_path: that is private to root and the server runs as
        # ``postgres``; mkdtemp makes it 0700, then it is handed to the server's user.
        self.root = Path(tempfile.mkdtemp(prefix="tsuku-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as_root = os.geteuid() == 0
        self._user = pwd.getpwnam("postgres") if self._as_root else None
        self._counter = 0
        self._options = ""

    # ---- running commands as the server's user ---------------------------------------

    def _run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        cmd = list(argv)
        if self._as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C.UTF-8"}
        return subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def _check(self, what: str, done: subprocess.CompletedProcess[str]) -> None:
        if done.returncode != 0:
            tail = ""
            with contextlib.suppress(OSError):
                tail = self.log.read_text()[-2000:]
            raise RuntimeError(
                f"{what} failed ({done.returncode}): {done.stdout}{done.stderr}\n{tail}"
            )

    # ---- lifecycle -------------------------------------------------------------------

    def start(self) -> PgServer:
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        if self._user is not None:
            for path in (self.root, pwfile):
                os.chown(path, self._user.pw_uid, self._user.pw_gid)
        initdb = self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            ADMIN,
            "--pwfile",
            str(pwfile),
            "--auth=scram-sha-256",
            "-E",
            "UTF8",
            "--no-instructions",
            "--no-sync",
            timeout=120,
        )
        pwfile.unlink()
        self._check("initdb", initdb)
        # A port found free can be taken before the server binds it: try a few.
        for _ in range(5):
            self.port = _free_port()
            options = " ".join(
                [
                    "-c listen_addresses=127.0.0.1",
                    f"-c port={self.port}",
                    "-c unix_socket_directories=''",
                    "-c fsync=off",
                    "-c full_page_writes=off",
                    "-c max_connections=200",
                    "-c shared_buffers=32MB",
                ]
            )
            self._options = options
            started = self._pg_ctl_start()
            if started.returncode == 0:
                return self
            if "could not bind" not in self._log_text():
                self._check("pg_ctl start", started)
        raise RuntimeError(f"no free port for PostgreSQL after 5 tries: {self._log_text()}")

    def _log_text(self) -> str:
        try:
            return self.log.read_text()
        except OSError:
            return ""

    def stop(self, mode: str = "fast") -> None:
        """``mode``: ``fast`` (clean) or ``immediate`` (as a crash: recovery at next start)."""
        done = self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "stop")
        if done.returncode != 0 and "Is server running?" not in done.stderr:
            self._check("pg_ctl stop", done)

    def _pg_ctl_start(self) -> subprocess.CompletedProcess[str]:
        return self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            self._options,
            "-w",
            "-t",
            "60",
            "start",
            timeout=90,
        )

    def restart_stopped(self) -> None:
        """Start a server stopped with ``stop()`` again, on the same port."""
        self._check("pg_ctl start", self._pg_ctl_start())

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- databases and roles ---------------------------------------------------------

    def admin_url(self, database: str = "postgres") -> str:
        return url(ADMIN, self.password, self.port, database)

    def execute(self, sql: str, database: str = "postgres") -> None:
        """Run ``sql`` as the admin, outside a transaction (CREATE DATABASE needs that)."""
        import psycopg

        with psycopg.connect(self.admin_url(database), autocommit=True) as conn:
            conn.execute(sql.encode())

    def create_database(self) -> str:
        """A fresh, empty database (copied from ``template0``); returns its name."""
        self._counter += 1
        name = f"t{os.getpid()}_{self._counter}"
        self.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 OWNER {ADMIN}')
        return name

    def drop_database(self, name: str) -> None:
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class PgDatabase:
    """One test's database on the worker's server."""

    def __init__(self, server: PgServer, name: str) -> None:
        self.server = server
        self.name = name

    @property
    def url(self) -> str:
        """The admin's URL to this database (a daemon in a test may own its schema)."""
        return self.server.admin_url(self.name)

    def url_via(self, port: int) -> str:
        """The same database reached through a proxy listening on ``port``."""
        return url(ADMIN, self.server.password, port, self.name)


class _Shared:
    """The worker's one server, shared by every conftest that offers the fixtures (two
    session-scoped fixtures of the same name in two directories are two fixtures to
    pytest; they hold one server through this count)."""

    server: PgServer | None = None
    users = 0


@contextlib.contextmanager
def running_server() -> Iterator[PgServer | None]:
    """The worker's started server, or ``None`` when the package is not installed.
    Stopped and removed when the last holder lets go (at session end)."""
    bin_dir = find_bin()
    if bin_dir is None:
        yield None
        return
    if _Shared.server is None:
        server = PgServer(bin_dir)
        try:
            server.start()
        except BaseException:
            shutil.rmtree(server.root, ignore_errors=True)
            raise
        _Shared.server = server
    _Shared.users += 1
    try:
        yield _Shared.server
    finally:
        _Shared.users -= 1
        if _Shared.users == 0 and _Shared.server is not None:
            _Shared.server.remove()
            _Shared.server = None


def _require(server: PgServer | None) -> PgServer:
    if server is None:
        pytest.skip("PostgreSQL is not installed (scripts/dev setup installs postgresql)")
    return server


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL for this xdist worker (started on first use, stopped at the end)."""
    with running_server() as server:
        yield _require(server)


@pytest.fixture
def pg_database(pg_server: PgServer) -> Iterator[PgDatabase]:
    """A fresh database of this test's own, dropped (connections and all) afterwards."""
    name = pg_server.create_database()
    try:
        yield PgDatabase(pg_server, name)
    finally:
        pg_server.drop_database(name)
