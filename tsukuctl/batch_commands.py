"""``tsukuctl batch``: queue sources and drain them into recipes (docs/batch.md).

``add FILE|-`` queues ``TOOL SOURCE`` lines (or JSON lines with a priority), ``run``
drains the queue through create and validation with progress (done / failed /
deferred / remaining, rate, ETA, spend), ``status`` says where the queue stands and why
jobs failed, ``retry`` queues failed or deferred jobs again, ``export DIR`` writes each
tool's recipe in the registry layout, ``clear`` drops the queue. ``--json`` on each.
Standard library only.
"""

from __future__ import annotations

import argparse
import os
import sys

from tsukuctl import render
from tsukuctl.command import add_provider_flags, count, err, out, rpc, usd
from tsukud.errors import ExitCode

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


PART_CHARS = 256 * 1024  # a request stays well under the 1 MiB frame limit


def parts(text: str, size: int = PART_CHARS) -> list[tuple[int, str]]:
    """``text`` cut at line ends into parts of about ``size`` characters, each with the
    number of its first line."""
    out: list[tuple[int, str]] = []
    lines = text.splitlines(keepends=True)
    chunk: list[str] = []
    start, chars = 1, 0
    for number, line in enumerate(lines, 1):
        if chunk and chars + len(line) > size:
            out.append((start, "".join(chunk)))
            start, chunk, chars = number, [], 0
        chunk.append(line)
        chars += len(line)
    if chunk or not out:
        out.append((start, "".join(chunk)))
    return out


def _add_in_parts(args: argparse.Namespace, text: str) -> dict[str, Any]:
    """One ``batch.add`` per part, the answers added up (a later part finds what an
    earlier one queued as already queued)."""
    total: dict[str, Any] = {"added": 0, "already_queued": [], "duplicate_lines": [], "bad": []}
    for first, part in parts(text):
        res = rpc(args, "batch.add", {"text": part, "first_line": first})
        total["added"] += res["added"]
        for key in ("already_queued", "duplicate_lines", "bad"):
            total[key] += res[key]
        total["queued"] = res["queued"]
    return total


