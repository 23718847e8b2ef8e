"""``tsukuctl config get|set|unset|list|edit|path``: the settings file (docs/config.md).

These work on ``$TSUKU_HOME/config.toml`` directly and never need (or start) a daemon:
a file the daemon cannot read must stay fixable. A running daemon reads the file again
before its next request. Keys and values are checked by the daemon's own rules
(``tsukud.config``, imported here only when a config command runs), and edits keep
the user's comments and layout.

Secrets are read from standard input only, never from the command line.
"""

from __future__ import annotations

import argparse
import os
import sys

from tsukuctl import render
from tsukuctl.answer import read_line
from tsukuctl.command import can_ask, err, out
from tsukud import paths
from tsukud.errors import ConfigError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from tsukud.config import Problem


def _problems(problems: Iterable[Problem]) -> None:
    """Each problem of the file once, with its fix (on stderr: stdout stays the data)."""
    for p in problems:
        err(f"problem: {p.error.message}")
        if p.error.hint:
            err(f"  hint: {p.error.hint}")


def cmd_config(args: argparse.Namespace) -> int:
    from pathlib import Path

    from tsukud import config

    path = Path(paths.config_path())
    if args.action in ("path", "list", "edit") and args.key:
        raise UsageError(f"config {args.action} takes no KEY")
    if args.action == "path":
        out(str(path))
        return 0
    if args.action == "edit":
        return _edit(path)
    if args.action == "list":
        cfg = config.resolve(path=path)
        if args.json:
            out(
                render.jsonl(
                    {
                        "settings": [s.shown() for s in cfg.settings()],
                        "path": str(path),
                        "problems": [
                            {"message": p.error.message, "hint": p.error.hint} for p in cfg.problems
                        ],
                    }
                )
            )
            return 0
        rows = [[s["key"], s["value"], s["source"]] for s in (x.shown() for x in cfg.settings())]
        out(render.table(("KEY", "VALUE", "SOURCE"), rows))
        out(f"\nfile: {path}")
        _problems(cfg.problems)
        return 0
    if not args.key:
        raise UsageError(
            f"config {args.action} needs a KEY", hint="`tsukuctl config list` shows them."
        )
    if args.action == "get":
        shown = config.resolve(path=path).setting(args.key).shown()
        out(render.jsonl(shown) if args.json else str(shown["value"]))
        if not args.json and shown["source"].startswith("derived"):
            # stdout stays the bare value for scripts; a person learns where it came from
            err(f"note: {shown['source']}; `tsukuctl config set {shown['key']} N` overrides it")
        return 0
    if args.action == "unset":
        config.write_value(path, args.key, None)
        cfg = config.resolve(path=path)
        if args.key in config.KEYS or args.key in config.ALIASES:
            s = cfg.setting(args.key).shown()
            out(f"{s['key']} unset (now {s['value']} from {s['source']})")
        else:
            out(f"{args.key} removed from {path}")
        return 0
    return _set(args, path)


def _set(args: argparse.Namespace, path: Path) -> int:
    from tsukud import config

    name = config.key(args.key).name  # an unknown name fails before stdin is read
    if config.KEYS[name].secret and args.value is not None:
        raise UsageError(
            "secrets are never taken from the command line (they would land in shell history "
            "and in `ps`)",
            hint=f'Pipe it in: printf %s "$KEY" | tsukuctl config set {args.key}',
        )
    value = args.value
    if value is None:
        if sys.stdin.isatty():
            import getpass

            value = getpass.getpass(f"{args.key}: ")
        else:
            value = sys.stdin.read().strip()
        if not value:
            raise UsageError("no value given on standard input")
    config.write_value(path, name, value)
    s = config.resolve(path=path).setting(name)
    shown = s.shown()
    out(f"{shown['key']} = {shown['value']}  ({shown['source']})")
    if s.source.startswith("env:"):
        err(f"note: ${s.source[4:]} overrides the file value while it is set")
    return 0


def _edit(path: Path) -> int:
    """Edit a copy in ``$VISUAL``/``$EDITOR``; it replaces the file only once it reads
    cleanly (like visudo), so a slip in the editor cannot lock anything out."""
    import shlex
    import subprocess
    import tempfile

    from tsukud import config
    from tsukud.fsutil import write_atomic

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    if path.exists():
        config.check_file_mode(path)
        before = path.read_bytes()
    else:
        before = b""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".config.", suffix=".toml", dir=path.parent)  # 0600
    with os.fdopen(fd, "wb") as f:
        f.write(before)
    keep = False
    try:
        while True:
            rc = subprocess.call([*shlex.split(editor), tmp])
            if rc != 0:
                raise UsageError(
                    f"the editor ({editor}) exited with status {rc}; {path} is unchanged",
                    hint="Set $VISUAL or $EDITOR to the editor you use.",
                )
            with open(tmp, "rb") as f:
                after = f.read()
            problems = config.parse_file(after, path).problems
            if not problems:
                break
            _problems(problems)
            if not can_ask():
                keep = True
                raise ConfigError(
                    f"{path} is unchanged: the edit has {len(problems)} problem(s);"
                    f" it is kept in {tmp}",
                    hint="Run `tsukuctl config edit` again (from a terminal, it offers to"
                    " go back to the edit).",
                )
            sys.stderr.write("Edit again? [Y/n] ")
            sys.stderr.flush()
            if read_line().strip().lower() in ("n", "no"):
                keep = True
                raise ConfigError(f"{path} is unchanged; the edit is kept in {tmp}")
        if after == before:
            out(f"{path} unchanged")
        else:
            write_atomic(path, after, mode=0o600)  # may hold API keys
            out(f"{path} saved")
        return 0
    finally:
        if not keep:
            os.unlink(tmp)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "config",
        help="get, set, unset, list, edit settings (no daemon needed)",
        description="Read and change $TSUKU_HOME/config.toml. Works without a daemon and "
        "with a broken file, so a mistake can always be fixed; a running daemon picks "
        "changes up before its next request.",
    )
    p.add_argument("action", choices=("get", "set", "unset", "list", "edit", "path"))
    p.add_argument("key", nargs="?")
    p.add_argument("value", nargs="?", help="(never for secrets.*: read from stdin)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_config)
