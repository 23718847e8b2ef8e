"""``tsukuctl eval``: the recipe builder's success rate, speed, cost and repair value,
measured over a corpus whose right answers are known (docs/eval.md).

``create`` runs create over the corpus and prints the figures; ``compare RUN_A RUN_B``
prints two runs' figures side by side and the difference in success rate with Fisher's
exact p-value. ``--json`` on each. Standard library only.
"""

from __future__ import annotations

import argparse

from tsukuctl import render
from tsukuctl.command import (
    add_provider_flags,
    add_repairs_flag,
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


def cmd_create(args: argparse.Namespace) -> int:
    from tsukuctl.progress import Display

    display = Display(quiet=args.json or getattr(args, "quiet", False))

    def on_progress(p: Any) -> None:
        if isinstance(p, dict) and p.get("message"):
            display.line(str(p["message"]))

    corpus = args.corpus
    if corpus != "builtin":
        import os

        corpus = os.path.abspath(corpus)
    params = {
        "corpus": corpus,
        "provider": args.provider,
        "only_provider": args.only_provider,
        "max_usd": args.max_usd,
        "repairs": args.repairs,
        "skip_validation": args.skip_validation,
        "yes": args.yes,
        "can_ask": can_ask() and not args.json,
    }
    try:
        res = rpc(args, "eval.create", params, on_progress=on_progress, on_confirm=ask_on_terminal)
    finally:
        display.close()
    if args.json:
        out(render.jsonl(res))
        return 0
    out(
        f"eval {res['run']}: corpus {res['corpus']} ({res['corpus_hash'][:12]}), "
        f"{res['provider']} {res['model'] or ''}, prompt {res['prompt_version']}, "
        f"repairs {res['repairs']}"
        + (", not validated (--skip-validation)" if res["skip_validation"] else "")
    )
    if res["reason"] != "finished":
        out(
            f"stopped ({res['reason']}) after {res['figures']['items']} of {res['items']} "
            "items: the figures are what it measured so far"
        )
    for line in figure_lines(res["figures"]):
        out(line)
    out(f"spent {render.money(res['spent_usd'])}; compare runs: tsukuctl eval compare RUN_A RUN_B")
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    res = rpc(args, "eval.compare", {"run_a": args.run_a, "run_b": args.run_b})
    if args.json:
        out(render.jsonl(res))
        return 0
    c = res["comparison"]
    for key, run in (("A", res["a"]), ("B", res["b"])):
        out(
            f"{key}: {run['run']} ({run['provider']} {run['model'] or ''}, prompt "
            f"{run['prompt_version']}, repairs {run['repairs']})"
        )
        for line in figure_lines(run["figures"]):
            out(f"  {line}")
    if not res["same_corpus"]:
        out("note: the runs answered different corpora (their hashes differ)")
    verdict = "significant" if c["significant"] else "not significant"
    out(
        f"success rate: {pct(c['rate_a'])} → {pct(c['rate_b'])} "
        f"({c['difference'] * 100:+.1f} points), p = {c['p_value']:.4g} "
        f"({c['test']}): {verdict} at 5 %"
    )
    wall_a, wall_b = c["wall_p50_s"]
    cost_a, cost_b = c["cost_median_usd"]
    tot_a, tot_b = c["cost_total_usd"]
    out(f"wall time P50: {wall_a:.2f} s → {wall_b:.2f} s ({wall_b - wall_a:+.2f} s)")
    out(
        f"cost: median {render.money(cost_a)} → {render.money(cost_b)}, "
        f"total {render.money(tot_a)} → {render.money(tot_b)}"
    )
    per_a, per_b = c["cost_per_success_usd"]
    out(f"cost per working recipe: {render.money(per_a)} → {render.money(per_b)}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "eval", help="measure the recipe builder: success rate, time, cost, repair value"
    )
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
    c.add_argument("-y", "--yes", action="store_true", help="accept the worst case without asking")
    c.add_argument("--json", action="store_true", help="the result as one JSON object")
    c.set_defaults(fn=cmd_create)
    m = actions.add_parser("compare", help="two runs' figures and the difference's significance")
    m.add_argument("run_a", metavar="RUN_A")
    m.add_argument("run_b", metavar="RUN_B")
    m.add_argument("--json", action="store_true", help="the result as one JSON object")
    m.set_defaults(fn=cmd_compare)