def cmd_add(args: argparse.Namespace) -> int:
    if args.file == "-":
        text = sys.stdin.read()
    else:
        try:
            with open(args.file, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as exc:
            err(f"tsukuctl: cannot read {args.file}: {exc.strerror}")
            err("hint: name a readable file of TOOL SOURCE lines, or - for stdin")
            return ExitCode.USAGE
    res = _add_in_parts(args, text)
    if args.json:
        out(render.jsonl(res))
    else:
        out(f"queued {res['added']} source(s); {res['queued']} waiting in the queue")
        if res["already_queued"]:
            out(f"{len(res['already_queued'])} already queued, not queued again")
        if res["duplicate_lines"]:
            lines = ", ".join(map(str, res["duplicate_lines"][:20]))
            out(f"duplicates (given earlier in the input), line(s) {lines}")
        for bad in res["bad"]:
            err(f"line {bad['line']}: {bad['error']}: {bad['text']}")
    if res["bad"]:
        err(f"{len(res['bad'])} line(s) were not queued; the others were")
        return ExitCode.PARTIAL_FAILURE
    return 0


def _progress_line(p: dict[str, Any]) -> str:
    if "outcome" not in p:
        return str(p.get("message") or "")
    eta = p.get("eta_s")
    left = f", ETA {render.duration(eta)}" if eta else ""
    spend = f", {render.money(p['spent_usd'])} spent" if p.get("spent_usd") else ""
    return (
        f"{p['message']}  [{p['done']} done, {p['failed']} failed, {p['deferred']} deferred, "
        f"{p['remaining']} left; {p['rate_per_min']}/min{left}{spend}]"
    )


def cmd_run(args: argparse.Namespace) -> int:
    from tsukuctl.progress import Display

    display = Display(quiet=args.json)

    def on_progress(p: Any) -> None:
        if isinstance(p, dict):
            display.line(_progress_line(p))

    params = {
        "deterministic_only": args.deterministic_only,
        "llm": args.llm,
        "provider": args.provider,
        "only_provider": args.only_provider,
        "skip_validation": args.skip_validation,
        "max_usd": args.max_usd,
        "jobs": args.jobs,
        "yes": args.yes,
    }
    try:
        res = rpc(args, "batch.run", params, on_progress=on_progress)
    finally:
        display.close()
    if args.json:
        out(render.jsonl(res))
        return 0
    out(
        f"batch {res['run']}: {res['done']} done, {res['failed']} failed, "
        f"{res['deferred']} deferred in {render.duration(res['duration_ms'] / 1000)} "
        f"({res['rate_per_min']}/min, {res['workers']} workers); "
        f"spent {render.money(res['spent_usd'])}"
    )
    if res["remaining"]:
        note = (
            f" ({res['backoff']} waiting out a backoff after a failure)" if res["backoff"] else ""
        )
        out(f"{res['remaining']} job(s) remain in the queue{note}: run `tsukuctl batch run` again")
    for scope, n in sorted(res.get("waiting_on_breakers", {}).items()):
        out(f"{n} job(s) of {scope} wait in the queue: its circuit is open (it was unwell)")
    if res["failed"]:
        out("`tsukuctl batch status` groups the failures by reason")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    res = rpc(args, "batch.status", {"examples": args.examples})
    if args.json:
        out(render.jsonl(res))
        return 0
    c = res["counts"]
    out(
        f"{res['total']} job(s): {c['done']} done, {c['failed']} failed, {c['deferred']} "
        f"deferred, {c['queued']} queued, {c['running']} running, {c['backoff']} in backoff"
    )
    if res["active_run"]:
        out(f"run {res['active_run']} is active")
    for job in res["running"]:
        out(f"  running: {job['tool']} ({job['source']}), attempt {job['attempt']}")
    for group in res["failures"]:
        extra = f", {group['backoff']} to be tried again" if group["backoff"] else ""
        out(f"failed: {group['category']} ({group['count']}{extra})")
        for ex in group["examples"]:
            out(f"  {ex['tool']} ({ex['source']}): {ex['message']}")
    for d in res["deferred"]:
        out(f"deferred: {d['reason']} ({d['count']})")
    out(f"spent by finished runs: {render.money(res['spent_usd'])}")
    if res["stale_commits"]:
        out(f"{res['stale_commits']} outcome(s) from expired leases were refused")
    return 0


def cmd_retry(args: argparse.Namespace) -> int:
    res = rpc(args, "batch.retry", {"failed": args.failed, "deferred": args.deferred})
    if args.json:
        out(render.jsonl(res))
    else:
        out(f"queued {res['retried']} {' and '.join(res['states'])} job(s) again")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    directory = os.path.abspath(args.directory)
    res = rpc(args, "batch.export", {"directory": directory, "unvalidated": args.unvalidated})
    if args.json:
        out(render.jsonl(res))
        return 0
    out(
        f"{res['recipes']} recipe(s) in {res['directory']}: {len(res['written'])} written, "
        f"{res['unchanged']} unchanged"
    )
    if res["unvalidated_skipped"]:
        out(
            f"{res['unvalidated_skipped']} recipe(s) made with --skip-validation were left "
            "out (--unvalidated writes them too)"
        )
    return 0


def cmd_clear(args: argparse.Namespace) -> int:
    res = rpc(args, "batch.clear", {})
    if args.json:
        out(render.jsonl(res))
    else:
        out(f"cleared the queue ({res['cleared']} job(s))")
    return 0


def _action(actions: Any, name: str, help: str, fn: Any) -> argparse.ArgumentParser:
    """One ``batch`` action, with the ``--json`` every action has."""
    p: argparse.ArgumentParser = actions.add_parser(name, help=help)
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.set_defaults(fn=fn)
    return p


def register(sub: Any) -> None:
    p = sub.add_parser("batch", help="queue sources and generate their recipes in bulk")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    a = _action(actions, "add", "queue sources from a file (- for stdin)", cmd_add)
    a.add_argument("file", metavar="FILE", help="TOOL SOURCE lines, or JSON lines with a priority")

    r = _action(actions, "run", "drain the queue through create and validation", cmd_run)
    mode = r.add_mutually_exclusive_group()
    mode.add_argument(
        "--deterministic-only", action="store_true", help="never ask an LLM (no spend)"
    )
    mode.add_argument(
        "--llm", action="store_true", help="ask an LLM even when the matcher is confident"
    )
    add_provider_flags(r)
    r.add_argument(
        "--skip-validation",
        action="store_true",
        help="do not validate in a container (export leaves such recipes out)",
    )
    r.add_argument(
        "--max-usd",
        type=usd,
        metavar="X",
        help="the most this run may spend on LLMs; jobs that would pass it are deferred",
    )
    r.add_argument(
        "--jobs",
        type=count,
        metavar="N",
        help="workers at once, 1 to 256 (default: twice the cores)",
    )
    r.add_argument("-y", "--yes", action="store_true", help="accept costs without asking")

    s = _action(actions, "status", "the queue by state, and why jobs failed", cmd_status)
    s.add_argument(
        "--examples",
        type=count,
        default=3,
        metavar="N",
        help="failed jobs shown per reason (default 3, at most 50)",
    )

    t = _action(actions, "retry", "queue failed and/or deferred jobs again", cmd_retry)
    t.add_argument("--failed", action="store_true", help="failed jobs (default: both)")
    t.add_argument("--deferred", action="store_true", help="deferred jobs (default: both)")

    e = _action(actions, "export", "write each tool's recipe to DIR/recipes/<letter>/", cmd_export)
    e.add_argument("directory", metavar="DIR")
    e.add_argument(
        "--unvalidated", action="store_true", help="also recipes made with --skip-validation"
    )

    _action(actions, "clear", "drop the queue (not while a run is active)", cmd_clear)
