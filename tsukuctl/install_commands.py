"""``tsukuctl install|list|remove (uninstall, rm)|verify|info|update-registry``.

Standard library only (this module is loaded with the rest of the CLI). Progress goes
to stderr (``tsukuctl.progress``: a live line on a terminal, one line per stage
otherwise); the final answer is one clear line on stdout, or one JSON object with
``--json``.
"""

from __future__ import annotations

import argparse
import os
import sys

from tsukuctl import render
from tsukuctl.command import (
    add_provider_flags,
    add_search_provider_flag,
    add_trust_page_hosts,
    ask_on_terminal,
    can_ask,
    err,
    out,
    rpc,
    tool_names,
)
from tsukuctl.progress import Progress
from tsukud.errors import ExitCode, TsukuError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def answer(question: dict[str, Any]) -> bool | int:
    """A daemon's question. A recipe written on the way (no recipe existed) is shown and
    reviewed exactly as ``tsukuctl create`` shows it; anything else is a y/N."""
    created = question.get("create")
    if question.get("kind") == "recipe" and isinstance(created, dict):
        from tsukuctl.recipe_preview import review

        return review(created, str(question.get("source", "")), to_stderr=True)
    return ask_on_terminal(question)


def _split(spec: str) -> tuple[str, str | None]:
    name, at, version = spec.partition("@")
    if at and not version:  # a typo, not "the newest": the daemon's rule, before a request
        raise UsageError(f"{spec!r}: nothing after '@'", hint="Write tool@1.2.3 or just tool.")
    return name, version or None


def _path_note(links: list[str]) -> None:
    if not links:
        return
    bin_dir = os.path.dirname(links[0])
    path = os.environ.get("PATH", "").split(os.pathsep)
    if bin_dir in path:
        return
    if _hook_installed():  # done already: this shell predates it
        sys.stderr.write(
            f"note: {bin_dir} is not on this shell's PATH yet: the hook you installed adds "
            "it in new shells (or run `exec $SHELL` here)\n"
        )
        return
    sys.stderr.write(
        f"note: {bin_dir} is not on PATH; `tsukuctl hook install` adds it for new shells"
        " (`tsukuctl shell-init SHELL` prints the line for an rc file you keep yourself)\n"
    )


def _hook_installed() -> bool:
    """Whether the rc file of the caller's shell already sources tsuku's hook."""
    from tsukuctl.hook_commands import current_line, detect_shell, rc_path

    try:
        rc = rc_path(detect_shell(os.environ), os.environ)
        with open(rc, encoding="utf-8", errors="replace") as f:
            return current_line(f.read()) is not None
    except (OSError, TsukuError):
        return False


def each_tool(
    args: argparse.Namespace, one: Callable[[str], int], queue: list[str] | None = None
) -> int:
    """``install fd jq``, ``remove fd jq``: each tool in turn, as if named alone. One that
    fails says why and the rest still run; the exit code is then that failure's when
    every tool failed the same way, else 15 (some of several failed). A single tool's
    error is exactly what it always was. Ctrl-C ends the whole command. ``queue``: the
    names in turn, which ``one`` may append a name to (``remove``'s set), by default
    ``args.tools``."""
    from tsukuctl.cli import error_object, print_error
    from tsukuctl.client import RemoteError

    tools: list[str] = args.tools
    if len(tools) == 1:
        return one(tools[0])
    codes: list[int] = []
    for spec in tools if queue is None else queue:
        try:
            one(spec)
        except RemoteError as e:
            if e.remote_code == "cancelled":
                raise
            codes.append(e.exit_status)
            _failed(args, spec, error_object(e), print_error)
        except TsukuError as e:
            codes.append(e.exit_code)
            _failed(args, spec, error_object(e), print_error)
    return several_exit(codes, len(tools))


def several_exit(codes: list[int], tried: int) -> int:
    """The exit code of a command over several tools whose failures exited ``codes``:
    0 when none failed, the failures' code when all ``tried`` failed the same way, else
    15 (some of several failed). ``install``, ``remove`` and ``upgrade`` share it."""
    if not codes:
        return 0
    if len(codes) == tried and len(set(codes)) == 1:
        return codes[0]
    return ExitCode.PARTIAL_FAILURE


def _failed(
    args: argparse.Namespace,
    spec: str,
    error: dict[str, Any],
    print_error: Callable[[str, str], None],
) -> None:
    if args.json:  # one line per tool: its result, or {"tool", "error"}
        out(render.jsonl({"tool": spec, "error": error}))
    else:
        print_error(f"{spec}: {error['message']}", str(error.get("hint") or ""))


