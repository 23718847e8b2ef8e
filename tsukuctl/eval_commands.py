"""``tsukuctl eval``: the recipe builder's success rate, speed, cost and repair value,
and discovery's accuracy, latency, cost and questions, measured over a corpus whose
right answers are known (docs/eval.md).

``create`` runs create over the corpus and prints the figures (``--replay DIR``: the
model's answers from a recording); ``discover`` runs discovery over it; ``compare RUN_A
RUN_B`` prints two runs' figures side by side and the difference in success rate with
Fisher's exact p-value. ``--json`` on each. Standard library only.
"""

from __future__ import annotations

import argparse

from tsukuctl import render
from tsukuctl.command import (
    add_provider_flags,
    add_repairs_flag,
    add_search_provider_flag,
    ask_on_terminal,
    can_ask,
    out,
    rpc,
    usd,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The design's targets, printed beside the measured figures (docs/eval.md).
TARGET_RATE = 0.80
TARGET_WALL_S = 60.0
TARGET_COST_USD = 0.10
#: Discovery's: the issue's design figures, and the seed design's "LLM under 15
#: seconds" for the web-search stage (docs/eval.md, "eval discover").
TARGET_ACCURACY = 0.95
TARGET_LATENCY_P95_S = 10.0
TARGET_LLM_STAGE_S = 15.0
TARGET_DISCOVERY_USD = 0.05
TARGET_ACCEPTED = 0.80


def pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def figure_lines(f: dict[str, Any]) -> list[str]:
    """One run's figures, a line each (the same lines for create and compare)."""
    lo, hi = f["interval"]
    hist = ", ".join(f"{k}: {v}" for k, v in f["repairs_histogram"].items()) or "none"
    failures = ", ".join(f"{k} {v}" for k, v in f["failures"].items()) or "none"
    unpriced = f" ({f['unpriced']} without a known price)" if f["unpriced"] else ""
    return [
        f"success rate: {pct(f['success_rate'])} ({f['passed']} of {f['items']}), "
        f"95 % interval {pct(lo)} to {pct(hi)} (Wilson)  [target ≥ {pct(TARGET_RATE)}]",
        f"wall time per recipe: P50 {f['wall_p50_s']:.2f} s, P95 {f['wall_p95_s']:.2f} s  "
        f"[target < {TARGET_WALL_S:.0f} s]",
        f"cost per recipe: median {render.money(f['cost_median_usd'])}, "
        f"P95 {render.money(f['cost_p95_usd'])}, total {render.money(f['cost_total_usd'])}"
        f"{unpriced}  [target < {render.money(TARGET_COST_USD)}]",
        f"turns: median {f['turns_median']:g}, total {f['turns_total']}",
        f"repairs used: {f['repairs_total']} in all; items by repairs {hist}; "
        f"{f['passed_after_repair']} passed after a repair",
        f"failures: {failures}",
    ]


def discover_lines(f: dict[str, Any]) -> list[str]:
    """One discover run's figures, a line each (for discover and compare)."""
    lo, hi = f["interval"]
    failures = ", ".join(f"{k} {v}" for k, v in f["failures"].items()) or "none"
    where = ", ".join(f"{k} {v}" for k, v in f["asked_by"].items())
    unpriced = f" ({f['unpriced']} without a known price)" if f["unpriced"] else ""
    accepted = (
        "nobody was asked"
        if f["accepted_rate"] is None
        else f"{pct(f['accepted_rate'])} ({f['accepted']} of {f['asked']})"
    )
    llm = (
        f"P95 {f['llm_p95_s']:.2f} s over the {f['llm_items']} items that searched"
        if f["llm_items"]
        else "no item reached it"
    )
    return [
        f"accuracy: {pct(f['accuracy'])} ({f['right']} of {f['items']} resolved to the known "
        f"source), 95 % interval {pct(lo)} to {pct(hi)} (Wilson)  "
        f"[target ≥ {pct(TARGET_ACCURACY)}]",
        f"latency per tool: P50 {f['latency_p50_s']:.2f} s, P95 {f['latency_p95_s']:.2f} s  "
        f"[target P95 < {TARGET_LATENCY_P95_S:.0f} s]",
        f"web-search stage: {llm}  [seed design: under {TARGET_LLM_STAGE_S:.0f} s]",
        f"cost per tool: median ${f['cost_median_usd']:.4f}, P95 ${f['cost_p95_usd']:.4f}, "
        f"total {render.money(f['cost_total_usd'])}{unpriced}  "
        f"[target < {render.money(TARGET_DISCOVERY_USD)}]",
        f"a person asked: {f['asked']} of {f['items']} ({pct(f['asked_rate'])})"
        + (f": {where}" if where else ""),
        f"confirmations accepted: {accepted}  [target ≥ {pct(TARGET_ACCEPTED)}]",
        f"failures: {failures}",
    ]


def shown_lines(run: dict[str, Any]) -> list[str]:
    kind = run.get("kind", "create")
    return (discover_lines if kind == "discover" else figure_lines)(run["figures"])


def run_line(run: dict[str, Any]) -> str:
    """Which run, of what, with which model and prompt."""
    kind = run.get("kind", "create")
    said = (
        f"eval {run['run']}: {'discovery, ' if kind == 'discover' else ''}corpus "
        f"{run['corpus']} ({run['corpus_hash'][:12]}), {run['provider']} "
        f"{run['model'] or ''}, prompt {run['prompt_version']}"
    )
    if kind == "create":
        said += f", repairs {run['repairs']}"
        if run.get("skip_validation"):
            said += ", not validated (--skip-validation)"
        if run.get("replay"):
            said += f", replayed from {run['replay']}"
    return said


def progress_display(args: argparse.Namespace) -> tuple[Any, Any]:
    from tsukuctl.progress import Display

    display = Display(quiet=args.json or getattr(args, "quiet", False))

    def on_progress(p: Any) -> None:
        if isinstance(p, dict) and p.get("message"):
            display.line(str(p["message"]))

    return display, on_progress


def corpus_arg(corpus: str) -> str:
    import os

    return corpus if corpus == "builtin" else os.path.abspath(corpus)


def print_run(res: dict[str, Any]) -> None:
    out(run_line(res))
    for miss in res.get("recording_mismatches") or ():
        out(f"{miss['tool']}: recording does not match, not scored: {miss['detail']}")
    for item in res.get("not_scored") or ():  # an outage says nothing of what is measured
        out(f"{item['tool']}: {item['category']}, not scored: {item['detail']}")
    if res["reason"] != "finished":
        out(
            f"stopped ({res['reason']}) after {res['figures']['items']} of {res['items']} "
            "items: the figures are what it measured so far"
        )
    for line in shown_lines(res):
        out(line)
    out(f"spent {render.money(res['spent_usd'])}; compare runs: tsukuctl eval compare RUN_A RUN_B")


def cmd_discover(args: argparse.Namespace) -> int:
    params = {
        "corpus": corpus_arg(args.corpus),
        "provider": args.provider,
        "only_provider": args.only_provider,
        "search_provider": args.search_provider,
        "max_usd": args.max_usd,
        "yes": args.yes,
        "can_ask": can_ask() and not args.json,
    }
    return _run(args, "eval.discover", params)


def cmd_create(args: argparse.Namespace) -> int:
    params = {
        "corpus": corpus_arg(args.corpus),
        "provider": args.provider,
        "only_provider": args.only_provider,
        "max_usd": args.max_usd,
        "repairs": args.repairs,
        "skip_validation": args.skip_validation,
        "yes": args.yes,
        "can_ask": can_ask() and not args.json,
        "replay": corpus_arg(args.replay) if args.replay else None,
    }
    return _run(args, "eval.create", params)


def _run(args: argparse.Namespace, method: str, params: dict[str, Any]) -> int:
    """An eval run: its progress shown as it goes, then its figures (or ``--json``)."""
    display, on_progress = progress_display(args)
    try:
        res = rpc(args, method, params, on_progress=on_progress, on_confirm=ask_on_terminal)
    finally:
        display.close()
    if args.json:
        out(render.jsonl(res))
        return 0
    print_run(res)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    res = rpc(args, "eval.compare", {"run_a": args.run_a, "run_b": args.run_b})
    if args.json:
        out(render.jsonl(res))
        return 0
    c = res["comparison"]
    for key, run in (("A", res["a"]), ("B", res["b"])):
        out(f"{key}: {run_line(run)}")
        for line in shown_lines(run):
            out(f"  {line}")
    if not res["same_corpus"]:
        out("note: the runs answered different corpora (their hashes differ)")
    verdict = "significant" if c["significant"] else "not significant"
    discover = res["a"].get("kind") == "discover"
    rate, time_, per = (
        ("accuracy", "latency", "right source")
        if discover
        else ("success rate", "wall time", "working recipe")
    )
    out(
        f"{rate}: {pct(c['rate_a'])} → {pct(c['rate_b'])} "
        f"({c['difference'] * 100:+.1f} points), p = {c['p_value']:.4g} "
        f"({c['test']}): {verdict} at 5 %"
    )
    wall_a, wall_b = c["wall_p50_s"]
    cost_a, cost_b = c["cost_median_usd"]
    tot_a, tot_b = c["cost_total_usd"]
    out(f"{time_} P50: {wall_a:.2f} s → {wall_b:.2f} s ({wall_b - wall_a:+.2f} s)")
    out(
        f"cost: median {render.money(cost_a)} → {render.money(cost_b)}, "
        f"total {render.money(tot_a)} → {render.money(tot_b)}"
    )
    per_a, per_b = c["cost_per_success_usd"]
    out(f"cost per {per}: {render.money(per_a)} → {render.money(per_b)}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser("eval", help="measure the recipe builder and discovery: success, time, cost")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    c = actions.add_parser("create", help="create recipes for a corpus and print the figures")
    c.add_argument(
        "--corpus",
        default="builtin",
        metavar="builtin|DIR",
        help="builtin (shipped ground truth) or a directory holding corpus.json",
    )
    add_provider_flags(c)
    add_repairs_flag(c)
    c.add_argument(
        "--max-usd",
        type=usd,
        metavar="X",
        help="stop before the run spends more than this on LLMs (figures so far are printed)",
    )
    c.add_argument(
        "--skip-validation",
        action="store_true",
        help="do not validate the recipes in a container (faster; checks the assets only)",
    )
    c.add_argument(
        "--replay",
        metavar="DIR",
        help="answer the model's turns from a recording TSUKU_LLM_RECORD_DIR wrote "
        "(re-score a recorded run offline)",
    )
    c.add_argument("-y", "--yes", action="store_true", help="accept the worst case without asking")
    c.add_argument("--json", action="store_true", help="the result as one JSON object")
    c.set_defaults(fn=cmd_create)
    d = actions.add_parser(
        "discover", help="discover each corpus tool's source and print accuracy, time, cost"
    )
    d.add_argument(
        "--corpus",
        default="builtin",
        metavar="builtin|DIR",
        help="builtin (tools with known sources) or a directory holding corpus.json",
    )
    add_provider_flags(d)
    add_search_provider_flag(d)
    d.add_argument(
        "--max-usd",
        type=usd,
        metavar="X",
        help="stop before the run spends more than this on LLMs (figures so far are printed)",
    )
    d.add_argument("-y", "--yes", action="store_true", help="accept the worst case without asking")
    d.add_argument("--json", action="store_true", help="the result as one JSON object")
    d.set_defaults(fn=cmd_discover)
    m = actions.add_parser("compare", help="two runs' figures and the difference's significance")
    m.add_argument("run_a", metavar="RUN_A")
    m.add_argument("run_b", metavar="RUN_B")
    m.add_argument("--json", action="store_true", help="the result as one JSON object")
    m.set_defaults(fn=cmd_compare)
