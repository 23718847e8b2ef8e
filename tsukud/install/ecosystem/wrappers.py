"""An ecosystem tool's commands run with the toolchain it was installed with.

A Node package's command starts ``#!/usr/bin/env node`` (a gem's wrapper runs ``ruby``
likewise), so run through a plain link it would run whatever ``node`` comes first on
the user's PATH, not the toolchain the tool was installed with and needs. tsuku writes
a small wrapper per command that puts its runtime dependencies' ``bin/`` first on PATH
and execs the real command; this module does the same when the toolchain was
installed from its recipe (``Toolchain.runtime``). The wrapper lives in the tool's own
directory (``WRAPPER_DIR``) and ``bin/<name>`` links to it, so linking, removal,
start-up repair and ``verify`` treat it as any binary; its record keeps the command it
wraps (``wraps``: path and sha256), which ``verify`` re-checks too.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tsukud.install.checks import sha256_file

#: Where a tool's wrappers are, relative to its directory (no package writes there).
WRAPPER_DIR = ".tsuku-bin"


def wrapper_script(target: Path, path_dirs: Sequence[Path]) -> str:
    """A POSIX shell script that puts ``path_dirs`` before the caller's PATH and execs
    ``target`` with the arguments it was given; every path quoted for the shell."""
    first = ":".join(shlex.quote(str(d)) for d in path_dirs)
    return f'#!/bin/sh\nPATH={first}:"$PATH"\nexport PATH\nexec {shlex.quote(str(target))} "$@"\n'


def wrap_commands(
    root: Path, binaries: Mapping[str, Mapping[str, Any]], path_dirs: Sequence[Path]
) -> dict[str, dict[str, Any]]:
    """Write a wrapper in ``root/WRAPPER_DIR`` for each of ``binaries`` (``{name: {path,
    sha256}}`` relative to ``root``) and answer the record that links ``bin/<name>`` to
    it: the wrapper's path and sha256, and the wrapped command's (``wraps``)."""
    where = root / WRAPPER_DIR
    where.mkdir(mode=0o755, exist_ok=True)
    out: dict[str, dict[str, Any]] = {}
    for name, info in sorted(binaries.items()):
        wrapper = where / name
        wrapper.write_text(wrapper_script(root / str(info["path"]), path_dirs))
        os.chmod(wrapper, 0o755)  # noqa: S103 - a command, runnable like the one it wraps
        out[name] = {
            "path": f"{WRAPPER_DIR}/{name}",
            "sha256": sha256_file(wrapper),
            "wraps": {"path": str(info["path"]), "sha256": info.get("sha256")},
        }
    return out
