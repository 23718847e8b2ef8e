"""``tsukuctl status``: the daemon, budget, rate limit and breaker state in one screen."""

from __future__ import annotations

from tsukuctl import render
from tsukuctl.command import err, out, rpc

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    import argparse  # not at run time: `status` is read without it (cli.hot_args)
    from typing import Any


def cmd_status(args: argparse.Namespace) -> int:
    st = rpc(args, "status")
    if args.origin:
        _only_origin(st, args.origin)
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
    if b.get("replayed_usd"):  # turns answered from recordings: priced, never spent
        lines.insert(4, f"             replayed: {render.money(b['replayed_usd'])} not spent")
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
    ev = st["events"]
    whose = f" (origin {ev['origin']})" if ev.get("origin") else ""
    lines.append(f"events       {ev['count']} in {st['database']}{whose}")
    for o in ev.get("origins", []):  # a shared ledger: the team's chains
        mine = " (this daemon)" if o["origin"] == ev.get("origin") else ""
        lines.append(f"  origin     {o['origin']}: {o['events']} events, role {o['role']}{mine}")
    if ev.get("disk_full"):
        lines.append("             disk full: writes are refused until there is space")
    if ev.get("unreachable"):
        waiting = ev["count"] - ev["durable"]
        lines.append(
            f"             the shared ledger cannot be reached: {ev['unreachable']};"
            f" writes are refused, {waiting} event(s) wait to be written (retried by itself)"
        )
    lines += settings_lines(st.get("settings", []))
    out("\n".join(lines))
    for p in st.get("problems", []):  # on stderr, as `config list` reports them
        err(f"problem: {p['message']}")
        if p["hint"]:
            err(f"  hint: {p['hint']}")
    return 0


def _only_origin(st: dict[str, Any], origin: str) -> None:
    """``--origin``: the team's lines narrowed to one daemon's chain."""
    from tsukud.errors import UsageError

    ev = st["events"]
    if "origins" not in ev:
        raise UsageError(
            "status --origin is for a shared ledger (ledger.url)",
            hint="This daemon keeps its own ledger (SQLite): `tsukuctl status` shows it all.",
        )
    ev["origins"] = [o for o in ev["origins"] if o["origin"] == origin]
    if not ev["origins"]:
        raise UsageError(
            f"no origin {origin!r} in the shared ledger",
            hint="`tsukuctl status` lists the team's origins.",
        )


def settings_lines(settings: list[dict[str, Any]]) -> list[str]:
    """Every setting that is not at its default, and every key (set or not, never its
    value), each with where it came from."""
    shown = [s for s in settings if s["secret"] or s["source"] != "default"]
    if not shown:
        return []
    width = max(len(s["key"]) for s in shown)
    lines = ["settings     (not listed: defaults)"]
    for s in shown:
        # A key is only ever set or not; other values as TOML would spell them.
        value = ("set" if s["set"] else "not set") if s["secret"] else render.jsonl(s["value"])
        where = "" if s["secret"] and not s["set"] else f"  from {render.source_text(s['source'])}"
        lines.append(f"  {s['key']:<{width}}  {value}{where}")
    return lines


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("status", help="daemon, budget, rate limit and breaker state")
    p.add_argument("--json", action="store_true")
    p.add_argument("--origin", help="a shared ledger (ledger.url): one daemon's chain")
    p.set_defaults(fn=cmd_status)
