"""What a build from source needs installed first: tsuku's install-time dependencies
as a build here reads them.

Pure. ``install/attempt.py`` installs them (each by its own recipe) and
``install/build.py`` mounts them read-only into the build container.
"""

from __future__ import annotations

from tsukud.recipe.model import CMakeBuildStep, ConfigureMakeStep, Recipe, matching_steps
from tsukud.recipe.platform import Platform

# What tsuku installs as recipes for its build actions (its ActionDependencies:
# configure_make needs make, zig and pkg-config; cmake_build also cmake). Here the
# build image is the toolchain (gcc, make, cmake, patchelf), so a recipe naming them
# among its dependencies is not asked to install them on the host.
BUILD_TOOLCHAIN = frozenset({"make", "zig", "pkg-config", "cmake", "gcc", "patchelf"})


def build_dependencies(
    recipe: Recipe, target: Platform, version: str | None = None
) -> tuple[str, ...]:
    """The recipes a build of ``recipe`` on ``target`` needs installed first, in the
    order named, each once: tsuku's install-time dependencies (``metadata.dependencies``,
    ``metadata.extra_dependencies``, and the build steps' own ``dependencies``), less
    the toolchain the build image provides. Empty when no build step is selected for
    ``target``: a recipe that downloads a binary has nothing to build against."""
    builds = [
        step
        for _, step in matching_steps(recipe, target, version)
        if isinstance(step, ConfigureMakeStep | CMakeBuildStep)
    ]
    if not builds:
        return ()
    meta = recipe.metadata
    named = [*(meta.dependencies or ()), *(meta.extra_dependencies or ())]
    for step in builds:
        named += step.dependencies or ()
    return tuple(dict.fromkeys(n for n in named if n not in BUILD_TOOLCHAIN))
