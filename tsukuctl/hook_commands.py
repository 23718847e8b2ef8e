"""``tsukuctl hook install|uninstall|status|mode`` and ``tsukuctl shell-init SHELL``.

``install`` copies the hook scripts to ``$TSUKU_HOME/share/hooks/``, adds one line,
marked ``# tsuku hook (managed)``, to the shell's rc file, and has the daemon build the
command index from the registry at once (fetching its manifest on a fresh home). The
line puts ``$TSUKU_HOME/bin`` first on PATH (re-sourcing does not add it twice) and
sources the hook; ``uninstall`` removes exactly that line and leaves every other byte
of the file as it was. The line names the home by ``$HOME/.tsuku`` when TSUKU_HOME is
the default (so a dotfile repository shared between machines keeps working) and by its
absolute path otherwise (TSUKU_HOME may not be exported yet where the rc file sources
the hook). ``shell-init`` prints the same lines for people who keep their rc files
themselves.

Standard library only, and nothing imported at module level beyond what the CLI
already loaded: every ``tsukuctl`` run imports this module to build its parser.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from tsukuctl.command import err, out, rpc
from tsukud import paths
from tsukud.errors import TsukuError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

SHELLS = ("bash", "zsh", "fish")
MODES = ("suggest", "confirm", "auto")
MARK = "# tsuku hook (managed"  # a line holding this is ours
TAG = "# tsuku hook (managed)"
# The file did not end with a newline: we added one before our line, and take it back
# when the line goes (if it is still the last line).
TAG_ADDED_NEWLINE = "# tsuku hook (managed; newline added before)"


# ---- pure: where things go, what the line says, editing the text -------------------------


def detect_shell(env: Mapping[str, str]) -> str:
    name = os.path.basename(env.get("SHELL", "")).lstrip("-")
    if name in SHELLS:
        return name
    raise UsageError(
        f"cannot tell which shell to hook (SHELL={env.get('SHELL', '')!r});"
        " pass --shell bash, zsh or fish",
    )


def rc_path(shell: str, env: Mapping[str, str]) -> str:
    """The file the hook line goes into. fish gets a ``conf.d`` file of its own, which
    fish sources at start-up, rather than an edit of the user's config.fish."""
    home = env.get("HOME") or os.path.expanduser("~")
    if shell == "bash":
        return os.path.join(home, ".bashrc")
    if shell == "zsh":
        return os.path.join(env.get("ZDOTDIR") or home, ".zshrc")
    config = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return os.path.join(config, "fish", "conf.d", "tsuku.fish")


def _quote(path: str, shell: str) -> str:
    special = '\\"$' if shell == "fish" else '\\"$`'
    return '"' + "".join("\\" + c if c in special else c for c in path) + '"'


def home_expr(shell: str, tsuku_home: str, env: Mapping[str, str], rel: str) -> str:
    """``$TSUKU_HOME/<rel>`` as the rc line spells it (a quoted shell word)."""
    home = env.get("HOME") or ""
    if home and os.path.normpath(tsuku_home) == os.path.join(os.path.normpath(home), ".tsuku"):
        return f'"$HOME/.tsuku{rel}"'
    return _quote(tsuku_home + rel, shell)


def hook_file_expr(shell: str, tsuku_home: str, env: Mapping[str, str]) -> str:
    """The hook script's path as the rc line spells it (a quoted shell word)."""
    return home_expr(shell, tsuku_home, env, f"/share/hooks/tsuku.{shell}")


def path_code(shell: str, tsuku_home: str, env: Mapping[str, str]) -> str:
    """Shell code putting ``$TSUKU_HOME/bin`` first on PATH, once however often it runs."""
    b = home_expr(shell, tsuku_home, env, "/bin")
    if shell == "fish":
        return f"contains -- {b} $PATH; or set -gx PATH {b} $PATH"
    return f'export PATH={b}:"${{PATH#{b}:}}"'


def hook_code(shell: str, tsuku_home: str, env: Mapping[str, str]) -> str:
    """Shell code sourcing the hook when it exists (a no-op, status 0, when not)."""
    f = hook_file_expr(shell, tsuku_home, env)
    if shell == "fish":
        return f"if test -f {f}; source {f}; end"
    return f"if [ -f {f} ]; then . {f}; fi"


def source_line(shell: str, tsuku_home: str, env: Mapping[str, str]) -> str:
    """The managed rc line: PATH, then the hook."""
    return f"{path_code(shell, tsuku_home, env)}; {hook_code(shell, tsuku_home, env)} {TAG}"


