"""``tsukuctl daemon start|stop|restart|logs``: tsukud's lifecycle from the shell."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from tsukuctl.client import Client
from tsukuctl.command import count, out
from tsukud import paths
from tsukud.errors import TsukuError, UsageError
from tsukud.terminal import terminal_safe


def cmd_daemon(args: argparse.Namespace) -> int:
    import time

    from tsukuctl.client import start_daemon

    if args.action == "start":
        try:
            with Client.connect(autostart=False) as c:
                pid = c.call("ping")["pid"]
            out(f"tsukud already running (pid {pid})")
        except TsukuError as e:
            _unless_another_homes(e)
            out(f"tsukud started (pid {start_daemon()})")
        return 0
    if args.action in ("stop", "restart"):
        try:
            with Client.connect(autostart=False) as c:
                pid = c.call("daemon.stop")["pid"]
                with contextlib.suppress(TsukuError):
                    c.read_frame()  # returns when the daemon closes our connection on exit
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _pid_alive(pid):
                time.sleep(0.02)
            out(f"tsukud stopped (pid {pid})")
        except TsukuError as e:
            _unless_another_homes(e)
            if args.action == "stop":
                out("tsukud is not running")
        if args.action == "restart":
            out(f"tsukud started (pid {start_daemon()})")
        return 0
    if args.action == "logs":
        return _logs(args)
    raise UsageError(f"unknown daemon action {args.action!r}")


def _unless_another_homes(e: TsukuError) -> None:
    """A daemon of another home answered: say so, rather than "not running" (or start
    a second daemon that cannot take the socket)."""
    if getattr(e, "remote_code", "") == "wrong_daemon":
        raise e


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _logs(args: argparse.Namespace) -> int:
    import time
    from collections import deque

    path = paths.log_path()
    if not os.path.exists(path):
        out(f"no log yet at {path}")
        return 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in deque(f, maxlen=args.lines):
            sys.stdout.write(terminal_safe(line))
        sys.stdout.flush()
        while args.follow:
            line = f.readline()
            if line:
                sys.stdout.write(terminal_safe(line))
                sys.stdout.flush()
            else:
                time.sleep(0.2)
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("daemon", help="start, stop, restart tsukud; show its log")
    p.add_argument("action", choices=("start", "stop", "restart", "logs"))
    p.add_argument("-n", "--lines", type=count, default=50, help="log lines to show")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new log lines")
    p.set_defaults(fn=cmd_daemon)
