"""``tsukuctl outdated`` and ``tsukuctl upgrade [TOOL...|--all]``.

``outdated`` is a question, not a check: it exits 0 whether or not something is behind
(like ``pip list --outdated``), with a table, or ``--json`` for scripts. ``upgrade``
installs the newest release of each outdated tool, with the same progress lines as
``install``; it exits non-zero when any tool could not be upgraded. Standard library
only.
"""

from __future__ import annotations

import argparse

from tsukuctl import render
from tsukuctl.command import err, out, rpc, tool_names
from tsukud.errors import exit_code_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def cmd_outdated(args: argparse.Namespace) -> int:
    res = rpc(args, "tools.outdated", {"tools": args.tools})
    if args.json:
        out(render.jsonl(res))
        return 0
    rows = res["tools"]
    if not rows:
        out("no tools installed")
        return 0
    table = [[r["tool"], r["installed"], r.get("newest") or "?", _state(r)] for r in rows]
    out(render.table(("TOOL", "INSTALLED", "NEWEST", "STATE"), table))
    for r in rows:
        if r.get("error"):
            err(f"{r['tool']}: {r['error']}")
        elif r.get("pinned"):
            out(_pinned(r["tool"], r.get("newest") or r["installed"]))
        elif r.get("needs_validation"):
            out(
                f"{r['tool']}: {r['newest']} was never validated (its recipe is pinned at "
                f"{r['validated']}). {r.get('hint') or ''}".rstrip()
            )
    behind = [r["tool"] for r in rows if r["outdated"] and not r.get("needs_validation")]
    if behind:
        out(f"{len(behind)} outdated: `tsukuctl upgrade {' '.join(behind)}` (or --all)")
    elif not any(r.get("error") or r.get("pinned") or r.get("outdated") for r in rows):
        out("every installed tool is current")
    return 0


def _state(row: dict[str, Any]) -> str:
    if row.get("needs_validation"):
        return "validate first"
    if row["outdated"]:
        return "upgrade available"
    if row.get("error"):
        return "unknown"
    return "pinned" if row.get("pinned") else "current"


def _pinned(tool: str, version: str) -> str:
    return (
        f"{tool}: pinned at {version} by its recipe, which has no version source "
        "(its URLs name that version): no newer release can be looked up"
    )


def cmd_upgrade(args: argparse.Namespace) -> int:
    if not args.tools and not args.all:
        args.parser.error("name the tools to upgrade, or give --all")
    if args.tools and args.all:
        args.parser.error("give tool names or --all, not both")
    from tsukuctl.progress import Progress

    progress = Progress(quiet=args.json)
    try:
        res = rpc(
            args,
            "tools.upgrade",
            {"tools": args.tools, "all": args.all},
            on_progress=progress,
        )
    finally:
        progress.close()
    failed: list[dict[str, Any]] = res["failed"]
    if args.json:
        out(render.jsonl(res))
    else:
        for done in res["upgraded"]:
            out(f"upgraded {done['tool']} {done['from']} → {done['to']}")
        for f in failed:
            err(f"tsukuctl: {f['tool']} was not upgraded: {f['message']}")
            if f.get("hint"):
                err(f"hint: {f['hint']}")
        pinned = [c for c in res["current"] if c.get("pinned")]
        for c in pinned:
            out(_pinned(c["tool"], c["version"]))
        kept = [c for c in res["current"] if c.get("kept_for")]
        for c in kept:
            users = ", ".join(c["kept_for"])
            out(
                f"kept {c['tool']} {c['version']}: the hidden toolchain {users} "
                f"{'runs' if len(c['kept_for']) == 1 else 'run'} on "
                f"(`tsukuctl upgrade {c['tool']}` says how to move {users} to a newer one)"
            )
        pinned += kept
        others = len(res["current"]) - len(pinned)
        if not res["upgraded"] and not failed and not pinned:
            out("nothing to upgrade: every tool named is current")
        elif not res["upgraded"] and not failed and others:
            out("nothing else to upgrade: the other tools named are current")
    from tsukuctl.install_commands import several_exit

    tried = len(res["upgraded"]) + len(res["current"]) + len(failed)
    return several_exit([exit_code_for(str(f.get("error_code") or "")) for f in failed], tried)


def register(sub: Any) -> None:
    p = sub.add_parser("outdated", help="installed tools that have a newer release")
    tool_names(
        p.add_argument("tools", nargs="*", metavar="TOOL", help="only these (default: all)"),
        "installed",
    )
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.set_defaults(fn=cmd_outdated)

    p = sub.add_parser("upgrade", help="install the newest release of outdated tools")
    tool_names(p.add_argument("tools", nargs="*", metavar="TOOL"), "installed")
    p.add_argument("--all", action="store_true", help="every outdated tool")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.set_defaults(fn=cmd_upgrade, parser=p)
