"""``tsukuctl discover <tool>``: where does a tool come from? (issue 6)

Standard library only. The daemon runs the chain (registry, ecosystems, web search,
GitHub verification) and streams its steps as progress, shown on stderr; the answer is
printed on stdout (``--json``: the daemon's result). Nothing is installed or written:
``tsukuctl install <tool>`` runs the same discovery when a tool has no recipe, asks
before using what it found, writes the recipe and installs it.
"""

from __future__ import annotations

import argparse

from tsukuctl import render
from tsukuctl.command import (
    add_provider_flags,
    add_search_provider_flag,
    ask_on_terminal,
    can_ask,
    err,
    out,
    rpc,
    tool_names,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def show_progress(p: dict[str, Any]) -> None:
    message = p.get("message") if isinstance(p, dict) else None
    if message:
        err(str(message))


def summary(res: dict[str, Any]) -> str:
    tool, stage, builder, source = res["tool"], res["stage"], res["builder"], res["source"]
    if stage == "recipe":
        return f"{tool}: {source}\n  install it: tsukuctl install {tool}"
    if builder == "instructions":  # a vendor's install page: read and validated at install
        meta = res.get("metadata") or {}
        lines = [
            f"{tool}: install page {source} (found via web search; no GitHub release or "
            f"package; for {meta.get('platform', 'this platform')})"
        ]
        if meta.get("page_text"):
            lines.append(f"  the page says: {meta['page_text']}")
            if meta.get("page_warning"):
                lines.append(f"  warning: {meta['page_warning']}")
        elif meta.get("page_error"):
            lines.append(f"  the page could not be read: {meta['page_error']}")
        lines.append(
            f"  install it: tsukuctl install {tool} (reads the page into a recipe, "
            "validates it and shows it first)"
        )
        return "\n".join(lines)
    if builder != "github":
        line = f"{tool}: {builder} package {source}"
        if stage == "llm":  # named by a model, checked by its registry
            via, conf = res.get("provider"), res.get("confidence")
            line += f" (found via web search ({via}), confidence {conf})"
        if res.get("tsuku_command"):
            line += f"\n  install it with: {res['tsuku_command']}"
            if res.get("install_command"):
                line += f" (or without tsuku: {res['install_command']})"
        elif res.get("install_command"):
            line += f"\n  install it with: {res['install_command']}"
        return line
    meta = res.get("metadata") or {}
    where = "the tsuku discovery registry" if stage == "registry" else "web search"
    bits = [f"found via {where}"]
    if res.get("provider"):
        bits[0] += f" ({res['provider']})"
    if res.get("confidence") is not None:
        bits.append(f"confidence {res['confidence']}")
    if meta.get("stars") is not None:
        bits.append(f"{meta['stars']:,} stars")
    if stage == "llm":
        bits.append("auto-approvable" if meta.get("auto_approvable") else "needs your approval")
    lines = [f"{tool}: github:{source} ({', '.join(bits)})"]
    lines += [f"  warning: {w}" for w in res.get("warnings") or []]
    if res.get("spent_usd"):
        lines.append(
            f"  cost: {render.money(res['spent_usd'])} ({res.get('searches', 0)} searches)"
        )
    lines.append(f"  install it: tsukuctl install {tool}")
    return "\n".join(lines)


def cmd_discover(args: argparse.Namespace) -> int:
    res = rpc(
        args,
        "discover",
        {
            "tool": args.tool,
            "yes": args.yes,
            "can_ask": can_ask() and not args.json,
            "search_provider": args.search_provider,
            "provider": args.provider,
            "only_provider": args.only_provider,
            "no_llm": args.no_llm,
            "collect_tool_stats": args.collect_tool_stats,
        },
        on_progress=None if args.json else show_progress,
        on_confirm=ask_on_terminal,
    )
    if args.collect_tool_stats and not args.json:
        from tsukuctl.tool_stats import print_tool_stats

        print_tool_stats(res.get("tool_stats") or [])
    out(render.jsonl(res) if args.json else summary(res))
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    res = rpc(args, "search", {"name": args.name})
    if args.json:
        out(render.jsonl(res))
        return 0
    out(search_text(res))
    return 0


def search_text(res: dict[str, Any]) -> str:
    """``search``'s answer: recipe, registry entry and packages, each one line, then what
    ``install`` would do."""
    tool = res["tool"]
    lines = []
    if res.get("recipe"):
        lines.append(f"{tool}: {res['recipe']}")
    entry = res.get("registry_entry")
    if entry:
        lines.append(f"{tool}: {entry['builder']}:{entry['source']} (discovery registry)")
    for p in res.get("packages") or []:
        evidence = [f"{p.get('downloads', 0):,} downloads"]
        if p.get("repository"):
            evidence.append(f"github.com/{p['repository']}")
        elif not p.get("has_repository"):
            evidence.append("no repository")
        if p.get("latest"):
            evidence.append(f"latest {p['latest']}")
        if not p.get("passes_filter"):
            evidence.append("below discovery's bar")
        lines.append(f"{tool}: {p.get('from') or p['source']} ({', '.join(evidence)})")
    if not lines:
        lines.append(f"{tool}: no recipe, registry entry or package of that name")
    if res.get("did_you_mean"):
        lines.append(f"did you mean {res['did_you_mean']}? tsukuctl search {res['did_you_mean']}")
    for where, why in sorted((res.get("errors") or {}).items()):
        lines.append(f"  not asked: {where}: {why}")
    lines.append(f"tsukuctl install {tool} would {res['install_would']}")
    return "\n".join(lines)


def register(sub: Any) -> None:
    p = sub.add_parser(
        "search",
        help="what is known of a tool name without spending money: recipe, packages, "
        "what install would do",
    )
    tool_names(p.add_argument("name", help="a tool's name"), "known")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.set_defaults(fn=cmd_search)

    p = sub.add_parser(
        "discover", help="find and verify where a tool comes from (registry, ecosystems, web)"
    )
    p.add_argument("tool")
    p.add_argument("-y", "--yes", action="store_true", help="accept the web search's LLM cost")
    add_search_provider_flag(p)
    add_provider_flags(p)
    p.add_argument("--no-llm", action="store_true", help="registry and ecosystems only")
    p.add_argument(
        "--collect-tool-stats",
        action="store_true",
        help=argparse.SUPPRESS,  # a measurement for eval and debugging: docs/discovery.md
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_discover)
