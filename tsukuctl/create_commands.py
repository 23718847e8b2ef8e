"""``tsukuctl create <tool> --from github:owner/repo``.

Standard library only. The daemon does the work and streams its stages (fetching
releases, matching, asking <provider>, validating, repairing n/2) as progress, shown on
stderr. What happens with the recipe depends on how we were called:

* on a terminal: a preview (downloads per platform, actions, verify command, provider
  and cost, repairs used, validation status), then ``[v]iew full recipe, [s]ave,
  [i]nstall, [c]ancel``; ``s`` saves it (``create.save``), ``i`` saves and installs it;
* ``--yes``: written to ``$TSUKU_HOME/recipes/<tool>.toml`` (or ``--output``), no
  questions; ``--output -`` prints it;
* neither a terminal nor ``--yes``: written to ``--output`` if given, else printed to
  stdout and not saved;
* ``--json``: the daemon's result as one JSON object on stdout.

Cost, tokens, repairs and warnings (an unvalidated recipe, a deprecated model) go to
stderr, so stdout stays the recipe or the answer.
"""

from __future__ import annotations

import argparse
import os
import sys

from tsukuctl import render
from tsukuctl.command import (
    add_provider_flags,
    add_repairs_flag,
    add_trust_page_hosts,
    ask_on_terminal,
    can_ask,
    err,
    out,
    rpc,
)
from tsukuctl.progress import Progress
from tsukuctl.recipe_preview import money, review_created, validation_line
from tsukud.errors import ExitCode
from tsukud.terminal import terminal_safe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def summary(res: dict[str, Any]) -> None:
    """Cost, tokens, repairs and warnings, on stderr."""
    err(f"cost: {money(res)}")
    if res.get("repairs") or res.get("self_repairs"):
        err(
            f"repairs: {res.get('repairs', 0)} of {res.get('max_repairs', 2)} LLM repairs used"
            + "".join(f"; {s}" for s in res.get("self_repairs") or [])
        )
    for w in res.get("warnings") or []:
        prefix = "WARNING" if "NOT validated" in w else "warning"
        err(f"{prefix}: {w}")
    stats = res.get("tool_stats")
    if stats:
        from tsukuctl.tool_stats import print_tool_stats

        print_tool_stats(stats)


def _install(args: argparse.Namespace, tool: str) -> int:
    progress = Progress()
    try:
        res = rpc(args, "install", {"tool": tool, "force": args.force}, on_progress=progress)
    finally:
        progress.close()
    bins = ", ".join(res.get("binaries") or []) or "no binaries"
    out(f"installed {res['tool']} {res['version']} ({bins}) in {res['install_dir']}")
    return 0


def discarded(res: dict[str, Any]) -> str:
    """The one line for a recipe the user did not keep: the run is over and paid for,
    so it says what it spent, as the line for a run cancelled part-way does."""
    line = "cancelled: nothing was written"
    if res.get("provider") is None:
        return line
    cost = res.get("cost_usd")
    if cost is None:
        return f"{line}; what the run spent is unknown (a model without a price)"
    return f"{line}; the run spent {render.money(cost)}" if cost else line


def _interactive(args: argparse.Namespace, res: dict[str, Any], output: str | None) -> int:
    try:
        chosen = review_created(res, args.source)
    except KeyboardInterrupt:  # Ctrl-C at the question: as anywhere else, exit 130
        err(discarded(res))
        return ExitCode.CANCELLED
    if chosen is None:
        out(discarded(res))
        return 0
    saved = rpc(
        args,
        "create.save",
        {
            "tool": res["tool"],
            "recipe": res["recipe"],
            "output": output,
            "force": args.force,
            "session": res.get("session"),
        },
    )
    out(f"Recipe written: {saved['path']}")
    if output is not None:
        out(f"It is not in $TSUKU_HOME/recipes, so it was not installed: {saved['path']}")
        return 0
    if chosen == "save":
        out(f"To install it: tsukuctl install {res['tool']}")
        return 0
    return _install(args, res["tool"])


def cmd_create(args: argparse.Namespace) -> int:
    to_stdout = args.output == "-"
    output = os.path.abspath(args.output) if args.output and not to_stdout else None
    interactive = can_ask() and not args.yes and not args.json and not to_stdout
    write = not interactive and not to_stdout and (args.yes or output is not None)
    printing = not interactive and not write and not args.json
    params = {
        "tool": args.tool,
        "source": args.source,
        "output": output,
        "write": write,
        "force": args.force,
        "check_target": interactive or write,
        "deterministic_only": args.deterministic_only,
        "llm": args.llm,
        "skip_validation": args.skip_validation,
        "provider": args.provider,
        "only_provider": args.only_provider,
        "yes": args.yes,
        "can_ask": can_ask() and not args.json,
        "collect_tool_stats": args.collect_tool_stats,
        "version": args.version,
        "trust_page_hosts": args.trust_page_hosts,
        "max_repairs": args.repairs,
    }
    progress = Progress(quiet=args.json or args.quiet, ellipsis=True)
    try:
        res = rpc(args, "create", params, on_progress=progress, on_confirm=ask_on_terminal)
    finally:
        progress.close()
    if args.json:
        out(render.jsonl(res))
        return 0
    summary(res)
    if interactive:
        return _interactive(args, res, output)
    if printing:
        sys.stdout.write(terminal_safe(res["recipe"]))
        sys.stdout.flush()
        if not to_stdout:
            err(
                "note: the recipe was printed, not saved: use --yes to write it to "
                "$TSUKU_HOME/recipes, or --output PATH"
            )
        return 0
    out(f"Recipe created: {res['written']}")
    out(f"Validation: {validation_line(res)}")
    if output is None:
        out(f"To install it: tsukuctl install {res['tool']}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "create",
        help="write a recipe for a tool from its GitHub releases (create <tool> --from "
        "github:o/r) or its package (--from npm:<package>, pypi:<project>, crates:<crate>, "
        "rubygems:<gem>, go:<module>)",
    )
    p.add_argument("tool", help="the tool's name (the recipe's name)")
    p.add_argument(
        "--from",
        dest="source",
        required=True,
        metavar="SOURCE",
        help="github:owner/repo, npm:<package>, pypi:<project>, crates:<crate>, "
        "rubygems:<gem>, go:<module> or homebrew:<formula>",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--deterministic-only",
        action="store_true",
        help="never ask an LLM: the deterministic matcher's recipe or an error",
    )
    mode.add_argument(
        "--llm", action="store_true", help="ask an LLM even when the matcher is confident"
    )
    add_provider_flags(p)
    p.add_argument(
        "--version", help="build and validate the recipe for this release (default: the newest)"
    )
    p.add_argument(
        "--skip-validation",
        action="store_true",
        help="do not install and verify the recipe in a container (recorded in the recipe)",
    )
    add_repairs_flag(p)
    p.add_argument("-y", "--yes", action="store_true", help="no preview, no questions: write it")
    add_trust_page_hosts(p)
    p.add_argument("-o", "--output", help="write the recipe here (- prints it)")
    p.add_argument("--force", action="store_true", help="overwrite an existing recipe")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.add_argument(
        "--collect-tool-stats",
        action="store_true",
        help=argparse.SUPPRESS,  # a measurement for eval and debugging: docs/discovery.md
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    p.set_defaults(fn=cmd_create)
