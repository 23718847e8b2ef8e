"""``tsukuctl create``: a recipe from a source, and when a verified repository's
releases carry no build, from its install page (the instructions builder).

Create writes a recipe for review; it does not install. So a repository with no
release build need not end with "use install instead": its GitHub homepage is read by
the instructions builder exactly as ``install`` reads it (docs/design/
instructions-builder.md), validated in the container, and returned like any created
recipe (previewed, or written with ``--yes``/``--output``). The page is read only when
a model may be used and validation runs (``--deterministic-only`` and
``--skip-validation`` keep the original error), and only for a ``github:`` source.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tsukud.create.errors import NoBinaryAssets
from tsukud.errors import TsukuError
from tsukud.flows.install_missing import page_package, page_says, with_command_cost
from tsukud.instructions.builder import InstructionsManual

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.create.service import Creator
    from tsukud.instructions.service import InstructionsBuilder

Progress = Callable[[dict[str, Any]], Awaitable[None]]


class CreateRecipe:
    def __init__(
        self,
        *,
        creator: Creator,
        homepage: Callable[[str], Awaitable[str | None]],
        instructions: InstructionsBuilder | None,
    ) -> None:
        self.creator = creator
        self.homepage = homepage  # owner/repo -> its homepage URL, or None
        self.instructions = instructions

    async def create(
        self, tool: str, source: str, *, progress: Progress, **options: Any
    ) -> CreateResult:
        """``options``: :meth:`Creator.create`'s keyword arguments. The result carries
        what the whole command spent (an install page read first included), so the
        preview's cost line counts every paid call."""
        result = await self._create(tool, source, progress=progress, **options)
        return with_command_cost(result)

    async def _create(
        self, tool: str, source: str, *, progress: Progress, **options: Any
    ) -> CreateResult:
        try:
            return await self.creator.create(tool, source, progress=progress, **options)
        except NoBinaryAssets as exc:
            if (
                options.get("deterministic_only")
                or options.get("skip_validation")
                or self.instructions is None
                or not source.startswith("github:")
            ):
                raise
            repo = source.removeprefix("github:")
            try:
                page = await self.homepage(repo)
            except TsukuError:
                page = None
            if page is None:
                raise NoBinaryAssets(
                    f"{exc.message} (no install page to read: GitHub names no homepage)",
                    hint=exc.hint,
                    **exc.data,
                ) from None
            await progress(
                {
                    "stage": "instructions",
                    "message": f"{source} has no release build ({exc.message}); reading its "
                    f"install page {page}",
                }
            )
            asked = ("confirmed", "can_ask", "providers", "only_provider", "collect_tool_stats")
            try:
                result = await self.instructions.build(
                    tool,
                    page,
                    came_from="no_binary_assets",
                    progress=progress,
                    repo=repo,
                    **{k: options[k] for k in asked if k in options},
                )
            except InstructionsManual as manual:
                spec = page_package(manual.data)
                if spec is None:
                    raise
                # The page names a package of a registry tsuku has a builder for.
                await progress({"stage": "instructions", "message": page_says(page, manual, spec)})
                return await self.creator.create(tool, spec, progress=progress, **options)
            if options.get("write"):
                saved = await self.creator.save(
                    tool,
                    result.recipe,
                    output=options.get("output"),
                    force=bool(options.get("force")),
                    session=result.session,
                )
                result.written = saved.path
            return result
