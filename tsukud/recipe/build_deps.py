"""What a build from source needs installed first: tsuku's install-time dependencies
as a build here reads them.

Pure. ``install/attempt.py`` installs them (each by its own recipe) and
``install/build.py`` mounts them read-only into the build container.
"""

from __future__ import annotations

from tsukud.recipe.model import (
    CMakeBuildStep,
    ConfigureMakeStep,
    Recipe,
    declared_build_dependencies,
    matching_steps,
)
from tsukud.recipe.platform import Platform


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
    return declared_build_dependencies(recipe, builds) if builds else ()
