"""The installer hands itself to an attempt and a plan as an ``InstallContext``
(tsukud/install/context.py), so attempt, planning and installer no longer import each
other, not even for type hints (issue 27: a cycle the layering test, which skips
``TYPE_CHECKING`` imports, could not see)."""

from __future__ import annotations

import ast
from pathlib import Path

INSTALL = Path(__file__).resolve().parents[3] / "tsukud" / "install"


def _imports(path: Path) -> set[str]:
    """Every ``tsukud.install`` module ``path`` names, ``TYPE_CHECKING`` blocks included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.startswith("tsukud.install.")}


def _module(path: Path) -> str:
    rel = path.relative_to(INSTALL.parents[1]).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def test_no_install_module_is_reached_from_itself() -> None:
    modules = {_module(p): p for p in INSTALL.rglob("*.py")}
    graph = {m: _imports(p) & set(modules) - {m} for m, p in modules.items()}
    for start in graph:
        seen, todo = set(), list(graph[start])
        while todo:
            m = todo.pop()
            assert m != start, f"{start} imports itself through {sorted(seen)}"
            if m not in seen:
                seen.add(m)
                todo += graph[m]


def test_attempt_and_planning_name_the_protocol_not_the_installer() -> None:
    for name in ("attempt.py", "planning.py"):
        assert "tsukud.install.installer" not in _imports(INSTALL / name), name
