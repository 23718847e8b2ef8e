"""``tsukuctl llm status|test``: the LLM providers, their keys, breakers and prices."""

from __future__ import annotations

import argparse
import sys

from tsukuctl import render
from tsukuctl.command import ask_on_terminal, can_ask, out, rpc
from tsukud.provider_specs import LLM_PROVIDERS


def cmd_llm(args: argparse.Namespace) -> int:
    if args.action == "status":
        return _status(args)
    res = rpc(
        args,
        "llm.test",
        {"provider": args.provider, "yes": args.yes, "can_ask": can_ask()},
        on_progress=lambda p: (
            sys.stderr.write(f"{p.get('message') or p.get('stage', '')}…\n")
            if "stage" in p
            else None
        ),
        on_confirm=ask_on_terminal,
    )
    if args.json:
        out(render.jsonl(res))
        return 0
    out(
        f"{res['provider']} ({res['model']}) answered {res['text'].strip()!r} in"
        f" {res['duration_ms']} ms: {res['input_tokens']} in / {res['output_tokens']} out tokens,"
        f" cost {render.money(res['cost_usd'])} (recorded in session {res['session']})"
    )
    if res.get("replayed_cost_usd"):  # a recording answered: priced, never spent
        out(f"replayed: {render.money(res['replayed_cost_usd'])} not spent")
    for warning in res.get("warnings") or ():
        sys.stderr.write(f"warning: {warning}\n")
    return 0


def _status(args: argparse.Namespace) -> int:
    st = rpc(args, "llm.status")
    if args.json:
        out(render.jsonl(st))
        return 0
    rows = []
    for p in st["providers"]:
        price = p["price"]
        if p["self_hosted"]:
            shown = "self-hosted"
        elif price is None:
            shown = "unknown"
        else:
            shown = f"${price['input_per_mtok']:g}/${price['output_per_mtok']:g} per Mtok"
            if price.get("above_tokens"):
                shown += (
                    f" (${price['input_above_per_mtok']:g}/${price['output_above_per_mtok']:g}"
                    f" above {price['above_tokens']:,} prompt tokens)"
                )
            if price["valid_until"]:
                shown += f" (until {price['valid_until']})"
        b = p["breaker"]
        breaker = b["state"] + (f" until {b['retry_at']}" if b.get("retry_at") else "")
        rows.append(
            [
                (str(st["order"].index(p["name"]) + 1) if p["in_order"] else "-"),
                p["name"],
                p["model"],
                p["credential"],
                "yes" if p["usable"] else "no",
                breaker,
                shown,
            ]
        )
    out(render.table(("#", "PROVIDER", "MODEL", "KEY", "USABLE", "BREAKER", "PRICE"), rows))
    for p in st["providers"]:
        if p["reason"] and p["in_order"]:
            out(f"  {p['name']}: {p['reason']}")
        if p["deprecated"]:
            out(f"  warning: {p['deprecated']}")
    if st["replay_dir"]:
        out(f"replaying recorded LLM sessions from {st['replay_dir']} (no network)")
    if st["record_dir"]:
        out(f"recording LLM sessions to {st['record_dir']}")
    b = st["budget"]
    out(
        f"budget: {render.money(b['spent_usd'])} spent + {render.money(b['reserved_usd'])} reserved"
        f" of {render.money(b['daily_budget_usd'])} today"
    )
    if b.get("replayed_usd"):  # turns answered from recordings: priced, never spent
        out(f"replayed: {render.money(b['replayed_usd'])} not spent")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("llm", help="LLM providers: status, or a tiny test call to check a key")
    p.add_argument("action", choices=("status", "test"))
    names = [s.name for s in LLM_PROVIDERS]
    p.add_argument(
        "--provider",
        help=f"test: {', '.join(names[:-1])} or {names[-1]} (default: the first usable)",
    )
    p.add_argument("--yes", action="store_true", help="accept the cost without asking")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_llm)
