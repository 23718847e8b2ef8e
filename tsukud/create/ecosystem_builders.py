"""Deterministic recipe builders for ecosystem packages: ``--from <prefix>:<package>``
for every record of ``registries/ecosystems.py`` (``registries.ecosystems.sources_hint``
lists them).

The registry's metadata says everything a recipe needs, so no model is asked and
nothing is guessed. Which documents list a package's versions and where its
executables are written down (a manifest's ``bin``, a wheel's ``entry_points.txt``, a
published crate's targets, a ``.gem``'s spec, a module's main packages) is each
ecosystem's own knowledge: its runner module's ``draft``, reached here through the
record (``install/ecosystem/actions.py``), never by name. This module turns what it
answers into tsuku's registry style: one ecosystem step, no ``[version]`` unless the
installer could not infer it (versions come from the registry), and ``<first
executable> --version`` expected to print the version. ``validation/ecosystem.py`` then
proves it: the package is fetched on the host with its scripts off and installed and
verified in the validation container.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tsukud.create.context import clean_description
from tsukud.create.errors import CreateError
from tsukud.install.ecosystem.actions import ACTIONS
from tsukud.install.ecosystem.drafting import Drafted, Drafter, NotDrafted
from tsukud.install.ecosystem.versions import registry_unreachable
from tsukud.net.http import HttpUnreachable
from tsukud.recipe import Metadata, Recipe, Verify, dump_recipe
from tsukud.recipe.model import EcosystemStep
from tsukud.registries.ecosystems import ECOSYSTEMS, Ecosystem

if TYPE_CHECKING:
    from tsukud.net.http import Http


@dataclass(frozen=True)
class Draft:
    """A recipe from a registry, at the version it was drafted for."""

    recipe: Recipe
    step: EcosystemStep
    version: str
    tag: str  # the registry's spelling (what the runner pins)
    text: str


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def recipe_of(tool: str, drafted: Drafted) -> Draft:
    """The recipe for what a drafter found: its step, the registry's description and
    an https homepage, and ``<first executable> --version`` as the verify command."""
    step, homepage = drafted.step, drafted.homepage
    home = homepage if isinstance(homepage, str) and homepage.startswith("https://") else None
    recipe = Recipe(
        metadata=Metadata(
            name=tool, description=clean_description(_text(drafted.description)), homepage=home
        ),
        version=drafted.version,
        steps=(step,),
        verify=Verify(command=f"{step.executables[0]} --version", pattern="{version}"),
    )
    resolved = drafted.resolved
    return Draft(recipe, step, resolved.version, resolved.tag, dump_recipe(recipe))


#: ``draft(http, registry URL, tool, package, requested version)``
Builder = Callable[["Http", str, str, str, "str | None"], Awaitable[Draft]]


def _builder(record: Ecosystem, drafter: Drafter) -> Builder:
    async def build(http: Http, base: str, tool: str, package: str, version: str | None) -> Draft:
        try:
            drafted = await drafter(http, base, package, version)
        except HttpUnreachable as exc:
            doing = f"cannot read {record.prefix}:{package}"
            raise registry_unreachable(exc, record, base, doing) from None
        except NotDrafted as exc:
            data = {} if exc.status is None else {"status": exc.status}
            raise CreateError(exc.message, hint=exc.hint, **data) from None
        return recipe_of(tool, drafted)

    return build


#: ``--from`` prefix -> its builder, for every record whose runner drafts.
DRAFTERS: dict[str, Builder] = {
    e.prefix: _builder(e, drafter)
    for e in ECOSYSTEMS
    if (drafter := ACTIONS[e.action].drafter) is not None
}
