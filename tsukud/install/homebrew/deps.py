"""Runtime dependencies: which recipes a tool needs installed first, in what order.

A recipe's ``metadata.runtime_dependencies`` names other recipes (each installed as a
tool of its own, shared by every tool that needs it). The closure is read from the
recipes (local, then the registry) before anything is installed, so a missing recipe
or a cycle is refused with nothing changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence

from tsukud.errors import TsukuError
from tsukud.install.homebrew.errors import DependencyCycle, DependencyMissing
from tsukud.recipe import Recipe


def runtime_dependencies(recipe: Recipe) -> tuple[str, ...]:
    return tuple(recipe.metadata.runtime_dependencies or ())


def install_order(root: str, graph: Mapping[str, Sequence[str]]) -> list[str]:
    """Every dependency of ``root``, each after its own dependencies (``root`` itself
    not included); :class:`DependencyCycle` names the cycle."""
    order: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise DependencyCycle(
                f"the runtime dependencies form a cycle: {' → '.join(cycle)}",
                hint="A recipe cannot need itself, directly or through others; fix the "
                "recipes' runtime_dependencies.",
                cycle=cycle,
            )
        if name in done:
            return
        for dep in graph.get(name, ()):
            visit(dep, [*path, name])
        done.add(name)
        if name != root:
            order.append(name)

    visit(root, [])
    return order


async def dependency_graph(
    root: Recipe, load: Callable[[str], Awaitable[Recipe]]
) -> dict[str, tuple[str, ...]]:
    """name → runtime dependencies, for ``root`` and everything it needs, read through
    ``load`` (a recipe by name)."""
    name = root.metadata.name
    graph: dict[str, tuple[str, ...]] = {name: runtime_dependencies(root)}
    pending = [(dep, name) for dep in graph[name]]
    while pending:
        dep, needed_by = pending.pop()
        if dep in graph:
            continue
        try:
            recipe = await load(dep)
        except TsukuError as exc:
            if exc.code != "recipe_not_found":
                raise
            raise DependencyMissing(
                f"{needed_by} needs {dep}, which has no recipe: {exc.message}",
                tool=needed_by,
                dependency=dep,
            ) from None
        graph[dep] = runtime_dependencies(recipe)
        pending += [(d, dep) for d in graph[dep]]
    return graph
