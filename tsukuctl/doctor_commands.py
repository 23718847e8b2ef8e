"""``tsukuctl doctor``: one line per thing tsuku needs, each with its fix when not ok.

It must work exactly when nothing else does (a config file others can read keeps the
daemon from starting), so no check depends on an earlier one succeeding: the configuration is
read by the daemon's own code in a child process (``python -m tsukud.config_check``),
the home, the shell hook and PATH are read here, and only what only the daemon can see
(the container runtime as it reaches it, the validation image) waits for the daemon;
those lines say "not checked" when it does not answer. Keys are reported set or not set,
never their values.

Exit status: 0 when every line is ``ok`` or ``warn`` (a missing key or shell hook is a
choice, not a fault), 1 when a line says ``FAIL``. Standard library only.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import subprocess
import sys

from tsukuctl import render
from tsukuctl.command import out, rpc
from tsukud import paths
from tsukud.errors import ExitCode, TsukuError
from tsukud.launch import RemoteError
from tsukud.provider_specs import LLM_PROVIDERS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

OK, WARN, FAIL, SKIP = "ok", "warn", "FAIL", "skip"
# The providers' key settings, and the variables to name when none is set (the first of
# each provider that needs a key), from the daemon's own table.
LLM_KEYS = tuple(p.key_setting for p in LLM_PROVIDERS)
_NEEDED = [p.key_env[0] for p in LLM_PROVIDERS if p.key_required]
NO_KEY_FIX = f"create and discovery need an LLM key: export {_NEEDED[0]}=..." + (
    f" (or {' or '.join(_NEEDED[1:])})" if _NEEDED[1:] else ""
)


def line(name: str, state: str, detail: str, fix: str = "") -> dict[str, str]:
    return {"check": name, "state": state, "detail": detail, "fix": fix}


def _failure(exc: BaseException) -> tuple[str, str]:
    message = getattr(exc, "message", None) or str(exc)
    hint = getattr(exc, "hint", "") or "See `tsukuctl daemon logs`."
    return (message.splitlines()[0] if message else "no answer"), hint


def check_daemon(args: argparse.Namespace, home: str) -> tuple[dict[str, str], Any]:
    """The daemon's line and its ``sandbox.status`` (None when it does not answer)."""
    try:
        pid = rpc(args, "ping").get("pid")
    except RemoteError as exc:
        if exc.remote_code == "wrong_daemon":
            return another_homes_daemon(home, exc), None
        first, hint = _failure(exc)
        return line("daemon", FAIL, f"not reachable: {first}", hint), None
    except (TsukuError, OSError) as exc:
        first, hint = _failure(exc)
        return line("daemon", FAIL, f"not reachable: {first}", hint), None
    sandbox = None
    try:
        sandbox = rpc(args, "sandbox.status")
        status = rpc(args, "status")
    except (TsukuError, RemoteError, OSError) as exc:
        first, hint = _failure(exc)
        failed = f"running (pid {pid}), but status fails: {first}"
        return line("daemon", FAIL, failed, hint), sandbox
    detail = f"running, version {status.get('version')}, pid {pid}, home {status.get('home')}"
    return line("daemon", OK, detail), sandbox


def another_homes_daemon(home: str, exc: RemoteError) -> dict[str, str]:
    """The socket this home uses is answered by a daemon of another home (it refuses
    every request naming this one): say so plainly, and how to part them."""
    theirs = str(exc.data.get("daemon_home") or "another home")
    socket = paths.socket_path()
    detail = (
        f"another home's daemon answers on this socket ({socket}): it serves {theirs}, not {home}"
    )
    if os.environ.get("TSUKU_SOCKET"):
        fix = (
            "Unset TSUKU_SOCKET: each home then gets a daemon of its own (or stop that one: "
            f"TSUKU_HOME={theirs} tsukuctl daemon stop)."
        )
    else:
        fix = f"Stop that daemon (TSUKU_HOME={theirs} tsukuctl daemon stop), then run this again."
    return line("daemon", FAIL, detail, fix)


