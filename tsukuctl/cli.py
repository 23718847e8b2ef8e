"""``tsukuctl``: the command line.

Each command is a small function from parsed arguments to an exit code. Output for
people goes to stdout, diagnostics to stderr; ``--json``/``--csv`` are for machines and
never mix in prose. Errors print the message and a hint and exit with the documented
code (docs/exit-codes.md).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from tsukuctl import render
from tsukuctl.client import Client, RemoteError
from tsukud import __version__, paths
from tsukud.errors import ExitCode, TsukuError, UsageError

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def _client(args: argparse.Namespace) -> Client:
    return Client.connect(autostart=not getattr(args, "no_start", False))


def rpc(
    args: argparse.Namespace, method: str, params: dict[str, Any] | None = None, **kw: Any
) -> Any:
    with _client(args) as c:
        return c.call(method, params, **kw)


def out(text: str) -> None:
    sys.stdout.write(text + "\n")


def can_ask() -> bool:
    """Whether a question can be put to the user (both ends of the terminal)."""
    return sys.stdin.isatty() and sys.stderr.isatty()


def ask_on_terminal(question: dict[str, Any]) -> bool:
    """Answer a daemon's ``confirm`` frame with a y/N prompt; default no."""
    sys.stderr.write(
        f"{question.get('message', '')}\n{question.get('question', 'Continue?')} [y/N] "
    )
    sys.stderr.flush()
    try:
        reply = sys.stdin.readline()
    except (OSError, KeyboardInterrupt):
        return False
    return reply.strip().lower() in ("y", "yes")


# ---- status -----------------------------------------------------------------------------


def cmd_status(args: argparse.Namespace) -> int:
    st = rpc(args, "status")
    if args.json:
        out(render.jsonl(st))
        return 0
    b, g = st["budget"], st["generations"]
    lines = [
        f"tsukud {st['version']}  pid {st['pid']}  up {render.duration(st['uptime_s'])}",
        f"socket       {st['socket']} ({st['activation']})",
        f"home         {st['home']}",
        f"budget       {render.money(b['spent_usd'])} spent"
        f" + {render.money(b['reserved_usd'])} reserved"
        f" of {render.money(b['daily_budget_usd'])} today ({b['day']} UTC);"
        f" confirm above {render.money(b['confirm_threshold_usd'])}",
        f"generations  {g['count']} of {g['limit']} in the last hour",
    ]
    tripped = [x for x in st["breakers"] if x["state"] != "closed" or x["consecutive_failures"]]
    if not st["breakers"]:
        lines.append("breakers     no provider used yet")
    elif not tripped:
        lines.append(
            "breakers     all closed (" + ", ".join(x["provider"] for x in st["breakers"]) + ")"
        )
    for x in tripped:
        when = f" until {x['retry_at']}" if x["retry_at"] else ""
        lines.append(
            f"breaker      {x['provider']}: {x['state']}{when},"
            f" {x['consecutive_failures']} consecutive failures (last: {x['last_error']})"
        )
    lines.append(f"events       {st['events']['count']} in {st['database']}")
    out("\n".join(lines))
    return 0


# ---- events -----------------------------------------------------------------------------


def _filter(args: argparse.Namespace) -> dict[str, Any]:
    from tsukuctl.timespec import BadTime, to_ledger_time

    f: dict[str, Any] = {}
    try:
        if args.since:
            f["since"] = to_ledger_time(args.since)
        if args.until:
            f["until"] = to_ledger_time(args.until)
    except BadTime as e:
        raise UsageError(str(e)) from None
    if args.type:
        f["types"] = [t for spec in args.type for t in spec.split(",") if t]
    if args.session:
        f["session"] = args.session
    return f


CSV_COLUMNS = (
    "id",
    "ts",
    "type",
    "session",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "payload",
)