def cmd_install(args: argparse.Namespace) -> int:
    if args.source and len(args.tools) > 1:
        raise UsageError(
            "--from names the source of one tool, and several were given",
            hint="Install the tool with --from on its own: tsukuctl install TOOL --from SOURCE.",
        )
    return each_tool(args, lambda spec: _install(args, spec))


def _install(args: argparse.Namespace, spec: str) -> int:
    name, version = _split(spec)
    progress = Progress(quiet=args.json)
    try:
        params = {"tool": name, "version": version, "force": args.force, "yes": args.yes}
        params["can_ask"] = can_ask() and not args.json  # a run_command needs a person's yes
        if not args.no_discover:  # no recipe: discover, create, install (tsukuctl discover)
            params.update(discover=True)
            params.update(source=args.source, search_provider=args.search_provider)
            params.update(provider=args.provider, only_provider=args.only_provider)
            if args.trust_page_hosts:
                params["trust_page_hosts"] = True
        if args.collect_tool_stats:
            params["collect_tool_stats"] = True
        res = rpc(args, "install", params, on_progress=progress, on_confirm=answer)
    finally:
        progress.close()
    if args.json:
        out(render.jsonl(res))
        return 0
    if res.get("already_installed"):
        out(f"{res['tool']} {res['version']} is already installed (--force reinstalls it)")
        return 0
    found = res.get("discovery")
    if found and found.get("stage") == "from":  # the person named it: nothing discovered
        out(f"source of {res['tool']}: {found.get('source')} (named with --from)")
    elif found:
        how = {
            "yes_flag": "approved by --yes",
            "user": "approved by you",
            "trusted": "from the discovery registry",
        }.get(found.get("approval") or "", "no approval was asked")
        builder = found.get("builder") or "github"
        where = f"{builder}:{found.get('source')}"
        if builder == "instructions":  # a vendor's install page, read by an LLM
            where, how = f"the install page {found.get('source')}", "recipe validated"
        out(f"discovered {res['tool']}: {where} ({how})")
    if args.collect_tool_stats:
        from tsukuctl.tool_stats import print_tool_stats

        print_tool_stats(res.get("tool_stats") or [])
    bins = ", ".join(res.get("binaries") or []) or "no binaries"
    replaced = f", replacing {res['replaced']}" if res.get("replaced") else ""
    out(f"installed {res['tool']} {res['version']} ({bins}) in {res['install_dir']}{replaced}")
    _path_note(res.get("links") or [])
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    res = rpc(args, "tools.list")
    tools = res["tools"]
    if args.json:
        out(render.jsonl(res))
        return 0
    if not tools:
        out("no tools installed")
        return 0
    rows = [
        [
            t["tool"],
            t["version"],
            commands_shown(t),
            (t.get("installed_at") or "")[:19].replace("T", " "),
            t.get("recipe_source") or "",
        ]
        for t in tools
    ]
    out(render.table(("TOOL", "VERSION", "BINARIES", "INSTALLED (UTC)", "RECIPE"), rows))
    hidden = [t["tool"] for t in tools if "toolchain_for" in t]
    if hidden:
        out("note: " + toolchains_told(hidden[0]))
    if any(t.get("toolchain_for") == [] for t in tools):  # left behind: no tool uses it
        out("note: `tsukuctl remove --unused` removes the toolchains no installed tool uses.")
    return 0


def commands_shown(row: dict[str, Any]) -> str:
    """A ``list`` row's commands on PATH: a hidden toolchain has none (nothing of it is
    linked into bin/), so it is shown as what it is, never as its programs."""
    if "toolchain_for" not in row:
        return ", ".join(row["binaries"])
    users = row["toolchain_for"]
    return f"(toolchain for {', '.join(users)})" if users else "(toolchain, not on PATH)"


def toolchains_told(example: str = "nodejs") -> str:
    """What happens to a toolchain tsuku installed for other tools: said under a
    ``list`` that shows one (``example``: one of those shown) and in ``remove --help``."""
    return (
        "A toolchain tsuku installed for other tools (nodejs for an npm tool, rust for a "
        "crate, ...) is hidden: none of its commands is on your PATH, and it is removed "
        "with the last tool that uses it. One you install by name (tsukuctl install "
        f"{example}) is yours: linked into bin/ and never removed that way."
    )


