"""``Progress`` and ``Emit`` are named once (``tsukud/progress.py``): no module defines
its own alias or its own do-nothing default, so a change to the frame's shape is one
edit and mypy finds every caller."""

from __future__ import annotations

import ast
from pathlib import Path

TSUKUD = Path(__file__).resolve().parents[2] / "tsukud"
NAMES = {"Progress", "Emit", "ProgressFn", "Note", "Say", "ByteProgress"}


def _aliases(tree: ast.Module) -> list[str]:
    """Top-level names bound to a type alias of one of the progress shapes' names."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            targets = [node.target.id]
        else:
            continue
        out += [t for t in targets if t in NAMES]
    return out


def test_progress_and_emit_are_defined_only_in_the_progress_module() -> None:
    found = {
        str(path.relative_to(TSUKUD.parent)): names
        for path in sorted(TSUKUD.rglob("*.py"))
        if path.name != "progress.py" or path.parent != TSUKUD
        if (names := _aliases(ast.parse(path.read_text())))
    }
    assert found == {}, f"define these in tsukud/progress.py and import them: {found}"


def test_the_walk_finds_an_alias() -> None:
    tree = ast.parse("Progress = Callable[[dict], Awaitable[None]]\nEmit: TypeAlias = int\nx = 1\n")
    assert _aliases(tree) == ["Progress", "Emit"]
