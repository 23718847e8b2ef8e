"""The binary index: which tool provides a command, as one plain-text file.

``$TSUKU_HOME/share/binary-index.tsv`` holds one line per (command, tool) pair::

    <binary> TAB <tool> TAB <source> [TAB <other claimants>]

``source`` is ``installed``, ``local`` (``$TSUKU_HOME/recipes``) or ``registry``. Lines are
sorted by binary, then by source in that order, then the tool named after the command
before any other, then by tool, so the first line starting with ``<binary> TAB`` is the
best answer. That lets the shell hooks answer with one ``grep -m1`` and no Python start
(10 to 45 ms, against ~2 ms for the shell's own "command not found"), and lets the daemon
keep it current without the hooks ever talking to it. A first line starting with ``#``
names the format; no command starts with ``#``, so it never matches.

Command claims cannot be hijacked (issue 33): a name a recipe only ``satisfies`` (an
alias, ``hx`` for helix) is dropped when another recipe or installed tool provides that
command under its own name (the ``a-kube`` entry claiming ``k9s`` beside the real
``k9s``); each such claim is listed in a ``#ignored`` comment line and in the rebuild's
result, which ``hook install`` reports. When several tools claim a command and none is
named after it nor installed, the first line carries the others in a fourth column:
the hooks then only suggest (listing them all), never install one on their own.

Standard library only: ``tsukuctl hook status`` and ``doctor`` read it on the client side.
"""

from __future__ import annotations

import os
import re

from tsukud.fsutil import write_atomic
from tsukud.paths import index_path

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    # (tool, source, binaries) or (tool, source, binaries, aliases it satisfies)
    RecipeCommands = tuple[str, str, Iterable[str]] | tuple[str, str, Iterable[str], Iterable[str]]

HEADER = (
    "# tsuku binary index v2: binary<TAB>tool<TAB>source (installed|local|registry)"
    "[<TAB>other claimants, when none is named after the binary]"
)
IGNORED = "#ignored"  # "#ignored<TAB>command<TAB>claimant<TAB>source": an alias dropped
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


def _owns(tool: str, command: str) -> bool:
    return tool.lower() == command.lower()


class IndexPlan:
    """What the index says: its rows ``(binary, tool, source, others)`` in file order
    (``others`` set on a command's first row only, when it is ambiguous) and the alias
    claims dropped ``(command, claimant, source)``."""

    __slots__ = ("ignored", "rows")

    def __init__(
        self,
        rows: list[tuple[str, str, str, tuple[str, ...]]],
        ignored: list[tuple[str, str, str]],
    ) -> None:
        self.rows = rows
        self.ignored = ignored


def plan_index(
    recipes: Iterable[RecipeCommands],
    installed: Mapping[str, Iterable[str]],
) -> IndexPlan:
    """The index for recipes ``(tool, source, binaries[, aliases])`` and installed tools.

    A recipe or installed tool that names no binary is indexed under its own name (most
    tools' command is their name). A (binary, tool) pair seen from several sources keeps
    the best source only, and counts as an alias claim only if no source has the tool
    providing it as a binary; names the hooks could not look up are dropped.
    """
    rank = {s: i for i, s in enumerate(SOURCES)}
    best: dict[tuple[str, str], str] = {}
    alias_only: dict[tuple[str, str], bool] = {}

    def add(binary: str, tool: str, source: str, alias: bool) -> None:
        binary = command_name(binary)
        if not (valid_name(binary) and valid_name(tool)):
            return
        key = (binary, tool)
        if key not in best or rank[source] < rank[best[key]]:
            best[key] = source
        alias_only[key] = alias_only.get(key, True) and alias and not _owns(tool, binary)

    for entry in recipes:
        tool, source, binaries = entry[0], entry[1], entry[2]
        aliases: Iterable[str] = entry[3] if len(entry) == 4 else ()
        if source not in rank or source == "installed":
            raise ValueError(f"recipe source must be 'local' or 'registry', not {source!r}")
        names = [b for b in binaries if b]
        for b in names or [tool]:
            add(b, tool, source, False)
        for a in aliases:
            if a:
                add(a, tool, source, True)
    for tool, binaries in installed.items():
        names = [b for b in binaries if b]
        for b in names or [tool]:
            add(b, tool, "installed", False)
    owned = {b for (b, t), alias in alias_only.items() if not alias and _owns(t, b)}
    ignored = sorted(
        (b, t, best[(b, t)])
        for (b, t), alias in alias_only.items()
        if alias and b in owned and not _owns(t, b)
    )
    for b, t, _source in ignored:
        del best[(b, t)]
    ordered = sorted(
        best.items(),
        key=lambda kv: (kv[0][0], rank[kv[1]], not _owns(kv[0][1], kv[0][0]), kv[0][1]),
    )
    by_binary: dict[str, list[tuple[str, str]]] = {}
    for (b, t), source in ordered:
        by_binary.setdefault(b, []).append((t, source))
    rows: list[tuple[str, str, str, tuple[str, ...]]] = []
    for b, claims in by_binary.items():
        first_tool, first_source = claims[0]
        clear = len(claims) == 1 or first_source == "installed" or _owns(first_tool, b)
        others = () if clear else tuple(t for t, _ in claims[1:])
        rows.append((b, first_tool, first_source, others))
        rows += [(b, t, source, ()) for t, source in claims[1:]]
    return IndexPlan(rows, ignored)


def render_index(plan: IndexPlan) -> str:
    """The file's text for ``plan``."""
    lines = [HEADER + "\n"]
    lines += [f"{IGNORED}\t{b}\t{t}\t{s}\n" for b, t, s in plan.ignored]
    for b, t, s, others in plan.rows:
        lines.append(f"{b}\t{t}\t{s}" + (f"\t{','.join(others)}" if others else "") + "\n")
    return "".join(lines)


def build_index(
    recipes: Iterable[RecipeCommands],
    installed: Mapping[str, Iterable[str]],
) -> str:
    """The index text for recipes and installed tools (:func:`plan_index`)."""
    return render_index(plan_index(recipes, installed))


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
        if len(parts) in (3, 4):
            rows.append((parts[0], parts[1], parts[2]))
    return rows


def lookup(text: str, command: str) -> tuple[str, str] | None:
    """``(tool, source)`` the hooks would suggest for ``command`` (the first match)."""
    for binary, tool, source in parse_index(text):
        if binary == command:
            return tool, source
    return None
