"""The binary index: which tool provides a command, as one plain-text file.

``$TSUKU_HOME/share/binary-index.tsv`` holds one line per (command, tool) pair::

    <binary> TAB <tool> TAB <source>

``source`` is ``installed``, ``local`` (``$TSUKU_HOME/recipes``) or ``registry``. Lines are
sorted by binary and, for one binary, by source in that order (then by tool), so the
first line starting with ``<binary> TAB`` is the best answer. That lets the shell hooks
answer with one ``grep -m1`` and no Python start (10 to 45 ms, against ~2 ms for the shell's
own "command not found"), and lets the daemon keep it current without the hooks ever
talking to it. A first line starting with ``#`` names the format; no command starts
with ``#``, so it never matches.

Standard library only: ``tsukuctl hook status`` reads it on the client side.
"""

from __future__ import annotations

import os
import re

from tsukud.fsutil import write_atomic
from tsukud.paths import index_path

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

HEADER = "# tsuku binary index v1: binary<TAB>tool<TAB>source (installed|local|registry)"
SOURCES = ("installed", "local", "registry")  # best first
# What the hooks will look up: anything else (spaces, globs, slashes) is never a tool's
# command and would need escaping in grep's pattern. The hooks apply the same test.
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]*$")


def command_name(path: str) -> str:
    """The command a binary path gives the user: its basename, without ``.exe``."""
    base = os.path.basename(path.replace("\\", "/").rstrip("/"))
    return base[:-4] if base.lower().endswith(".exe") else base


def valid_name(name: str) -> bool:
    return bool(NAME_RE.match(name)) and len(name) <= 200


def build_index(
    recipes: Iterable[tuple[str, str, Iterable[str]]],
    installed: Mapping[str, Iterable[str]],
) -> str:
    """The index text for recipes ``(tool, source, binaries)`` and installed tools.

    A recipe or installed tool that names no binary is indexed under its own name (most
    tools' command is their name). A (binary, tool) pair seen from several sources keeps
    the best source only; names the hooks could not look up are dropped.
    """
    rank = {s: i for i, s in enumerate(SOURCES)}
    best: dict[tuple[str, str], str] = {}

    def add(binary: str, tool: str, source: str) -> None:
        binary = command_name(binary)
        if not (valid_name(binary) and valid_name(tool)):
            return
        key = (binary, tool)
        if key not in best or rank[source] < rank[best[key]]:
            best[key] = source

    for tool, source, binaries in recipes:
        if source not in rank or source == "installed":
            raise ValueError(f"recipe source must be 'local' or 'registry', not {source!r}")
        names = [b for b in binaries if b]
        for b in names or [tool]:
            add(b, tool, source)
    for tool, binaries in installed.items():
        names = [b for b in binaries if b]
        for b in names or [tool]:
            add(b, tool, "installed")
    rows = sorted(best.items(), key=lambda kv: (kv[0][0], rank[kv[1]], kv[0][1]))
    return "".join([HEADER + "\n", *(f"{b}\t{t}\t{s}\n" for (b, t), s in rows)])


def write_index(home: str, text: str) -> str:
    """Replace the index atomically: a hook reading it sees the old or the new file whole."""
    path = index_path(home)
    write_atomic(path, text)
    return path


def parse_index(text: str) -> list[tuple[str, str, str]]:
    """``(binary, tool, source)`` rows in file order; comments and bad lines skipped."""
    rows = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) == 3:
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def lookup(text: str, command: str) -> tuple[str, str] | None:
    """``(tool, source)`` the hooks would suggest for ``command`` (the first match)."""
    for binary, tool, source in parse_index(text):
        if binary == command:
            return tool, source
    return None