def _lines(text: str) -> list[str]:
    """Lines with their ``\n``; only ``\n`` ends a line, as for the shells."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _ours(line: str) -> bool:
    return MARK in line


def has_line(text: str) -> bool:
    return any(_ours(x) for x in _lines(text))


def sourced_file(line: str, env: Mapping[str, str]) -> str | None:
    """The file a managed rc line sources (``. FILE`` / ``source FILE``), unquoted as the
    shell would and with ``$HOME`` expanded; None when the line sources nothing we can read.
    The line may have been written for another home than this command's."""
    import re

    found = re.search(r"""(?:^|[;\s])(?:\.|source)\s+("(?:[^"\\]|\\.)*"|'[^']*'|[^\s;]+)""", line)
    if found is None:
        return None
    word = found.group(1)
    if word.startswith("'"):
        return word[1:-1]
    if word.startswith('"'):
        word = word[1:-1]
    home = env.get("HOME") or ""
    return re.sub(
        r"\\(.)|\$\{?HOME\}?(?![A-Za-z0-9_])",
        lambda m: m.group(1) if m.group(1) is not None else home,
        word,
    )


def current_line(text: str) -> str | None:
    for x in _lines(text):
        if _ours(x):
            return x.rstrip("\r\n")
    return None


def add_line(text: str, line: str) -> str:
    """``text`` with our line in it, once: appended, or an older version of it replaced
    in place. Applying it twice changes nothing the second time."""
    assert line.endswith(TAG)
    lines = _lines(text)
    mine = [i for i, x in enumerate(lines) if _ours(x)]
    if mine:
        first = lines[mine[0]]
        body = line[: -len(TAG)] + (TAG_ADDED_NEWLINE if TAG_ADDED_NEWLINE in first else TAG)
        lines[mine[0]] = body + first[len(first.rstrip("\r\n")) :]
        return "".join(x for i, x in enumerate(lines) if i == mine[0] or i not in mine)
    if text and not text.endswith("\n"):
        return text + "\n" + line[: -len(TAG)] + TAG_ADDED_NEWLINE + "\n"
    return text + line + "\n"


def remove_line(text: str) -> str:
    """``text`` without our line(s); every other byte kept. The newline we added before
    our line (the file had none at its end) goes too, if our line is still the last."""
    lines = _lines(text)
    kept: list[str] = []
    for i, x in enumerate(lines):
        if not _ours(x):
            kept.append(x)
        elif TAG_ADDED_NEWLINE in x and i == len(lines) - 1 and kept:
            kept[-1] = kept[-1].removesuffix("\n")
    return "".join(kept)


# ---- files --------------------------------------------------------------------------------


