"""The install tree under ``$TSUKU_HOME`` and its repair after a crash.

```
$TSUKU_HOME/tools/<name>-<version>/    one installed tool (the active version)
$TSUKU_HOME/tools/.staging-<name>-*/   an install in progress (downloads, extraction)
$TSUKU_HOME/tools/.old-<name>-*/       the previous copy during a same-version reinstall
$TSUKU_HOME/tools/.trash-*/            a removed tool being deleted
$TSUKU_HOME/bin/<binary>               symlink → $TSUKU_HOME/tools/<name>-<version>/<path>
```

The ledger is the truth: a tool is installed when its ``install.completed`` is durable
(and no later ``install.removed``). The installer orders its steps so that a crash at any
point leaves a tree that :func:`reconcile` can bring back to what the ledger says:
leftover staging and trash directories are deleted, a tool directory the ledger does not
know is deleted, symlinks into it are removed, and the symlinks of recorded tools are
re-created. Standard library only, so it can run at daemon start-up cheaply.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

STAGING_PREFIX = ".staging-"
OLD_PREFIX = ".old-"
TRASH_PREFIX = ".trash-"


def tools_dir(home: Path) -> Path:
    return home / "tools"


def bin_dir(home: Path) -> Path:
    return home / "bin"


def tool_dir(home: Path, name: str, version: str) -> Path:
    return tools_dir(home) / f"{name}-{version}"


def aside_path(tool_dir: Path) -> Path:
    """Where a same-version reinstall moves the existing copy while the new one goes in."""
    return tool_dir.with_name(f"{OLD_PREFIX}{tool_dir.name}.{secrets.token_hex(4)}")


def original_name(aside: str) -> str:
    """The name of the tool directory an :func:`aside_path` copy was moved out of."""
    return aside[len(OLD_PREFIX) :].rsplit(".", 1)[0]


def discard(path: Path) -> None:
    """Rename ``path`` out of the way (one atomic step, so its name is free at once),
    then delete it in a background thread. A crash mid-delete leaves a ``.trash-*``
    directory, which :func:`cleanup_staging` removes at the next start."""
    if not path.exists() and not path.is_symlink():
        return
    trash = path.with_name(f"{TRASH_PREFIX}{secrets.token_hex(6)}")
    os.replace(path, trash)
    threading.Thread(
        target=shutil.rmtree, args=(trash,), kwargs={"ignore_errors": True}, daemon=True
    ).start()


def installed_rows(installed: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``tsukuctl list`` rows from the installed-tools projection. A hidden toolchain
    (installed for another tool's install: nothing of it is linked into ``bin/``) claims
    no binaries, since none of its commands is on the user's PATH; ``toolchain_for``
    says what it is, naming the installed tools that use it (``hidden.users``: run on
    it or were installed with it; none: recorded before installs named their toolchains,
    or its tool's install failed), the tools whose removal removes it."""
    from tsukud.install.hidden import users  # its rule; this module stays stdlib at import

    rows = []
    for name, rec in sorted(installed.items()):
        row: dict[str, Any] = {
            "tool": name,
            "version": rec.get("version"),
            "binaries": sorted((rec.get("binaries") or {}).keys()),
            "installed_at": rec.get("installed_at"),
            "recipe_source": rec.get("recipe_source"),
            "install_dir": rec.get("install_dir"),
        }
        if rec.get("hidden"):
            row["binaries"] = []
            row["toolchain_for"] = users(installed, name)
        rows.append(row)
    return rows


@dataclass
class RecoveryReport:
    removed: list[str] = field(default_factory=list)  # paths deleted
    restored: list[str] = field(default_factory=list)  # directories or links put back

    def __bool__(self) -> bool:
        return bool(self.removed or self.restored)