def cmd_remove(args: argparse.Namespace) -> int:
    """``remove nodejs greet``: the names are judged as one set, whatever order they
    were typed in. A tool the daemon will not remove yet because tools named after it
    need it (``dependency_in_use`` naming only those) waits until they have gone, so
    the tools go first and then the toolchains (and other dependencies) they no longer
    need; the daemon's own rule decides, nothing is guessed here. A hidden toolchain a
    tool's removal took with it is then already gone as asked: said, not an error.
    ``remove --unused``: the hidden toolchains no installed tool uses."""
    from tsukuctl.client import RemoteError

    if args.unused:
        if args.tools:
            raise UsageError(
                "--unused removes the toolchains no tool uses, and tools were named too",
                hint="Run `tsukuctl remove --unused` on its own, and `tsukuctl remove TOOL` "
                "for the tools.",
            )
        return _remove_unused(args)
    if not args.tools:
        raise UsageError(
            "name the tools to remove",
            hint="`tsukuctl remove TOOL ...`, or `tsukuctl remove --unused` for the hidden "
            "toolchains no installed tool uses.",
        )
    taken: dict[str, str] = {}  # a toolchain an earlier tool's removal took -> that tool
    waited: dict[str, list[str]] = {}  # a tool put after the named tools that need it
    queue: list[str] = list(args.tools)
    turn = [-1]  # the position in ``queue`` of the name being removed

    def one(tool: str) -> int:
        turn[0] += 1
        try:
            return _remove(args, tool, taken, waited.get(tool))
        except RemoteError as e:
            needed_by = [str(u) for u in e.data.get("needed_by") or []]
            rest = queue[turn[0] + 1 :]  # the names whose turn is still to come
            if e.remote_code == "dependency_in_use" and needed_by and set(needed_by) <= set(rest):
                waited[tool] = needed_by
                queue.append(tool)  # judged again once they have gone
                return _LATER
            raise

    return each_tool(args, one, queue)


_LATER = -1  # ``one`` of ``each_tool``: this tool was put after others; not a result


def _remove(
    args: argparse.Namespace, tool: str, taken: dict[str, str], after: list[str] | None
) -> int:
    if tool in taken:
        if args.json:
            out(render.jsonl({"tool": tool, "removed_with": taken[tool]}))
        else:
            out(f"{tool}: removed with {taken[tool]}, as its toolchain")
        return 0
    res = rpc(args, "tools.remove", {"tool": tool})
    taken.update((chain["tool"], res["tool"]) for chain in res.get("also_removed") or [])
    if args.json:
        out(render.jsonl(res))
        return 0
    why = f" (after {', '.join(after)}, which needed it)" if after else ""
    out(f"removed {res['tool']} {res['version']}{why}")
    for chain in res.get("also_removed") or []:
        out(
            f"also removed {chain['tool']} {chain['version']} "
            f"(toolchain for {chain['toolchain_for']}, no longer needed)"
        )
    for dep in res.get("unneeded_dependencies") or []:
        if dep not in args.tools:  # named: its own turn comes
            err(f"{dep} is no longer needed by any tool: tsukuctl remove {dep}")
    return 0


def _remove_unused(args: argparse.Namespace) -> int:
    """The hidden toolchains ``list`` shows as used by no installed tool (``(toolchain,
    not on PATH)``: their tool's install failed after them, or an upgrade stopped using
    them), shown, asked about (``--yes`` answers), then exactly those sent: the daemon
    removes each that is still unused when its turn comes and keeps any other."""
    rows = [
        t
        for t in rpc(args, "tools.list")["tools"]
        if "toolchain_for" in t and not t["toolchain_for"]
    ]
    if not rows:
        if args.json:
            out(render.jsonl({"removed": [], "kept": []}))
        else:
            out("no unused toolchains: every hidden toolchain is used by an installed tool")
        return 0
    shown = "\n".join(f"  {t['tool']} {t['version']}  {t['install_dir']}" for t in rows)
    told = (
        f"{'This toolchain was' if len(rows) == 1 else 'These toolchains were'} installed "
        f"for other tools and no installed tool uses {'it' if len(rows) == 1 else 'them'} "
        f"now (none of {'its' if len(rows) == 1 else 'their'} commands is on your PATH):\n" + shown
    )
    if not args.yes:
        if args.json or not can_ask():
            from tsukud.errors import ConfirmationRequired

            raise ConfirmationRequired(
                told.replace("\n", " ").replace("  ", " ") + "; nothing was removed",
                hint="Run `tsukuctl remove --unused --yes` to remove them, or run it from a "
                "terminal to be asked.",
            )
        if not ask_on_terminal({"message": told, "question": "Remove them?"}):
            from tsukud.errors import UserDeclined

            raise UserDeclined("nothing removed", hint="`tsukuctl remove --unused` asks again.")
    res = rpc(args, "tools.remove_unused", {"tools": [t["tool"] for t in rows]})
    if args.json:
        out(render.jsonl(res))
        return 0
    for gone in res["removed"]:
        out(f"removed {gone['tool']} {gone['version']} (toolchain no installed tool used)")
    for name in res["kept"]:
        out(f"kept {name}: it is no longer an unused hidden toolchain (used or asked for since)")
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    res = rpc(args, "tools.verify", {"tool": args.tool})
    if args.json:
        out(render.jsonl(res))
        return 0
    said = (res.get("output") or "").splitlines()
    printed = f"; verify printed {said[0]!r}" if said else ""
    n = len(res["binaries"])
    what = "1 binary matches its" if n == 1 else f"{n} binaries match their"
    out(f"{res['tool']} {res['version']} ok: {what} recorded sha256{printed}")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    res = rpc(args, "tools.info", {"tool": args.tool})
    if args.json:
        out(render.jsonl(res))
        return 0
    lines = [f"{res['tool']}" + (f": {res['description']}" if res.get("description") else "")]
    if res.get("homepage"):
        lines.append(f"homepage     {res['homepage']}")
    if res.get("recipe_source"):
        stale = " (cached copy; registry unreachable)" if res.get("recipe_stale") else ""
        lines.append(f"recipe       {res['recipe_source']}: {res['recipe_path']}{stale}")
    if "supported" in res:
        if res["supported"]:
            steps = "; ".join(
                f"{s['action']} {s['repo']} {s['asset_pattern']}" for s in res["steps"]
            )
            lines.append(f"platform     {res['platform']}: supported ({steps})")
        else:
            lines.append(f"platform     {res['platform']}: {res['unsupported_reason']}")
    if res.get("verify"):
        lines.append(f"verify       {res['verify']['command']}")
    inst = res.get("installed")
    if inst:
        bins = ", ".join(sorted(inst.get("binaries") or {}))
        lines.append(f"installed    {inst['version']} ({bins}) in {inst['install_dir']}")
        lines.append(f"installed at {inst.get('installed_at', '')}")
    else:
        lines.append("installed    no")
    if res.get("recipe_error"):
        lines.append(f"recipe error {res['recipe_error']}")
    out("\n".join(lines))
    return 0


