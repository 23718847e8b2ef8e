"""``tsukuctl plan <tool|recipe.toml> [--version V] [--platform os/arch] [--json]``.

What an install would do, resolved, without installing: one line per primitive step
(composite actions decomposed as tsuku does), its URL, checksum and destination, the
verify command, and an honest line per step tsuku cannot run on that platform (the
command still exits 0: a plan is a report). ``--json`` prints tsuku's
installation-plan shape. Standard library only.
"""

from __future__ import annotations

import argparse
import os

from tsukuctl import render
from tsukuctl.command import out, rpc, tool_names
from tsukud.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def _is_recipe_file(arg: str) -> bool:
    return arg.endswith(".toml") or os.sep in arg


def _describe(step: dict[str, Any]) -> str:
    """One step as a line: what it acts on and where the result goes."""
    p = step.get("params") or {}
    action = step["action"]
    if action == "download_file":
        text = f"{step.get('url') or p.get('url')} -> {p.get('dest')}"
        checksum = step.get("checksum") or p.get("checksum")
        if checksum:
            text += f"  sha256:{checksum}"
        elif p.get("checksum_url"):
            text += f"  (checksum from {p['checksum_url']})"
        elif "checksum" in (step.get("computed_at_download") or []):
            text += "  (sha256 computed when downloaded)"
        if p.get("signature_url"):
            text += f"  (signed by {p.get('signature_key_fingerprint')})"
        if p.get("fallback_urls"):
            text += f"  (mirrors: {', '.join(p['fallback_urls'])})"
        if step.get("skip_verification_reason"):
            text += f"  (not verified: {step['skip_verification_reason']})"
        return text
    if step.get("command"):  # a system package step: the command it runs as root
        return str(step["command"])
    if action == "extract":
        strip = f", strip_dirs {p['strip_dirs']}" if p.get("strip_dirs") else ""
        return f"{p.get('archive')} ({p.get('format')}{strip})"
    if action == "chmod":
        return ", ".join(p.get("files") or [])
    if action == "install_binaries":
        entries = (p.get("outputs") or []) + (p.get("binaries") or [])
        pairs = ", ".join(
            f"{b['src']} -> {b['dest']}" if isinstance(b, dict) else str(b) for b in entries
        )
        mode = p.get("install_mode")
        return pairs + (f" ({mode} mode)" if mode and mode != "binaries" else "")
    return " ".join(f"{k}={v}" for k, v in sorted(p.items()))


def _dependency_lines(dependencies: list[dict[str, Any]], depth: int) -> list[str]:
    """What is installed first, each dependency under its dependent."""
    lines = []
    for dep in dependencies:
        version = dep.get("version") or "(no version resolved)"
        steps = len(dep.get("steps") or [])
        lines.append(f"{'  ' * depth}needs {dep['tool']} {version} first ({steps} steps)")
        lines += _dependency_lines(dep.get("dependencies") or [], depth + 1)
    return lines


def plan_lines(plan: dict[str, Any]) -> list[str]:
    platform = plan["platform"]
    where = f"{platform['os']}/{platform['arch']}"
    if plan["version"]:
        lines = [f"{plan['tool']} {plan['version']} for {where} (tag {plan.get('tag')})"]
    else:
        lines = [f"{plan['tool']} (no version resolved) for {where}"]
    lines += _dependency_lines(plan.get("dependencies") or [], 1)
    width = max((len(s["action"]) for s in plan["steps"]), default=0)
    for n, step in enumerate(plan["steps"], 1):
        lines.append(f"  {n:2d}. {step['action']:<{width}}  {_describe(step)}")
    for chain in plan.get("host_toolchains") or []:
        lines.append(
            f"toolchain  {chain['program']} from this machine's PATH (the registry has no "
            f"{chain['recipe']} recipe to install it from)"
        )
    deps = plan.get("build_dependencies") or []
    if deps:
        lines.append(
            f"builds against  {', '.join(deps)}  (each installed first by its own recipe, "
            "mounted read-only into the build container)"
        )
    verify = plan.get("verify")
    if verify:
        patterns = verify.get("patterns") or ([verify["pattern"]] if verify.get("pattern") else [])
        expects = ", ".join(patterns) or "exit code only"
        lines.append(f"verify  {verify['command']}  (expects {expects})")
    for warning in plan.get("warnings") or []:
        lines.append(f"warning: {warning}")
    for gap in plan.get("unsupported") or []:
        at = f"steps[{gap['index']}] " if gap.get("index") is not None else ""
        lines.append(f"unsupported on {gap['platform']}: {at}{gap['action']}: {gap['reason']}")
    if not plan["steps"] and not plan.get("unsupported"):
        lines.append("  (no steps)")
    unknown = plan.get("unknown_keys") or []
    if unknown:
        lines.append(f"unknown keys (kept, not used): {', '.join(unknown)}")
    return lines


def cmd_plan(args: argparse.Namespace) -> int:
    params: dict[str, Any] = {"version": args.version, "platform": args.platform}
    if _is_recipe_file(args.tool):
        try:
            with open(args.tool, encoding="utf-8") as f:
                params["recipe"] = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"cannot read {args.tool}: {exc}") from None
        params["tool"] = args.tool
    else:
        params["tool"] = args.tool
    res = rpc(args, "tools.plan", params)
    if args.json:
        out(render.jsonl(res))
    else:
        out("\n".join(plan_lines(res)))
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "plan", help="what installing a tool (or a recipe file) would do, without installing"
    )
    tool_names(
        p.add_argument("tool", help="a tool's name (tool@version) or a recipe file (.toml)"),
        "known",
    )
    p.add_argument("--version", help="plan this version (default: the newest)")
    p.add_argument(
        "--platform",
        help="plan for os/arch, e.g. linux/arm64, or linux/amd64/debian for a Linux family "
        "(default: this one)",
    )
    p.add_argument("--json", action="store_true", help="tsuku's installation-plan JSON")
    p.set_defaults(fn=cmd_plan)