def _rmtree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def cleanup_staging(home: Path, report: RecoveryReport | None = None) -> RecoveryReport:
    """Delete what an interrupted install or removal left in ``tools/``.

    A ``.old-<name>-<version>-*`` copy is moved back when its tool directory is missing
    (the crash hit between moving it aside and moving the new one in), else deleted.
    Call it only while no install runs: at daemon start-up, before serving.
    """
    report = report or RecoveryReport()
    tools = tools_dir(home)
    if not tools.is_dir():
        return report
    for entry in sorted(tools.iterdir()):
        name = entry.name
        if name.startswith((STAGING_PREFIX, TRASH_PREFIX)):
            _rmtree(entry)
            report.removed.append(str(entry))
        elif name.startswith(OLD_PREFIX):
            original = original_name(name)
            target = tools / original
            if original and not target.exists() and not target.is_symlink():
                os.replace(entry, target)
                report.restored.append(str(target))
            else:
                _rmtree(entry)
                report.removed.append(str(entry))
    return report


def _inside(path: str, root: Path) -> bool:
    try:
        Path(os.path.abspath(path)).relative_to(root)
    except ValueError:
        return False
    return True


def reconcile(home: Path, installed: Mapping[str, Mapping[str, Any]]) -> RecoveryReport:
    """Make the tree match the ledger's installed tools (``d.state.installed.tools``).

    Only touches what tsuku owns: entries of ``tools/`` and symlinks in ``bin/`` that
    point into ``tools/``. Other files in ``bin/`` are left alone.
    """
    report = cleanup_staging(home)
    tools = tools_dir(home)
    bins = bin_dir(home)
    recorded: dict[str, Mapping[str, Any]] = {}
    for record in installed.values():
        install_dir = record.get("install_dir")
        if isinstance(install_dir, str):
            recorded[Path(install_dir).name] = record
    if tools.is_dir():
        for entry in sorted(tools.iterdir()):
            if entry.name.startswith(".") or entry.name in recorded:
                continue
            _rmtree(entry)
            report.removed.append(str(entry))
    wanted: dict[str, Path] = {}
    for dirname, record in recorded.items():
        binaries = record.get("binaries")
        if record.get("hidden"):  # a toolchain installed for another tool: never linked
            continue
        if not isinstance(binaries, dict) or not (tools / dirname).is_dir():
            continue
        for bin_name, info in binaries.items():
            if isinstance(info, dict) and isinstance(info.get("path"), str):
                wanted[bin_name] = tools / dirname / info["path"]
    if bins.is_dir():
        tools_real = Path(os.path.realpath(tools))
        for link in sorted(bins.iterdir()):
            if not link.is_symlink():
                continue
            pointed = os.readlink(link)
            absolute = pointed if os.path.isabs(pointed) else str(bins / pointed)
            if not (_inside(absolute, tools) or _inside(absolute, tools_real)):
                continue
            want = wanted.get(link.name)
            if want is None or Path(absolute) != want:
                link.unlink()
                report.removed.append(str(link))
    for bin_name, want_target in wanted.items():
        link = bins / bin_name
        if link.is_symlink() and Path(os.readlink(link)) == want_target:
            continue
        if link.exists() and not link.is_symlink():
            continue  # a file we do not own: leave it
        bins.mkdir(parents=True, exist_ok=True)
        replace_symlink(link, want_target)
        report.restored.append(str(link))
    _reconcile_shell_init(home, installed, report)
    return report


def _reconcile_shell_init(
    home: Path, installed: Mapping[str, Mapping[str, Any]], report: RecoveryReport
) -> None:
    """Shell start-up fragments (``share/shell.d``) no installed tool's record lists:
    an install that wrote one after the person's yes and never got recorded (a crash)
    must not leave it running in every new shell."""
    shell_d = home / "share" / "shell.d"
    if not shell_d.is_dir():
        return
    listed = {
        str(path)
        for record in installed.values()
        for path in (record.get("shell_init") or ())
        if isinstance(path, str)
    }
    for entry in sorted(shell_d.iterdir()):
        rel = f"share/shell.d/{entry.name}"
        if rel not in listed and not entry.is_dir():
            entry.unlink()
            report.removed.append(str(entry))


def replace_symlink(link: Path, target: Path) -> None:
    """Point ``link`` at ``target`` atomically (a temporary link renamed over it)."""
    tmp = link.with_name(f".{link.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    try:
        os.replace(tmp, link)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
