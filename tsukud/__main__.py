"""``tsukud``: start the daemon.

Order matters for a fast, safe start: resolve config (refusing a readable secrets file),
take the single-instance lock, open and rebuild the ledger, bind the socket with a umask
that never exposes it, then enter trio. Heavy SDKs are not imported here at all.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import gc
import os
import signal
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from tsukud import __version__, paths
from tsukud.errors import TsukuError
from tsukud.fsutil import NO_SPACE

SD_LISTEN_FDS_START = 3
SWITCH_INTERVAL_S = 0.0005  # see _run_foreground


def _parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="tsukud", description="The tsuku daemon.")
    ap.add_argument("--foreground", action="store_true", help="run attached to this terminal")
    ap.add_argument("--socket", help="socket path (default: $TSUKU_SOCKET, see docs)")
    ap.add_argument("--home", help="TSUKU_HOME (default: $TSUKU_HOME or ~/.tsuku)")
    ap.add_argument("--log-stderr", action="store_true", help="also log to stderr")
    ap.add_argument(
        "--accept-ledger",
        action="store_true",
        help="start on a ledger that lost events or its checkpoint, as it is now, and "
        "record what was lost (only after `events verify` or a refused start said so)",
    )
    ap.add_argument("--version", action="version", version=f"tsukud {__version__}")
    return ap.parse_args(argv)


@contextlib.contextmanager
def instance_lock(path: Path) -> Iterator[None]:
    """One daemon per TSUKU_HOME. The kernel drops a flock when its holder dies."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise
            other = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise AlreadyRunning(
                f"tsukud is already running for {path.parent.parent} (pid {other})",
                hint="`tsukuctl daemon stop` stops it.",
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as e:
            # On a full disk the lock holds all the same (it is the flock, not the
            # file's text); only the pid shown to a second daemon is missing.
            if e.errno not in NO_SPACE:
                raise
        yield
    finally:
        os.close(fd)


class AlreadyRunning(TsukuError):
    # Its own exit code, so a service manager can be told not to restart on it
    # (systemd/tsukud.service: RestartPreventExitStatus).
    code = "already_running"


def activated_sockets() -> tuple[str, list[socket.socket]]:
    """Sockets passed by systemd (LISTEN_FDS) or launchd (launch_activate_socket)."""
    if os.environ.get("LISTEN_PID") == str(os.getpid()) and os.environ.get("LISTEN_FDS"):
        n = int(os.environ["LISTEN_FDS"])
        for var in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
            os.environ.pop(var, None)
        return "systemd", [socket.socket(fileno=SD_LISTEN_FDS_START + i) for i in range(n)]
    if sys.platform == "darwin" and os.environ.get("TSUKU_LAUNCHD"):
        return "launchd", _launchd_sockets("Listeners")
    return "direct", []


def _launchd_sockets(name: str) -> list[socket.socket]:
    import ctypes

    libc = ctypes.CDLL(None)
    fds = ctypes.POINTER(ctypes.c_int)()
    count = ctypes.c_size_t()
    rc = libc.launch_activate_socket(name.encode(), ctypes.byref(fds), ctypes.byref(count))
    if rc != 0:
        return []
    out = [socket.socket(fileno=fds[i]) for i in range(count.value)]
    libc.free(fds)
    return out


def private_socket_dir(directory: Path) -> None:
    """Make sure only this user can reach the socket's directory.

    A directory that is missing is created 0700. One that exists must already be this
    user's and closed to everyone else: the daemon never changes the mode of a directory
    it did not create (``TSUKU_SOCKET=/tmp/x.sock`` must not turn /tmp into 0700), and it
    will not serve from a directory others can enter, where the socket file's own mode
    would be the only fence.
    """
    from tsukud.errors import ConfigError

    try:
        with contextlib.suppress(FileExistsError):
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir(mode=0o700)  # the umask can only narrow it further
        st = directory.stat()
    except OSError as e:
        raise ConfigError(
            f"cannot create the socket's directory {directory}: {e.strerror}",
            hint="Point TSUKU_SOCKET into a directory of your own.",
        ) from None
    if st.st_uid != os.geteuid() or st.st_mode & 0o077:
        owner = "you" if st.st_uid == os.geteuid() else f"uid {st.st_uid}"
        raise ConfigError(
            f"the socket's directory {directory} (owned by {owner}, mode "
            f"{stat.S_IMODE(st.st_mode):04o}) is open to other users",
            hint="Point TSUKU_SOCKET into a directory of your own that only you can use "
            "(tsukud creates a missing one with mode 0700), or `chmod 700` the directory "
            "if it is yours.",
        )


def bind_socket(path: Path) -> socket.socket:
    """Bind the Unix socket in a private directory, 0600 from the first instant."""
    from tsukud.errors import ConfigError

    too_long = paths.too_long(str(path))
    if too_long is not None:
        raise ConfigError(too_long, hint=paths.TOO_LONG_HINT)
    private_socket_dir(path.parent)
    if path.exists() or path.is_symlink():
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(0.5)
        try:
            probe.connect(str(path))
        except OSError:
            path.unlink()  # stale: its daemon is gone
        else:
            raise AlreadyRunning(
                f"another tsukud answers on {path}",
                hint="Stop it first, or give this one its own TSUKU_SOCKET.",
            )
        finally:
            probe.close()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(256)
    return sock


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    if args.home:
        os.environ["TSUKU_HOME"] = args.home
    if args.socket:
        os.environ["TSUKU_SOCKET"] = args.socket
    if not args.foreground:
        from tsukud.launch import start_daemon

        try:
            pid = start_daemon(accept_ledger=args.accept_ledger)
        except TsukuError as e:
            print(f"tsukud: {e.message}\nhint: {e.hint}", file=sys.stderr)
            return e.exit_code
        print(f"tsukud running (pid {pid})")
        return 0
    try:
        return _run_foreground(args)
    except TsukuError as e:
        print(f"tsukud: {e.message}", file=sys.stderr)
        if e.hint:
            print(f"hint: {e.hint}", file=sys.stderr)
        return e.exit_code


def _run_foreground(args: argparse.Namespace) -> int:
    from tsukud import config as configmod
    from tsukud import log

    env = os.environ
    config = configmod.resolve(env=env)  # first: it refuses a config others could change
    from tsukud.private_home import make_home_private

    # umask 077 before the log, lock and ledger; the person's config file keeps its mode
    make_home_private(paths.tsuku_home(env), leave=str(config.path))
    log.configure(
        Path(paths.log_path(env)),
        level=config.value_or_default("log.level"),
        max_bytes=config.value_or_default("log.max_bytes"),
        backups=config.value_or_default("log.backups"),
        to_stderr=args.log_stderr,
    )
    for problem in config.problems:  # the daemon serves; a command needing the key says so
        log.get().warning("config.problem", error=problem.error.message)
    import faulthandler

    # `kill -USR1 <pid>` dumps every thread's stack to stderr: for a daemon that hangs.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # The event loop thread lets go of the GIL at each socket call and then waits for it
    # behind the read threads (SQLite rows and JSON are Python work), up to the switch
    # interval each time: CPython's 5 ms made `status` wait behind reads under load.
    # bench/concurrent_reads.py, same run: status p50 3.3 -> 2.1 ms, reads +15-40%/s.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    with instance_lock(Path(paths.lock_path(env))):
        import trio

        from tsukud.daemon import Daemon

        activation, activated = activated_sockets()
        sock_path = Path(paths.socket_path(env))
        own_socket = not activated
        socks = activated or [bind_socket(sock_path)]
        daemon = Daemon(
            config=config,
            env=env,
            socket_path=sock_path,
            activation=activation if activated else "direct",
        )
        try:
            daemon.open(accept_ledger=args.accept_ledger)

            async def amain() -> None:
                from tsukud.rpc.registry import served_methods
                from tsukud.rpc.server import RpcServer

                listeners = [trio.SocketListener(trio.socket.from_stdlib_socket(s)) for s in socks]
                methods = served_methods()  # the features' modules on their first request
                server = RpcServer(
                    methods,
                    daemon,
                    before_request=daemon.before_request,
                    scope=daemon.request_scope,
                    idle_timeout_s=config.value_or_default("rpc.idle_timeout_seconds"),
                )
                # Everything loaded so far (modules, settings, projections) lives as long
                # as the daemon: kept out of the collector's full passes, which otherwise
                # walk it all and hold the loop (and `status`) for ~100 ms each under load.
                gc.freeze()
                await daemon.run(server, listeners)

            trio.run(amain)
        finally:
            if own_socket:
                with contextlib.suppress(FileNotFoundError):
                    sock_path.unlink()
            log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