def cmd_events(args: argparse.Namespace) -> int:
    action = args.action or "list"
    if action == "summary":
        return _events_summary(args)
    if action == "verify":
        return _events_verify(args)
    fmt = "json" if args.json else "csv" if args.csv else "table"
    rows: list[dict[str, Any]] = []
    width = render.term_width()

    def emit(progress: dict[str, Any]) -> None:
        batch = progress.get("events", [])
        if fmt == "json":
            sys.stdout.write("".join(render.jsonl(e) + "\n" for e in batch))
        elif fmt == "csv":
            lines = []
            for e in batch:
                p = e["payload"]
                lines.append(
                    [
                        e["id"],
                        e["ts"],
                        e["type"],
                        e["session"] or "",
                        p.get("provider", ""),
                        p.get("model", ""),
                        p.get("input_tokens", ""),
                        p.get("output_tokens", ""),
                        p.get("cost_usd", ""),
                        render.jsonl(p),
                    ]
                )
            sys.stdout.write(render.csv_text(CSV_COLUMNS, lines).split("\n", 1)[1])
        else:
            rows.extend(batch)

    if fmt == "csv":
        sys.stdout.write(",".join(CSV_COLUMNS) + "\n")
    result = rpc(
        args, "events.list", {"filter": _filter(args), "limit": args.limit}, on_progress=emit
    )
    if fmt == "table":
        if not rows:
            out("no events match")
            return 0
        base = 24 + 2 + 22 + 2 + 12 + 2 + 8
        table_rows = [
            [
                e["id"],
                e["ts"][:23].replace("T", " "),
                e["type"],
                (e["session"] or "")[:12],
                render.compact(e["payload"], max(20, width - base)),
            ]
            for e in rows
        ]
        out(
            render.table(
                ("ID", "TIME (UTC)", "TYPE", "SESSION", "DETAILS"), table_rows, right=frozenset({0})
            )
        )
        shown = result["count"]
        if args.limit and shown == args.limit:
            sys.stderr.write(f"(newest {shown} shown; --limit 0 for all)\n")
    return 0


def _events_summary(args: argparse.Namespace) -> int:
    res = rpc(args, "events.summary", {"filter": _filter(args), "by": args.by})
    if args.json:
        out(render.jsonl(res))
        return 0
    if args.csv:
        cols = (
            "key",
            "events",
            "llm_turns",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "cost_unknown",
        )
        sys.stdout.write(render.csv_text(cols, [[g[c] for c in cols] for g in res["groups"]]))
        return 0
    t = res["totals"]
    rows = [
        [
            g["key"] if g["key"] is not None else "(none)",
            g["events"],
            g["llm_turns"],
            g["input_tokens"],
            g["output_tokens"],
            render.money(g["cost_usd"])
            + (f" +{g['cost_unknown']} unpriced" if g["cost_unknown"] else ""),
        ]
        for g in res["groups"]
    ]
    rows.append(
        [
            "total",
            t["events"],
            t["llm_turns"],
            t["input_tokens"],
            t["output_tokens"],
            render.money(t["cost_usd"])
            + (f" +{t['cost_unknown']} unpriced" if t["cost_unknown"] else ""),
        ]
    )
    out(
        render.table(
            (args.by.upper(), "EVENTS", "LLM TURNS", "INPUT TOK", "OUTPUT TOK", "COST"),
            rows,
            right=frozenset({1, 2, 3, 4}),
        )
    )
    return 0


def _events_verify(args: argparse.Namespace) -> int:
    res = rpc(args, "events.verify")
    if args.json:
        out(render.jsonl(res))
    else:
        out(f"ledger ok: {res['checked']} events, hash chain intact (head {res['head'][:16]}…)")
    return 0


# ---- daemon -----------------------------------------------------------------------------


def cmd_daemon(args: argparse.Namespace) -> int:
    import time

    from tsukuctl.client import start_daemon

    if args.action == "start":
        try:
            with Client.connect(autostart=False) as c:
                pid = c.call("ping")["pid"]
            out(f"tsukud already running (pid {pid})")
        except TsukuError:
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
        except TsukuError:
            if args.action == "stop":
                out("tsukud is not running")
        if args.action == "restart":
            out(f"tsukud started (pid {start_daemon()})")
        return 0
    if args.action == "logs":
        return _logs(args)
    raise UsageError(f"unknown daemon action {args.action!r}")


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
            sys.stdout.write(line)
        sys.stdout.flush()
        while args.follow:
            line = f.readline()
            if line:
                sys.stdout.write(line)
                sys.stdout.flush()
            else:
                time.sleep(0.2)
    return 0


# ---- config -----------------------------------------------------------------------------


def cmd_config(args: argparse.Namespace) -> int:
    if args.action == "list":
        res = rpc(args, "config.list")
        if args.json:
            out(render.jsonl(res))
            return 0
        rows = [[s["key"], s["value"], s["source"]] for s in res["settings"]]
        out(render.table(("KEY", "VALUE", "SOURCE"), rows))
        out(f"\nfile: {res['path']}")
        return 0
    if not args.key:
        raise UsageError(
            f"config {args.action} needs a KEY", hint="`tsukuctl config list` shows them."
        )
    if args.action == "get":
        s = rpc(args, "config.get", {"key": args.key})
        out(render.jsonl(s) if args.json else str(s["value"]))
        return 0
    if args.action == "unset":
        s = rpc(args, "config.set", {"key": args.key, "value": None})
        out(f"{s['key']} unset (now {s['value']} from {s['source']})")
        return 0
    # set
    secret = args.key.startswith("secrets.")
    if secret and args.value is not None:
        raise UsageError(
            "secrets are never taken from the command line (they would land in shell history "
            "and in `ps`)",
            hint=f'Pipe it in: printf %s "$KEY" | tsukuctl config set {args.key}',
        )
    value = args.value
    if value is None:
        if sys.stdin.isatty():
            import getpass

            value = getpass.getpass(f"{args.key}: ")
        else:
            value = sys.stdin.read().strip()
        if not value:
            raise UsageError("no value given on standard input")
    s = rpc(args, "config.set", {"key": args.key, "value": value})
    out(f"{s['key']} = {s['value']}  ({s['source']})")
    if s.get("note"):
        sys.stderr.write(f"note: {s['note']}\n")
    return 0