def check_home(home: str) -> dict[str, str]:
    try:
        st = os.stat(home)
    except FileNotFoundError:
        return line("home", OK, f"{home} (not created yet; made on first use)")
    except OSError as exc:
        return line("home", FAIL, f"{home}: {exc.strerror}", f"Check the path: ls -ld {home}")
    if not stat.S_ISDIR(st.st_mode):
        return line("home", FAIL, f"{home} is not a directory", "Point TSUKU_HOME at a directory.")
    if not os.access(home, os.W_OK | os.X_OK):
        return line("home", FAIL, f"{home} is not writable", f"chmod u+rwx {home}")
    if st.st_uid != os.getuid():
        return line("home", FAIL, f"{home} belongs to uid {st.st_uid}", f"chown -R $USER {home}")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        return line("home", FAIL, f"{home} is {mode:o}: others can read it", f"chmod 700 {home}")
    return line("home", OK, f"{home} writable, {mode:o}")


def read_config() -> dict[str, Any]:
    """The daemon's own reading of the configuration, from a child process."""
    try:
        cp = subprocess.run(
            [sys.executable, "-m", "tsukud.config_check"],
            capture_output=True,
            text=True,
            timeout=30,
        )
        return dict(json.loads(cp.stdout))
    except (OSError, ValueError, subprocess.TimeoutExpired) as exc:
        problem = {"message": f"could not check the configuration: {exc}", "hint": ""}
        return {"ok": False, "problems": [problem]}


def check_config(found: Mapping[str, Any]) -> dict[str, str]:
    path = str(found.get("path", paths.config_path()))
    problems: list[dict[str, Any]] = found.get("problems") or []
    if problems or not found.get("ok"):
        first = problems[0] if problems else {"message": found.get("message", "unreadable")}
        message = str(first.get("message", "")).replace("\n", " ")
        more = f" (and {len(problems) - 1} more: tsukuctl config list)" if len(problems) > 1 else ""
        return line("config", FAIL, message + more, str(first.get("hint") or f"Edit {path}."))
    if not found.get("exists"):
        return line("config", OK, f"{path} (no file: defaults apply)")
    return line("config", OK, f"{path} valid")


def daemon_secrets(args: argparse.Namespace) -> dict[str, dict[str, Any]] | None:
    """The keys as the daemon resolves them for this caller (its own environment, as a
    service unit's ``Environment=`` sets it, included), or None when it does not answer:
    a key only tsukud's environment holds is invisible to this process."""
    try:
        settings = rpc(args, "config.list").get("settings") or []
    except (TsukuError, RemoteError, OSError):
        return None
    return {
        s["key"]: {"set": s["value"] == "(set)", "source": s["source"]}
        for s in settings
        if s.get("secret")
    }


def check_keys(
    found: Mapping[str, Any], daemon: dict[str, dict[str, Any]] | None = None
) -> dict[str, str]:
    secrets: dict[str, dict[str, Any]] | None = daemon or found.get("secrets")
    if secrets is None:
        return line("keys", SKIP, "not checked: the configuration could not be read")
    parts = []
    for name, info in sorted(secrets.items()):
        short = name.removeprefix("secrets.")
        where = render.source_text(info["source"])
        parts.append(f"{short} set ({where})" if info["set"] else f"{short} not set")
    if not any(secrets.get(k, {}).get("set") for k in LLM_KEYS):
        return line("keys", WARN, "; ".join(parts), NO_KEY_FIX)
    return line("keys", OK, "; ".join(parts))


def check_sandbox(sandbox: Mapping[str, Any] | None) -> list[dict[str, str]]:
    if sandbox is None:
        why = "not checked: the daemon does not answer (fix its line first)"
        return [line("sandbox", SKIP, why), line("image", SKIP, why)]
    image = str(sandbox.get("image", ""))
    if not sandbox.get("available"):
        fix = str(sandbox.get("hint") or "Start Docker, or set DOCKER_HOST.")
        return [
            line("sandbox", FAIL, f"no container runtime: {sandbox.get('error', '')}", fix),
            line("image", SKIP, f"{image}: not checked without a container runtime"),
        ]
    found = line("sandbox", OK, f"{sandbox.get('version')} at {sandbox.get('endpoint')}")
    if not sandbox.get("image_present"):
        fix = "tsukuctl sandbox prepare"
        return [found, line("image", FAIL, f"{image} is not in the container runtime", fix)]
    return [found, line("image", OK, f"{image} present")]


