"""``tsukuctl config get|set|unset|list``: settings, kept by the daemon (docs/config.md).

Secrets are read from standard input only, never from the command line.
"""

from __future__ import annotations

import argparse
import sys

from tsukuctl import render
from tsukuctl.command import out, rpc
from tsukud.errors import UsageError


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


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("config", help="get, set, unset, list settings")
    p.add_argument("action", choices=("get", "set", "unset", "list"))
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?", help="(never for secrets.*: read from stdin)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_config)
