"""``tsukuctl events [list|summary|verify]``: the audit ledger as a table, JSON lines or CSV.

Listing streams: the daemon sends the matching events in batches as progress frames, and
JSON lines and CSV are written batch by batch, so a machine reader of a long ledger sees
rows before the last one is read.
"""

from __future__ import annotations

import argparse
import sys

from tsukuctl import render
from tsukuctl.command import count, err, head_hash, out, rpc
from tsukud.errors import UsageError

TYPE_CHECKING = False  # typing is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from typing import Any


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
    if args.origin:
        f["origin"] = args.origin
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
    if args.head and action != "verify":  # would be ignored: say so, do not guess
        raise UsageError(
            f"--head is for `tsukuctl events verify`, not events {action}",
            hint=f"tsukuctl events verify --head {args.head}",
        )
    if args.top and action != "summary":
        raise UsageError(
            f"--top is for `tsukuctl events summary`, not events {action}",
            hint=f"tsukuctl events summary --by session --top {args.top}",
        )
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
            if result.get("hint"):
                err(f"hint: {result['hint']}")
            return 0
        # A shared ledger's events name their daemon (origin) and place in its chain.
        shared = "origin" in rows[0]
        base = 24 + 2 + 22 + 2 + 12 + 2 + 8 + (24 if shared else 0)
        table_rows = [
            [
                e["id"],
                e["ts"][:23].replace("T", " "),
                *([f"{e['origin']}#{e['seq']}"] if shared else []),
                e["type"],
                (e["session"] or "")[:12],
                render.compact(e["payload"], max(20, width - base)),
            ]
            for e in rows
        ]
        heads = ("ID", "TIME (UTC)", *(("ORIGIN#SEQ",) if shared else ()), "TYPE", "SESSION")
        out(render.table((*heads, "DETAILS"), table_rows, right=frozenset({0})))
        shown = result["count"]
        if args.limit and shown == args.limit:
            sys.stderr.write(f"(newest {shown} shown; --limit 0 for all)\n")
    return 0


def _events_summary(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"filter": _filter(args), "by": args.by}
    if args.top:
        params["top"] = min(args.top, MAX_SUMMARY_GROUPS)
    res = rpc(args, "events.summary", params)
    rest = res.get("rest")
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
            "cost_estimated_usd",
            "cost_unknown",
        )
        rows = [[g.get(c, "") for c in cols] for g in res["groups"]]
        if rest:  # the groups not listed, as one row whose key says how many
            rows.append([_rest_label(args.by, rest), *(rest.get(c, "") for c in cols[1:])])
        sys.stdout.write(render.csv_text(cols, rows))
        return 0
    rows = [_summary_row(g["key"] if g["key"] is not None else "(none)", g) for g in res["groups"]]
    if rest:
        rows.append(_summary_row(_rest_label(args.by, rest), rest))
    rows.append(_summary_row("total", res["totals"]))
    out(
        render.table(
            (args.by.upper(), "EVENTS", "LLM TURNS", "INPUT TOK", "OUTPUT TOK", "COST"),
            rows,
            right=frozenset({1, 2, 3, 4}),
        )
    )
    if res.get("replayed_usd"):  # turns a recording answered: priced, never spent
        out(f"replayed: {render.money(res['replayed_usd'])} not spent")
    return 0


# The daemon's most groups per answer (tsukud.events.summary.MAX_GROUPS; not imported:
# the client stays light). A larger --top is that many.
MAX_SUMMARY_GROUPS = 2000


def _rest_label(by: str, rest: dict[str, Any]) -> str:
    """The row of the groups a summary did not list (it lists those costing most)."""
    return f"({rest['groups']} other {by}s; --top N lists more)"


def _summary_row(label: str, g: dict[str, Any]) -> list[Any]:
    """One line of the summary table: a group's, or the totals'."""
    unpriced = f" +{g['cost_unknown']} unpriced" if g["cost_unknown"] else ""
    # Charged at a worst case (a call cut off before its usage was known): said so.
    estimated = g.get("cost_estimated_usd") or 0
    of_which = f" (of which {render.money(estimated)} estimated)" if estimated else ""
    return [
        label,
        g["events"],
        g["llm_turns"],
        g["input_tokens"],
        g["output_tokens"],
        render.money(g["cost_usd"]) + of_which + unpriced,
    ]


def _events_verify(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"head": args.head} if args.head else {}
    if args.all_origins:
        params["all_origins"] = True
    if args.anchors:
        params["anchors"] = True
    res = rpc(args, "events.verify", params or None)
    if args.json:
        out(render.jsonl(res))
    else:
        whose = f" (origin {res['origin']})" if "origin" in res else ""
        out(f"ledger ok{whose}: {res['checked']} events, hash chain intact (head {res['head']})")
        for o in res.get("origins", []):
            out(f"  origin {o['origin']}: {o['checked']} events, chain intact (head {o['head']})")
        if "anchors" in res:
            n = res["anchors"]["checked"]
            out(f"  anchors: every chain reaches the {n} head{'s' if n != 1 else ''} recorded")
        if "head_id" in res:
            out(f"the head you gave is event {res['head_id']}: nothing up to it was changed")
        if res.get("rollups") == "rebuilt":
            out("summary rollups did not add up to the events: rebuilt from them")
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("events", help="the audit ledger: list, summary, verify")
    p.add_argument("action", nargs="?", choices=("list", "summary", "verify"))
    p.add_argument("--since", help="e.g. 7d, 12h, 2026-11-01")
    p.add_argument("--until", help="same forms as --since (exclusive)")
    p.add_argument("--type", action="append", help="event type or prefix (llm.*); repeatable")
    p.add_argument("--session", help="one run's session id")
    p.add_argument("--origin", help="a shared ledger (ledger.url): one daemon's events")
    p.add_argument(
        "--all-origins",
        action="store_true",
        help="verify: every daemon's chain in a shared ledger, not only this one's, "
        "and the anchors",
    )
    p.add_argument(
        "--anchors",
        action="store_true",
        help="verify: every chain in a shared ledger still reaches each head an anchor recorded",
    )
    p.add_argument("--limit", type=count, default=100, help="newest N events (0: all; default 100)")
    p.add_argument(
        "--top",
        type=count,
        default=0,
        help="summary: the N groups costing most, the others summed in one row "
        "(default and most: 2000)",
    )
    p.add_argument(
        "--by",
        default="day",
        choices=("day", "hour", "provider", "model", "session", "type"),
        help="summary grouping (default day)",
    )
    p.add_argument(
        "--head",
        metavar="HASH",
        type=head_hash,
        help="verify: a head printed earlier (16+ hex digits) that the ledger must still contain",
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument("--json", action="store_true", help="one JSON object per line")
    g.add_argument("--csv", action="store_true")
    p.set_defaults(fn=cmd_events)
