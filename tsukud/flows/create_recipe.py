"""``tsukuctl create``: a recipe from a source, and when a verified repository's
releases carry no build, from its install page (the instructions builder).

Create writes a recipe for review; it does not install. So a repository with no
release build need not end with "use install instead": its GitHub homepage is read by
the instructions builder exactly as ``install`` reads it (docs/design/
instructions-builder.md), validated in the container, and returned like any created
recipe (previewed, or written with ``--yes``/``--output``). The page is read only when
a model may be used and validation runs (``--deterministic-only`` and
``--skip-validation`` keep the original error), and only for a ``github:`` source: the
fallback is ``flows/no_build.py``, shared with ``install``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tsukud.create.errors import NoBinaryAssets
from tsukud.create.preview import page_uses
from tsukud.flows.install_missing import with_command_cost
from tsukud.flows.no_build import NoBuildFallback, PagePackage, page_consent
from tsukud.instructions.trust import decode_uses
from tsukud.progress import Progress
from tsukud.source import FromSource, shown

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.create.service import Creator
    from tsukud.instructions.service import InstructionsBuilder
    from tsukud.policy.confirm import Confirmations


class CreateRecipe:
    def __init__(
        self,
        *,
        creator: Creator,
        homepage: Callable[[str], Awaitable[str | None]],
        instructions: InstructionsBuilder | None,
        confirmations: Confirmations | None = None,
    ) -> None:
        self.confirmations = confirmations  # None: no one can be asked
        self.creator = creator
        # owner/repo -> its homepage URL, or None; instructions None: no page is read
        self.fallback = NoBuildFallback(homepage=homepage, instructions=instructions)

    async def create(
        self, tool: str, source: FromSource, *, progress: Progress, **options: Any
    ) -> CreateResult:
        """``options``: :meth:`Creator.create`'s keyword arguments, and
        ``trust_page_hosts`` (``--trust-page-hosts``): a recipe read from the homepage
        may use hosts and packages the repository does not name without a person's
        yes. Without it, such a recipe is written by ``--yes`` only after the person
        saw them listed and said yes (a terminal), and a page's package is not fetched
        before that; the preview (no ``--yes``) lists them for the person's [i]. The
        result carries what the whole command spent (an install page read first
        included), so the preview's cost line counts every paid call."""
        result = await self._create(tool, source, progress=progress, **options)
        return with_command_cost(result)

    async def _create(
        self, tool: str, source: FromSource, *, progress: Progress, **options: Any
    ) -> CreateResult:
        trust = bool(options.pop("trust_page_hosts", False))
        try:
            return await self.creator.create(tool, source, progress=progress, **options)
        except NoBinaryAssets as exc:
            if options.get("deterministic_only") or options.get("skip_validation"):
                raise  # no model may read a page, or nothing would check its recipe
            page = await self.fallback.install_page(source, exc)
            await progress(
                {
                    "stage": "instructions",
                    "message": f"{source} has no release build ({exc.message}); reading its "
                    f"install page {page}",
                }
            )

        async def say(message: str) -> None:
            await progress({"stage": "instructions", "message": message})

        async def consent(uses: object, again: str, session: str | None = None) -> None:
            """The person's yes to what the page's recipe uses that the repository
            does not name (or ``--trust-page-hosts``); see :func:`page_consent`."""
            await page_consent(
                self.confirmations,
                progress,
                tool=tool,
                url=page.url,
                uses=decode_uses(uses),
                can_ask=bool(options.get("can_ask")),
                trust=trust,
                again=again,
                session=session,
            )

        asked = ("confirmed", "can_ask", "providers", "only_provider", "collect_tool_stats")
        outcome = await self.fallback.read(
            tool,
            page,
            came_from="no_binary_assets",
            progress=progress,
            say=say,
            consent=lambda uses: consent(uses, f"tsukuctl create {tool} --from {source}"),
            repo=shown(source),
            refuse_strangers=not trust
            and bool(options.get("write"))
            and options.get("output") is None
            and not options.get("can_ask"),
            **{k: options[k] for k in asked if k in options},
        )
        if isinstance(outcome, PagePackage):
            return await self.creator.create(tool, outcome.source, progress=progress, **options)
        result = outcome.result
        if options.get("write") and options.get("output") is None:
            # Written where install finds it, with no preview: the person must have
            # seen what the repository does not name.
            await consent(
                page_uses(result.preview),
                f"tsukuctl create {tool} --from {source} without --yes",
                session=result.session,
            )
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
