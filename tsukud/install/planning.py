"""``tools.plan``: what an install would do, resolved for a version and a platform,
without downloading or installing anything (the pure planner is ``recipe/plan.py``).

The recipe comes from the registry (a tool's name) or from the caller (a recipe file's
text, ``tsukuctl plan recipe.toml``); the version is resolved like an install resolves
it, so the plan names the same tag, URLs and GitHub digests an install would use.
Keys of the recipe the format does not model are listed (``unknown_keys``): they are
kept, never fatal, and a plan is where an author sees that tsuku ignored them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.errors import TsukuError, UsageError
from tsukud.install import layout
from tsukud.install.ecosystem.toolchain import recipe_held
from tsukud.install.homebrew.errors import HomebrewError
from tsukud.install.homebrew.pour import find_bottles
from tsukud.recipe import (
    Platform,
    Recipe,
    RecipeError,
    ResolvedVersion,
    parse_platform,
    parse_recipe,
    unknown_keys,
)
from tsukud.recipe.build_deps import build_dependencies
from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.model import UnsupportedVersionSource, VersionNotFound
from tsukud.recipe.plan import (
    PLAN_FORMAT_VERSION,
    PLAN_STORAGE_VERSION,
    Plan,
    UnsupportedStep,
    plan_platform,
    plan_recipe,
    planned_dependencies,
)
from tsukud.recipe.system import SYSTEM_MANAGERS
from tsukud.recipe.toolchains import toolchains

if TYPE_CHECKING:
    from tsukud.github.client import Release
    from tsukud.install.context import InstallContext


def _target(platform: str | None, host: Platform) -> Platform:
    """``os/arch``, or ``linux/arch/<family>`` (debian, rhel, arch, alpine, suse: the
    family's system package step is planned, as tsuku's per-family plans; alpine is
    musl)."""
    if not platform:
        return host
    key, _, family = platform.strip().rpartition("/")
    families = {m.family for m in SYSTEM_MANAGERS.values()}
    try:
        if key.count("/") == 1 and family in families:
            base = parse_platform(key, "musl" if family == "alpine" else None)
            if base.os != "linux":
                raise ValueError(f"a Linux family names a Linux platform, got {platform!r}")
            return msgspec.structs.replace(base, linux_family=family)
        return parse_platform(platform)
    except ValueError as exc:
        raise UsageError(
            str(exc),
            hint="Write --platform os/arch, e.g. linux/arm64, or linux/amd64/debian for a "
            f"Linux family ({', '.join(sorted(families))}).",
        ) from None


async def _bottles(
    inst: InstallContext, recipe: Recipe, resolved: ResolvedVersion, target: Platform
) -> tuple[dict[int, BottleRef], str | None]:
    """The homebrew steps' bottles for ``target`` (token, index and manifest are read;
    no blob), or why there is none: a plan lists that as unsupported, not as a failure."""
    try:
        found = await find_bottles(inst.homebrew, recipe, resolved, target)
    except (RecipeError, HomebrewError) as exc:
        return {}, exc.message
    return {i: b.ref for i, b in found.items()}, None


async def plan_tool(
    inst: InstallContext,
    name: str | None,
    recipe_text: str | None,
    version: str | None,
    platform: str | None,
) -> dict[str, Any]:
    target = _target(platform, inst.platform)
    if recipe_text is not None:
        recipe: Recipe = parse_recipe(recipe_text, name or "<recipe>")
        source, path = "file", name
    elif name:
        loaded = await inst.registry.load(name)
        recipe, source, path = loaded.recipe, loaded.source, loaded.path
    else:
        raise UsageError("tools.plan needs a tool or a recipe's text")
    try:
        res = await inst.resolver.resolve(recipe, version)
    except VersionNotFound:
        raise
    except UnsupportedVersionSource as exc:
        if not version:  # a report, not a failure: say which source, plan no steps
            return _unresolved_plan(recipe, target, exc, source, path)
        resolved, release = ResolvedVersion(version.removeprefix("v"), version), None
    except RecipeError:
        # A version source tsuku cannot query yet: an explicit version still plans.
        if not version:
            raise
        resolved, release = ResolvedVersion(version.removeprefix("v"), version), None
    else:
        resolved, release = res.resolved, res.release
    plan = await _plan(inst, recipe, resolved, release, target, {recipe.metadata.name})
    out: dict[str, Any] = msgspec.to_builtins(plan)
    out["recipe_source"] = source
    out["recipe_path"] = path
    out["tag"] = resolved.tag
    out["unknown_keys"] = unknown_keys(recipe)
    # What an install builds against, each installed first by its own recipe (this
    # project's key, only when there are some).
    build_deps = build_dependencies(recipe, target, resolved.version)
    if build_deps:
        out["build_dependencies"] = list(build_deps)
    return out


async def _plan(
    inst: InstallContext,
    recipe: Recipe,
    resolved: ResolvedVersion,
    release: Release | None,
    target: Platform,
    seen: set[str],
) -> Plan:
    """``recipe``'s plan with its dependencies' plans nested (depth first; a tool
    already planned in this tree is not planned again, as tsuku nests them): first the
    toolchains its ecosystem steps run, when the registry holds their recipes (tsuku's
    actions' install-time dependencies), then the ones it names. A toolchain without
    a recipe is the host's, and the plan says so (``host_toolchains``)."""
    dependencies: list[Plan] = []
    chains = toolchains(recipe, target, resolved.version)
    held = [str(c.recipe) for c in chains if await recipe_held(inst.registry, c)]
    names, host = planned_dependencies(recipe, target, resolved.version, held)
    for dep in names:
        if dep not in seen:
            seen.add(dep)
            dependencies.append(await _dependency_plan(inst, dep, target, seen))
    bottles, problem = await _bottles(inst, recipe, resolved, target)
    return plan_recipe(
        recipe,
        resolved,
        target,
        install_dir=str(layout.tool_dir(inst.home, recipe.metadata.name, resolved.version)),
        assets=release.asset_names if release is not None else None,
        digests={a.name: a.sha256 for a in release.assets if a.sha256} if release else None,
        sizes={a.name: a.size for a in release.assets if a.size} if release else None,
        github_url=inst.github_url(),
        bottles=bottles,
        bottle_problem=problem,
        dependencies=dependencies,
        host_toolchains=host,
    )


async def _dependency_plan(
    inst: InstallContext, name: str, target: Platform, seen: set[str]
) -> Plan:
    """A dependency's plan at its newest version; one that cannot be loaded or
    resolved is a plan of that one gap (the outer plan lists it, named)."""
    try:
        recipe = (await inst.registry.load(name)).recipe
        res = await inst.resolver.resolve(recipe, None)
    except TsukuError as exc:
        gap = UnsupportedStep(action="dependency", platform=str(target), reason=exc.message)
        return _bare_plan(name, target, gap)
    return await _plan(inst, recipe, res.resolved, res.release, target, seen)


def _bare_plan(tool: str, target: Platform, gap: UnsupportedStep) -> Plan:
    """No steps: only why."""
    return Plan(
        format_version=PLAN_FORMAT_VERSION,
        storage_version=PLAN_STORAGE_VERSION,
        tool=tool,
        version="",
        platform=plan_platform(target),
        deterministic=True,
        steps=(),
        unsupported=(gap,),
    )


def _unresolved_plan(
    recipe: Recipe, target: Platform, exc: UnsupportedVersionSource, source: str, path: str | None
) -> dict[str, Any]:
    """No version to plan at: the plan is that one honest line (the steps need one)."""
    gap = UnsupportedStep(
        action="version",
        platform=str(target),
        reason=f"{exc.message}, so no version can be looked up; name one (--version V) "
        "to plan the steps",
    )
    plan = _bare_plan(recipe.metadata.name, target, gap)
    out: dict[str, Any] = msgspec.to_builtins(plan)
    out.update(recipe_source=source, recipe_path=path, tag=None)
    out["unknown_keys"] = unknown_keys(recipe)
    return out