def _read(path: str) -> str | None:
    """The file's text, bytes that are not UTF-8 kept as they are (surrogateescape)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write(path: str, text: str, *, mode: int = 0o644) -> None:
    """Replace ``path`` atomically. A symlinked rc file (dotfile managers) is written
    through: the link stays a link. The file keeps its permissions."""
    import tempfile

    target = os.path.realpath(path)
    with contextlib.suppress(FileNotFoundError):
        mode = os.stat(target).st_mode & 0o7777
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=parent, prefix="." + os.path.basename(target) + ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def packaged_script(shell: str) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "hooks", f"tsuku.{shell}"), encoding="utf-8") as f:
        return f.read()


def install_scripts(tsuku_home: str) -> str:
    """All three scripts (switching shells needs no reinstall); returns the directory."""

    d = paths.hooks_dir(tsuku_home)
    for shell in SHELLS:
        _write(os.path.join(d, f"tsuku.{shell}"), packaged_script(shell))
    return d


def install_rc(shell: str, rc: str, tsuku_home: str, env: Mapping[str, str]) -> str:
    """Add (or update) the line; returns ``added``, ``updated`` or ``unchanged``."""
    text = _read(rc)
    line = source_line(shell, tsuku_home, env)
    new = add_line(text or "", line)
    if text is not None and new == text:
        return "unchanged"
    _write(rc, new)
    return "updated" if text is not None and has_line(text) else "added"


def uninstall_rc(shell: str, rc: str) -> bool:
    """Remove the line; True if there was one. fish's conf.d file is ours: an emptied
    one is deleted."""
    text = _read(rc)
    if text is None or not has_line(text):
        return False
    new = remove_line(text)
    if shell == "fish" and new == "" and os.path.basename(rc) == "tsuku.fish":
        os.unlink(rc)
    else:
        _write(rc, new)
    return True


def mode_path(tsuku_home: str) -> str:

    return os.path.join(paths.hooks_dir(tsuku_home), "mode")


def effective_mode(tsuku_home: str, env: Mapping[str, str]) -> tuple[str, str]:
    """``(mode, where it came from)``, resolved the way the hook scripts do."""
    raw, source = env.get("TSUKU_AUTO_INSTALL", ""), "TSUKU_AUTO_INSTALL"
    if not raw:
        try:
            with open(mode_path(tsuku_home), encoding="utf-8") as f:
                raw, source = f.readline().strip(), mode_path(tsuku_home)
        except OSError:
            raw, source = "", "default"
    if raw in ("confirm", "ask"):
        return "confirm", source
    if raw in ("auto", "1", "true", "yes", "on"):
        return "auto", source
    return "suggest", source if raw else "default"  # anything else: suggest, as the hooks do


def set_mode(tsuku_home: str, mode: str) -> str:
    path = mode_path(tsuku_home)
    _write(path, mode + "\n")
    return path


#: The index's comment line for an alias claim it dropped (tsukud/hooks/index.py).
IGNORED = "#ignored\t"


def index_info(tsuku_home: str, now: float) -> dict[str, Any]:

    path = paths.index_path(tsuku_home)
    try:
        st = os.stat(path)
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [x.rstrip("\n") for x in f if x.strip()]
    except OSError:
        return {"path": path, "present": False}
    rows = [x.split("\t", 1)[0] for x in lines if not x.startswith("#")]
    ignored = [x.split("\t")[1:] for x in lines if x.startswith(IGNORED)]
    return {
        "path": path,
        "present": True,
        "entries": len(rows),
        "commands": len(set(rows)),
        "bytes": st.st_size,
        "modified": st.st_mtime,
        "age_s": round(max(0.0, now - st.st_mtime), 1),
        "ignored_claims": [
            {"command": x[0], "tool": x[1], "source": x[2]} for x in ignored if len(x) == 3
        ],
    }


def claim_warning(claim: Mapping[str, Any]) -> str:
    """One line about an alias claim the index ignored."""
    cmd, tool = claim["command"], claim["tool"]
    return (
        f"{tool} ({claim['source']}) claims the command {cmd}, which the recipe {cmd} "
        f"provides under its own name: the claim is ignored, the hook offers {cmd}"
    )


# ---- commands -----------------------------------------------------------------------------


def _shells(args: argparse.Namespace) -> list[str]:
    if args.rc and not args.shell:
        raise UsageError("--rc needs --shell (which shell reads that file?)")
    return [args.shell or detect_shell(os.environ)]


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _age(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s ago"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min ago"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h ago"
    return f"{seconds / 86400:.0f} days ago"


def cmd_hook(args: argparse.Namespace) -> int:
    home = paths.tsuku_home()
    if args.value is not None and args.action != "mode":
        raise UsageError(
            f"hook {args.action} takes no argument {args.value!r}",
            hint="Use --shell to choose the shell.",
        )
    if args.action == "install":
        return _install(args, home)
    if args.action == "uninstall":
        for shell in _shells(args):
            rc = args.rc or rc_path(shell, os.environ)
            if uninstall_rc(shell, rc):
                out(f"{shell}: hook line removed from {rc}")
            else:
                out(f"{shell}: no hook line in {rc}; nothing to do")
        out("Shells started from now on do not use the hook; open ones keep it until they exit.")
        return 0
    if args.action == "mode":
        if args.value is None:
            mode, source = effective_mode(home, os.environ)
            out(f"{mode} (from {source})")
            return 0
        if args.value not in MODES:
            raise UsageError(f"unknown mode {args.value!r}", hint="One of: " + ", ".join(MODES))
        out(f"mode {args.value} (written to {set_mode(home, args.value)})")
        if os.environ.get("TSUKU_AUTO_INSTALL"):
            sys.stderr.write("note: TSUKU_AUTO_INSTALL is set in this environment and wins\n")
        return 0
    return _status(args, home)


def _install(args: argparse.Namespace, home: str) -> int:
    shells = _shells(args)
    where = install_scripts(home)
    out(f"hook scripts  {where}/tsuku.{{bash,zsh,fish}}")
    for shell in shells:
        rc = args.rc or rc_path(shell, os.environ)
        what = install_rc(shell, rc, home, os.environ)
        verb = {"added": "added to", "updated": "updated in", "unchanged": "already in"}[what]
        out(f"{shell:<13} hook line {verb} {rc}")
    if args.mode:
        set_mode(home, args.mode)
    mode, source = effective_mode(home, os.environ)
    out(f"{'mode':<13} {mode} (from {source})")
    try:
        res = rpc(
            args,
            "hooks.reindex",
            {"fetch": True},
            on_progress=lambda p: (
                err(p.get("message") or f"{p['stage']}…") if "stage" in p else None
            ),
        )
        out(
            f"{'index':<13} {res['path']}: {_n(res['commands'], 'command')}"
            f" from {_n(res['tools'], 'tool')}"
        )
        for claim in res.get("ignored_claims") or []:
            err("warning: " + claim_warning(claim))
        if str(res.get("manifest", "")).startswith("unavailable"):
            err(
                f"warning: the registry's recipe list could not be fetched ({res['manifest']});"
                " the index knows local and cached recipes only until `tsukuctl"
                " update-registry` succeeds"
            )
    except TsukuError as e:
        sys.stderr.write(
            f"warning: the binary index was not rebuilt ({e.message}); the hook suggests"
            " nothing new until tsukud rebuilds it (tsukuctl hook install again)\n"
        )
    if not args.rc and len(shells) == 1:
        rc = rc_path(shells[0], os.environ)
        hint = f"exec {shells[0]}" if shells[0] == "fish" else f". {rc}"
        out(f"Open a new shell (or run: {hint}) to use it.")
    return 0


def _status(args: argparse.Namespace, home: str) -> int:
    import time

    try:
        detected: str | None = detect_shell(os.environ)
    except UsageError:
        detected = None
    rows: list[dict[str, Any]] = []
    for shell in SHELLS:
        rc = args.rc if (args.rc and shell == args.shell) else rc_path(shell, os.environ)
        text = _read(rc)
        rows.append(
            {
                "shell": shell,
                "rc": rc,
                "installed": bool(text and has_line(text)),
                "line": current_line(text) if text else None,
                "current_shell": shell == detected,
            }
        )

    scripts = {}
    for shell in SHELLS:
        have = _read(os.path.join(paths.hooks_dir(home), f"tsuku.{shell}"))
        scripts[shell] = (
            "missing"
            if have is None
            else "current"
            if have == packaged_script(shell)
            else "outdated"
        )
    mode, source = effective_mode(home, os.environ)
    index = index_info(home, time.time())
    if args.json:
        from tsukuctl import render

        out(
            render.jsonl(
                {
                    "shells": rows,
                    "scripts": scripts,
                    "mode": mode,
                    "mode_source": source,
                    "index": index,
                }
            )
        )
        return 0
    for r in rows:
        state = "installed" if r["installed"] else "not installed"
        me = "  (your shell)" if r["current_shell"] else ""
        kind = scripts[r["shell"]]
        script = "" if kind == "current" else f", script {kind}"
        out(f"{r['shell']:<6} {state} in {r['rc']}{script}{me}")
    out(f"mode   {mode} (from {source})")
    if index["present"]:
        out(
            f"index  {index['path']}: {_n(index['commands'], 'command')},"
            f" {index['bytes']} bytes,"
            f" updated {_age(index['age_s'])}"
        )
        for claim in index["ignored_claims"]:
            out(f"claim  {claim_warning(claim)}")
    else:
        out(f"index  {index['path']}: missing (tsukuctl hook install builds it)")
    if any(s == "outdated" for s in scripts.values()):
        out("hint: `tsukuctl hook install` updates the outdated scripts")
    return 0


def cmd_shell_init(args: argparse.Namespace) -> int:
    """The rc lines, for ``eval "$(tsukuctl shell-init bash)"`` or pasting into an rc file
    kept by hand (or a dotfile manager); the hook scripts they source are written too."""
    home = paths.tsuku_home()
    install_scripts(home)
    comment = f"# tsuku: {home}/bin on PATH, and the command-not-found hook"
    out(
        "\n".join(
            (
                comment,
                path_code(args.shell, home, os.environ),
                hook_code(args.shell, home, os.environ),
            )
        )
    )
    return 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "hook",
        help="the shell hook that says which tool provides a missing command",
        description="Install, remove or inspect the command-not-found hook for bash, zsh "
        "or fish. Modes: suggest (default) prints how to install the tool; confirm asks, "
        "installs and re-runs; auto installs without asking. TSUKU_AUTO_INSTALL overrides "
        "the mode set here.",
    )
    p.add_argument("action", choices=("install", "uninstall", "status", "mode"))
    p.add_argument("value", nargs="?", help="mode: suggest, confirm or auto")
    p.add_argument("--shell", choices=SHELLS, help="default: from $SHELL")
    p.add_argument("--rc", metavar="FILE", help="the rc file to edit (default: the shell's)")
    p.add_argument("--mode", choices=MODES, help="install: also set the mode")
    p.add_argument("--json", action="store_true", help="status: one JSON object")
    p.set_defaults(fn=cmd_hook)
    init = sub.add_parser(
        "shell-init",
        help="print the rc lines (PATH and the hook) for rc files you manage yourself",
        description="Print the lines `tsukuctl hook install` would add to the shell's rc "
        'file: `eval "$(tsukuctl shell-init bash)"` in ~/.bashrc, or paste them.',
    )
    init.add_argument("shell", choices=SHELLS)
    init.set_defaults(fn=cmd_shell_init)