# ---- parser -----------------------------------------------------------------------------

# Feature areas add their commands in their own modules: each has
# ``register(sub: argparse._SubParsersAction) -> None`` adding parsers whose ``fn`` takes
# the parsed args and returns an exit code. Standard library only, like this file.
COMMAND_MODULES: tuple[str, ...] = (
    "tsukuctl.sandbox_commands",
    "tsukuctl.llm_commands",
    "tsukuctl.install_commands",
    "tsukuctl.create_commands",
    "tsukuctl.hook_commands",
    "tsukuctl.demo_commands",
    "tsukuctl.discover_commands",
)


def _add_status(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("status", help="daemon, budget, rate limit and breaker state")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_status)


def _add_events(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("events", help="the audit ledger: list, summary, verify")
    p.add_argument("action", nargs="?", choices=("list", "summary", "verify"))
    p.add_argument("--since", help="e.g. 7d, 12h, 2026-11-01")
    p.add_argument("--until", help="same forms as --since (exclusive)")
    p.add_argument("--type", action="append", help="event type or prefix (llm.*); repeatable")
    p.add_argument("--session", help="one run's session id")
    p.add_argument("--limit", type=int, default=100, help="newest N events (0: all; default 100)")
    p.add_argument(
        "--by",
        default="day",
        choices=("day", "hour", "provider", "model", "session", "type"),
        help="summary grouping (default day)",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="one JSON object per line")
    g.add_argument("--csv", action="store_true")
    p.set_defaults(fn=cmd_events)


def _add_daemon(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("daemon", help="start, stop, restart tsukud; show its log")
    p.add_argument("action", choices=("start", "stop", "restart", "logs"))
    p.add_argument("-n", "--lines", type=int, default=50, help="log lines to show")
    p.add_argument("-f", "--follow", action="store_true", help="keep printing new log lines")
    p.set_defaults(fn=cmd_daemon)


def _add_config(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("config", help="get, set, unset, list settings")
    p.add_argument("action", choices=("get", "set", "unset", "list"))
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?", help="(never for secrets.*: read from stdin)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_config)


CORE_COMMANDS = {
    "status": _add_status,
    "events": _add_events,
    "daemon": _add_daemon,
    "config": _add_config,
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser, or (``only``) one with just that core command.

    argparse builds a help formatter for every argument, so building all commands
    costs several milliseconds; a core command named on the command line (``status``,
    from scripts and prompts) builds only itself.
    """
    ap = argparse.ArgumentParser(
        prog="tsukuctl",
        description="tsuku: developer tools installed from recipes it writes, checks and repairs.",
    )
    ap.add_argument("--version", action="version", version=f"tsukuctl {__version__}")
    ap.add_argument(
        "--no-start", action="store_true", help="do not start tsukud when none is running"
    )
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    if only in CORE_COMMANDS:
        CORE_COMMANDS[only](sub)
        return ap
    for add in CORE_COMMANDS.values():
        add(sub)
    if COMMAND_MODULES:
        import importlib

        for name in COMMAND_MODULES:
            importlib.import_module(name).register(sub)
    return ap


def _command_word(argv: Sequence[str]) -> str | None:
    for a in argv:
        if a in ("-h", "--help", "--version"):
            return None
        if not a.startswith("-"):
            return a
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(_command_word(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "fn", None):
        parser.print_help()
        return ExitCode.USAGE
    try:
        return int(args.fn(args))
    except RemoteError as e:
        _print_error(e.message, e.hint)
        return e.exit_status
    except TsukuError as e:
        _print_error(e.message, e.hint)
        return e.exit_code
    except KeyboardInterrupt:
        return ExitCode.CANCELLED
    except BrokenPipeError:
        # `tsukuctl events | head`: the reader left; that is not an error.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _print_error(message: str, hint: str) -> None:
    sys.stderr.write(f"tsukuctl: {message}\n")
    if hint:
        sys.stderr.write(f"hint: {hint}\n")


if __name__ == "__main__":
    sys.exit(main())