def check_hooks(home: str, env: Mapping[str, str]) -> dict[str, str]:
    """Reports the file the managed rc line really sources: it may name another home's
    hook than this command's ``TSUKU_HOME`` (one exported for a while, a second home)."""
    from tsukuctl.hook_commands import SHELLS, current_line, detect_shell, rc_path, sourced_file

    try:
        shells: tuple[str, ...] = (detect_shell(env),)
    except TsukuError:
        shells = tuple(SHELLS)
    for shell in shells:
        rc = rc_path(shell, env)
        try:
            with open(rc, encoding="utf-8", errors="replace") as f:
                managed = current_line(f.read())
        except OSError:
            managed = None
        if managed is None:
            continue
        ours = os.path.join(paths.hooks_dir(home), f"tsuku.{shell}")
        script = sourced_file(managed, env) or ours
        if not os.path.exists(script):
            return line(
                "hooks", FAIL, f"{rc} sources {script}, which is missing", "tsukuctl hook install"
            )
        if os.path.realpath(script) != os.path.realpath(ours):
            return line("hooks", OK, f"{shell}: {rc} sources {script} (not this home's {ours})")
        return line("hooks", OK, f"{shell}: {rc} sources {script}")
    return line("hooks", WARN, f"not installed for {', '.join(shells)}", "tsukuctl hook install")


def check_claims(home: str) -> list[dict[str, str]]:
    """A line when the command index ignored an alias claim on a command another recipe
    provides under its own name (a registry entry reaching for a popular command)."""
    import time

    from tsukuctl.hook_commands import claim_warning, index_info

    claims = index_info(home, time.time()).get("ignored_claims") or []
    if not claims:
        return []
    detail = "; ".join(claim_warning(c) for c in claims[:3])
    more = f" (and {len(claims) - 3} more: tsukuctl hook status)" if len(claims) > 3 else ""
    fix = "none needed; if the claiming recipe is yours, rename the alias"
    return [line("claims", WARN, detail + more, fix)]


def check_path(home: str, env: Mapping[str, str], hooks: dict[str, str]) -> dict[str, str]:
    """``hooks``: the hooks line; when the hook is in place, a shell opened before it
    (this one) is all that lacks the PATH entry, and a new shell is the fix."""
    bin_dir = os.path.join(home, "bin")
    entries = [os.path.realpath(p) for p in env.get("PATH", "").split(os.pathsep) if p]
    if os.path.realpath(bin_dir) in entries:
        return line("PATH", OK, f"contains {bin_dir}")
    if hooks.get("state") == OK:
        fix = f'open a new shell (the hook adds it), or export PATH="{bin_dir}:$PATH"'
    else:
        fix = f'export PATH="{bin_dir}:$PATH" (or `tsukuctl hook install`)'
    return line("PATH", FAIL, f"{bin_dir} is not on PATH: installed tools will not be found", fix)


def cmd_doctor(args: argparse.Namespace) -> int:
    home = paths.tsuku_home()
    env = os.environ
    home_line = check_home(home)  # before a daemon start could repair it
    found = read_config()
    daemon, sandbox = check_daemon(args, home)
    hooks = check_hooks(home, env)
    lines = [
        daemon,
        home_line,
        check_config(found),
        check_keys(found, daemon_secrets(args) if daemon["state"] == OK else None),
        *check_sandbox(sandbox),
        hooks,
        *check_claims(home),
        check_path(home, env, hooks),
    ]
    failed = any(x["state"] == FAIL for x in lines)
    if args.json:
        out(render.jsonl({"ok": not failed, "checks": lines}))
    else:
        width = max(len(x["check"]) for x in lines)
        for x in lines:
            out(f"{x['state']:<4}  {x['check']:<{width}}  {x['detail']}")
            if x["fix"] and x["state"] != OK:
                out(f"{'':<4}  {'':<{width}}  fix: {x['fix']}")
    return ExitCode.GENERAL if failed else 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "doctor", help="check the daemon, home, config, keys, sandbox, hooks and PATH"
    )
    p.add_argument("--json", action="store_true", help="the checks as one JSON object")
    p.set_defaults(fn=cmd_doctor)