def cmd_update_registry(args: argparse.Namespace) -> int:
    res = rpc(args, "registry.update")
    if args.json:
        out(render.jsonl(res))
        return 0
    out(
        f"registry updated: {res['recipes_listed']} recipes listed in {res['manifest_url']}; "
        f"{len(res['refreshed'])} cached recipes refreshed"
        + (f", {len(res['removed'])} removed" if res["removed"] else "")
        + (f", {len(res['failed'])} failed" if res["failed"] else "")
    )
    for name, message in sorted(res["failed"].items()):
        err(f"  {name}: {message}")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "install", help="install tools from their recipes: install <tool>[@version] ..."
    )
    tool_names(
        p.add_argument(
            "tools",
            nargs="+",
            metavar="TOOL",
            help="tool name, optionally with @version (age@1.2.0)",
        ),
        "known",
    )
    p.add_argument("--force", action="store_true", help="reinstall, and take over binary names")
    p.add_argument("-y", "--yes", action="store_true", help="answer yes to confirmations")
    p.add_argument("--json", action="store_true", help="the result as one JSON object")
    p.add_argument(
        "--from",
        dest="source",
        metavar="SOURCE",
        help="no recipe: github:owner/repo, npm:<package>, pypi:<project>, crates:<crate>, "
        "rubygems:<gem>, go:<module> or homebrew:<formula>",
    )
    add_search_provider_flag(p)
    add_provider_flags(p)  # no recipe: discovery's and create's LLM
    p.add_argument("--no-discover", action="store_true", help="no recipe: fail, do not search")
    add_trust_page_hosts(p)
    p.add_argument(
        "--collect-tool-stats",
        action="store_true",
        help=argparse.SUPPRESS,  # a measurement for eval and debugging: docs/discovery.md
    )
    p.set_defaults(fn=cmd_install)

    p = sub.add_parser("list", help="installed tools")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_list)

    p = sub.add_parser(
        "remove",
        aliases=["uninstall", "rm"],
        help="remove installed tools",
        description="Remove installed tools. " + toolchains_told(),
    )
    tool_names(p.add_argument("tools", nargs="*", metavar="TOOL"), "installed")
    p.add_argument(
        "--unused",
        action="store_true",
        help="remove the hidden toolchains no installed tool uses (shown first, then asked)",
    )
    p.add_argument(
        "-y", "--yes", action="store_true", help="with --unused: answer yes to the question"
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_remove)

    p = sub.add_parser("verify", help="re-run a tool's verify command and re-hash its binaries")
    tool_names(p.add_argument("tool"), "installed")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_verify)

    p = sub.add_parser("info", help="a tool's recipe, platform support and install state")
    tool_names(p.add_argument("tool"), "known")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("update-registry", help="refresh the recipe registry's manifest and cache")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_update_registry)
