"""Runtime dependencies: which recipes a tool needs installed first, in what order.

A recipe's ``metadata.runtime_dependencies`` names other recipes (each installed as a
tool of its own, shared by every tool that needs it). The closure is read from the
recipes (local, then the registry) before anything is installed, so a missing recipe
or a cycle is refused with nothing changed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tsukud.errors import TsukuError
from tsukud.install.homebrew.errors import DependencyCycle, DependencyInUse, DependencyMissing
from tsukud.recipe import Platform, Recipe, matching_steps
from tsukud.recipe.model import LinkDependenciesStep


def runtime_dependencies(recipe: Recipe, target: Platform | None = None) -> tuple[str, ...]:
    """``metadata.runtime_dependencies``, then each library a ``link_dependencies``
    step (for ``target``; any platform's when None) links into the tool: the tool's
    ``lib/`` points into it, so it is needed while the tool is installed."""
    linked = (
        step.library
        for step in (
            recipe.steps if target is None else (s for _, s in matching_steps(recipe, target))
        )
        if isinstance(step, LinkDependenciesStep)
    )
    return tuple(dict.fromkeys((*(recipe.metadata.runtime_dependencies or ()), *linked)))


def install_order(root: str, graph: Mapping[str, Sequence[str]]) -> list[str]:
    """Every dependency of ``root``, each after its own dependencies (``root`` itself
    not included); :class:`DependencyCycle` names the cycle."""
    order: list[str] = []
    done: set[str] = set()

    def visit(name: str, path: list[str]) -> None:
        if name in path:
            cycle = [*path[path.index(name) :], name]
            raise DependencyCycle(
                f"the dependencies form a cycle: {' → '.join(cycle)}",
                hint="A recipe cannot need itself, directly or through others; fix the "
                "recipes' runtime_dependencies or dependencies.",
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
    root: Recipe,
    load: Callable[[str], Awaitable[Recipe]],
    edges: Callable[[Recipe], tuple[str, ...]] = runtime_dependencies,
) -> dict[str, tuple[str, ...]]:
    """name → dependencies (``edges``: runtime ones by default), for ``root`` and
    everything it needs, read through ``load`` (a recipe by name)."""
    name = root.metadata.name
    graph: dict[str, tuple[str, ...]] = {name: edges(root)}
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
        graph[dep] = edges(recipe)
        pending += [(d, dep) for d in graph[dep]]
    return graph


def needs(record: Mapping[str, Any]) -> list[str]:
    """What an installed tool's record says it needs kept installed: its runtime
    dependencies, and the build dependencies its build from source was made against
    (``build.dependencies``: mounted at their own paths, so the output may load their
    libraries from there; tsuku's ``RequiredBy`` counts install-time dependencies too)."""
    build = record.get("build")
    built_against = (build.get("dependencies") or {}) if isinstance(build, Mapping) else {}
    return list(dict.fromkeys([*(record.get("runtime_dependencies") or ()), *built_against]))


def dependents(installed: Mapping[str, Mapping[str, Any]], name: str) -> list[str]:
    """The installed tools (other than ``name``) that need ``name`` (:func:`needs`:
    at run time, or built against it), sorted."""
    return sorted(tool for tool, rec in installed.items() if tool != name and name in needs(rec))


def unneeded(
    installed: Mapping[str, Mapping[str, Any]], removed: str, deps: Sequence[str]
) -> list[str]:
    """Which of ``removed``'s dependencies (:func:`needs`) are installed and needed by
    no other installed tool once it is gone (``remove`` says so; it removes nothing
    itself, where tsuku removes such orphans: they may be used directly)."""
    left = {tool: rec for tool, rec in installed.items() if tool != removed}
    return sorted({dep for dep in deps if dep in left and not dependents(left, dep)})


def replaced_in_use(
    installed: Mapping[str, Mapping[str, Any]], name: str, version: str
) -> tuple[Mapping[str, Any], list[str]] | None:
    """``name``'s installed record and the tools that need it, when installing it at
    another ``version`` would replace it under them; None when nothing is in the way
    (not installed, the same version, or needed by nothing)."""
    current = installed.get(name)
    if current is None or str(current.get("version")) == version:
        return None
    needed_by = dependents(installed, name)
    return (current, needed_by) if needed_by else None


def refuse_version_change(
    installed: Mapping[str, Mapping[str, Any]], name: str, version: str
) -> None:
    """:class:`DependencyInUse` when installing ``name`` at ``version`` would replace
    (and so delete) the installed version other tools were relocated against.

    A dependent's RPATH names ``tools/<name>-<old version>/lib``; the install of
    another version deletes that directory once it is active, and the dependent would
    stop loading. Refusing is the honest choice (docs/install.md says why not keep the
    old directory); a reinstall of the same version keeps the path and is allowed."""
    in_use = replaced_in_use(installed, name, version)
    if in_use is None:
        return
    current, needed_by = in_use
    old = current.get("version")
    who = ", ".join(needed_by)
    raise DependencyInUse(
        f"{name} {old} is needed by {who} (their binaries load its libraries from, or were "
        f"built against, {current.get('install_dir')}); installing {name} {version} would "
        "delete it",
        hint=f"Remove {who} first (`tsukuctl remove {needed_by[0]}`), install {name}@{version}, "
        f"then install {who} again: they are relocated against the new {name}. "
        f"{name} {old} stays installed meanwhile.",
        tool=name,
        needed_by=needed_by,
        version=old,
        requested=version,
    )
