"""Which toolchains a recipe's ecosystem steps run: tsuku's install-time dependency of
its ecosystem actions (the record names the recipe: ``Toolchain.recipe``).

tsuku installs an ecosystem action's toolchain from its own recipe and runs the
package manager from there; this project does the same when the registry holds that
recipe (the record's ``Toolchain.recipe``), and otherwise runs the host's program found
on PATH, as before. Pure: which recipes hold the toolchains is the caller's question
(``install/planning.py`` for a plan, ``install/attempt.py`` for an install).
"""

from __future__ import annotations

import msgspec

from tsukud.recipe.model import EcosystemStep, Recipe, matching_steps
from tsukud.recipe.platform import Platform
from tsukud.registries.ecosystems import BY_ACTION, Toolchain


class HostToolchain(msgspec.Struct, frozen=True, kw_only=True):
    """A toolchain an ecosystem step runs from the host's PATH because the registry
    holds no recipe for it (where tsuku would nest that recipe's plan): the program
    and the recipe that was looked for (a plan's ``host_toolchains``)."""

    program: str
    recipe: str


def toolchains(
    recipe: Recipe, target: Platform, version: str | None = None
) -> tuple[Toolchain, ...]:
    """The toolchains of ``recipe``'s ecosystem steps selected for ``target``, each
    once, in step order; empty for a recipe that installs no ecosystem package."""
    found: dict[str, Toolchain] = {}
    for _, step in matching_steps(recipe, target, version):
        if isinstance(step, EcosystemStep) and step.action in BY_ACTION:
            chain = BY_ACTION[step.action].toolchain
            found.setdefault(chain.program, chain)
    return tuple(found.values())
