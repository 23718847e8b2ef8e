"""``tsukuctl install``: the tool's recipe installed, or, when it has none and the
request allows it (``--discover``, ``--from``), the no-recipe flow: discover or take the
source, write a recipe, install it (:mod:`tsukud.flows.install_missing`).

Which of the two runs is this flow's decision, not the RPC handler's: "no recipe" is
the installer's ``RecipeNotFound`` and nothing else (a broken recipe is reported, never
replaced by a discovered one). A ``--from`` given while a recipe exists is not used,
and the person is told so rather than left to guess which source was installed. What
``install`` answers is decided here too (:class:`ToolInstalled`): the handler only
parses the request and sends the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec
from msgspec import UNSET, UnsetType

from tsukud.discover.model import Discovery
from tsukud.flows.install_missing import CreatedRecipe, LlmChoice
from tsukud.install.results import Installed
from tsukud.progress import Progress

if TYPE_CHECKING:
    from tsukud.flows.install_missing import InstallMissing
    from tsukud.install.installer import Installer
    from tsukud.source import FromSource


class InstallRequest(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    version: str | None = None
    force: bool = False
    yes: bool = False  # discovery's source question, generation cost; never shadowing
    can_ask: bool = False  # a person can be asked (a terminal)
    discover: bool = False  # no recipe: discover the source, write a recipe, install it
    source: FromSource | None = None  # no recipe: this source instead (``--from``)
    search_provider: str | None = None
    collect_tool_stats: bool = False
    llm: LlmChoice = msgspec.field(default_factory=LlmChoice)
    trust_page_hosts: bool = False


class GivenSource(msgspec.Struct, frozen=True, kw_only=True):
    """Where the recipe came from when the request named it (``--from``): nothing was
    discovered."""

    source: str
    stage: str = "from"


class ToolInstalled(Installed, frozen=True, kw_only=True):
    """``install``'s answer: the installer's (:class:`Installed`), and, when the tool had
    no recipe, how its source was found (``discovery``) and its recipe written
    (``created``); with ``collect_tool_stats``, the models' tool calls (none when a
    recipe existed: no model was asked). Unset fields are not sent."""

    discovery: Discovery | GivenSource | UnsetType = UNSET
    created: CreatedRecipe | UnsetType = UNSET
    tool_stats: list[dict[str, Any]] | UnsetType = UNSET


class InstallTool:
    def __init__(self, *, installer: Installer, missing: Callable[[], InstallMissing]) -> None:
        self.installer = installer
        # Built on first need: a tool with a recipe pays for no discovery or generator.
        self.missing = missing

    async def run(self, req: InstallRequest, *, progress: Progress) -> ToolInstalled:
        from tsukud.install.registry import RecipeNotFound

        if req.source is not None and not await self._looked_for_recipe(
            req.name, req.source, progress
        ):
            return await self._from_source(req, progress)
        try:
            res = await self.installer.install(
                req.name,
                req.version,
                force=req.force,
                progress=progress,
                can_ask=req.can_ask,
                yes=req.yes,
            )
            stats: list[dict[str, Any]] | UnsetType = [] if req.collect_tool_stats else UNSET
            return ToolInstalled(**msgspec.structs.asdict(res), tool_stats=stats)
        except RecipeNotFound:
            if not (req.discover or req.source is not None):
                raise
        return await self._from_source(req, progress)

    async def _from_source(self, req: InstallRequest, progress: Progress) -> ToolInstalled:
        done = await self.missing().run(
            req.name,
            req.version,
            progress=progress,
            force=req.force,
            yes=req.yes,
            can_ask=req.can_ask,
            search_provider=req.search_provider,
            source=req.source,
            collect_tool_stats=req.collect_tool_stats,
            llm=req.llm,
            trust_page_hosts=req.trust_page_hosts,
        )
        return ToolInstalled(
            **msgspec.structs.asdict(done.install),
            discovery=GivenSource(source=done.source) if done.discovery is None else done.discovery,
            created=done.created,
            tool_stats=UNSET if done.tool_stats is None else list(done.tool_stats),
        )

    async def _looked_for_recipe(self, name: str, source: FromSource, progress: Progress) -> bool:
        """Whether a recipe for ``name`` could be looked for. One that exists makes
        ``--from`` pointless: that is said rather than ignored (a second run of the same
        ``install --from`` line installs from the recipe the first one wrote; a user who
        wants another source replaces the recipe).

        False when the recipe registry cannot be reached (offline, a firewall) and no
        local recipe answered: the person named the source, so it is used, and said so,
        rather than stopping at a look-up that only asked whether a recipe exists."""
        from tsukud.errors import TsukuError
        from tsukud.install.registry import NOT_ASKED, RecipeNotFound

        try:
            loaded = await self.installer.registry.load(name)
        except NOT_ASKED as e:
            await progress(
                {
                    "stage": "note",
                    "tool": name,
                    "message": f"the recipe registry could not be reached ({e.message}); "
                    f"writing a recipe from --from {source} as you named it",
                }
            )
            return False
        except (RecipeNotFound, TsukuError):  # none, or broken: the install reports that
            return True
        await progress(
            {
                "stage": "note",
                "tool": name,
                "message": f"a recipe for {name} exists ({loaded.source}), so --from {source} "
                f"is not used; `tsukuctl create {name} --from {source} --force` replaces it",
            }
        )
        return True
