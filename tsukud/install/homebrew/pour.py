"""The install attempt's Homebrew part: runtime dependencies first, the bottle of each
``homebrew`` step looked up before rendering, and the unpacked keg relocated before
the tool's tree is assembled (``attempt.py`` calls these; other recipes skip them)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import msgspec
import trio

from tsukud.install.homebrew.client import Bottle, HomebrewClient
from tsukud.install.homebrew.deps import dependency_graph, install_order, runtime_dependencies
from tsukud.install.homebrew.errors import HomebrewError
from tsukud.install.homebrew.relocate import Report, relocate_keg
from tsukud.recipe import HomebrewStep, Platform, Recipe
from tsukud.recipe.homebrew import formula_of
from tsukud.recipe.model import matching_steps
from tsukud.recipe.version import ResolvedVersion

# Installs one dependency; answers its tool directory.
InstallFn = Callable[[str], Awaitable[str]]


class Dependencies(msgspec.Struct, frozen=True, kw_only=True):
    """A tool's runtime dependencies as relocation needs them: each one's tool
    directory (recipe name → dir, deepest first), and the Homebrew formula each
    recipe installs (recipe name → formula), since bottles name a dependency by its
    formula (``@@HOMEBREW_PREFIX@@/opt/openssl@3``), not by tsuku's recipe name."""

    dirs: dict[str, Path] = msgspec.field(default_factory=dict)
    formulas: dict[str, str] = msgspec.field(default_factory=dict)


async def install_dependencies(
    recipe: Recipe,
    load: Callable[[str], Awaitable[Recipe]],
    installed: Callable[[], dict[str, dict[str, Any]]],
    install: InstallFn,
    edges: Callable[[Recipe], tuple[str, ...]] = runtime_dependencies,
) -> Dependencies:
    """Install what ``recipe`` needs at run time (``edges`` of each recipe) and is not
    installed yet, deepest first; returns every dependency's tool directory, in that
    order, and formula."""
    recipes: dict[str, Recipe] = {}

    async def remember(name: str) -> Recipe:
        recipes[name] = await load(name)
        return recipes[name]

    graph = await dependency_graph(recipe, remember, edges)
    out = Dependencies()
    for name in install_order(recipe.metadata.name, graph):
        record = installed().get(name)
        # Installed ones stay: remove refuses what a tool needs.
        where = str(record["install_dir"]) if record is not None else await install(name)
        out.dirs[name] = Path(where)
        formula = formula_of(recipes[name])
        if formula is not None:
            out.formulas[name] = formula
    return out


async def find_bottles(
    client: HomebrewClient | None,
    recipe: Recipe,
    resolved: ResolvedVersion,
    target: Platform,
) -> dict[int, Bottle]:
    """The bottle of each ``homebrew`` step selected for ``target``, by step index."""
    steps = [
        (i, s)
        for i, s in matching_steps(recipe, target, resolved.version)
        if isinstance(s, HomebrewStep)
    ]
    if not steps:
        return {}
    if client is None:
        raise HomebrewError(f"{recipe.metadata.name}: no Homebrew client is configured")
    main = formula_of(recipe)
    out: dict[int, Bottle] = {}
    for index, step in steps:
        tag = resolved.tag
        if step.formula != main:  # a second formula in one recipe: its current bottle
            tag = (await client.resolve(step.formula, None)).tag
        out[index] = await client.bottle(step.formula, tag, target)
    return out


async def relocate(
    bottle: Bottle,
    keg: Path,
    tool_dir: Path,
    deps: Mapping[str, Path],
    *,
    formulas: Mapping[str, str] | None = None,
    loader: str | None = None,
) -> Report:
    """Relocate the unpacked ``keg`` for its final place ``tool_dir`` (in a worker
    thread: it reads every file and runs patchelf), its runtime dependencies at
    ``deps`` installing ``formulas`` (both by recipe name). ``loader``: the dynamic
    loader of the system the keg will run on (this one's by default; validation's
    container's)."""
    ref = bottle.ref
    return await trio.to_thread.run_sync(
        lambda: relocate_keg(
            keg,
            tool_dir,
            formula=ref.formula,
            pkg_version=ref.pkg_version,
            deps=deps,
            formulas=formulas,
            loader=loader,
        )
    )


def merge_summaries(before: dict[str, Any] | None, summary: dict[str, Any]) -> dict[str, Any]:
    """One ``relocation`` record for an install with several bottles (counts added,
    files left alone listed one after the other)."""
    if before is None:
        return summary
    return {
        key: before[key] + summary[key]
        for key in ("text_files", "elf_files", "macho_files", "left_alone")
    }
