"""A repository whose releases carry no build: its install page read instead.

``install`` and ``create`` both end up here when create's matcher finds no release
asset for this platform (``NoBinaryAssets``), and ``install`` also when discovery found
an install page by web search. The page is the repository's homepage, when GitHub
names one; the instructions builder reads it as a person sees it, validates the recipe
in the container (docs/design/instructions-builder.md), and either returns that recipe
or says the page's instructions are a registry's package (``pipx install x``), which
then goes to that registry's builder, but only after the person accepted what the page
names that the repository does not (``consent``): nothing is fetched before that.

What each command does with the outcome differs (``install`` shows and saves it, then
installs; ``create`` previews or writes it), so the flow returns a typed outcome and
the two callers keep only that part.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.create.errors import NoBinaryAssets
from tsukud.errors import ConfirmationRequired, TsukuError, UserDeclined
from tsukud.instructions.trust import TRUST_FLAG, PageUse, foreign, listing, refusal
from tsukud.progress import Progress, Say
from tsukud.registries.ecosystems import BY_PAGE_MANAGER, sources_hint
from tsukud.source import FromSource, GitHubRepo, Page, parse_source

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.instructions.service import InstructionsBuilder
    from tsukud.policy.confirm import Confirmations

#: One line of progress, in the caller's frame (install's and create's differ).
#: The person's yes to a page's ``uses`` (or a refusal) before its package is fetched.
Consent = Callable[[object], Awaitable[None]]

#: What is left to try when no page can be read.
NO_PAGE_HINT = f"Name a package source if it has one: --from {sources_hint(github=False)}."


class PageRecipe(msgspec.Struct, frozen=True, kw_only=True):
    """The recipe the instructions builder read from the page, validated."""

    result: CreateResult


class PagePackage(msgspec.Struct, frozen=True, kw_only=True):
    """The registry package the page's instructions install, accepted by the person."""

    source: FromSource


PageOutcome = PageRecipe | PagePackage


class NoBuildFallback:
    def __init__(
        self,
        *,
        homepage: Callable[[str], Awaitable[str | None]],
        instructions: InstructionsBuilder | None,
    ) -> None:
        self.homepage = homepage  # owner/repo -> its homepage URL, or None
        self.instructions = instructions  # None: no page is read

    async def install_page(self, source: FromSource, no_build: NoBinaryAssets) -> Page:
        """The page to read for ``source``, whose releases carry no build; else
        ``no_build`` again, saying why there is none to read."""
        if self.instructions is None or not isinstance(source, GitHubRepo):
            raise no_build
        try:
            url = await self.homepage(source.slug)
        except TsukuError:  # no page is the answer: the original error stands
            url = None
        if url is None:
            raise NoBinaryAssets(
                f"{no_build.message} (no install page to read: GitHub names no homepage)",
                hint=NO_PAGE_HINT,
                **no_build.data,
            ) from None
        return Page(url)

    async def read(
        self,
        tool: str,
        page: Page,
        *,
        came_from: str,
        progress: Progress,
        say: Say,
        consent: Consent,
        **build: Any,
    ) -> PageOutcome:
        """``build``: the instructions builder's keyword arguments (``repo``,
        ``refuse_strangers``, the money questions' answers, ...)."""
        from tsukud.instructions.builder import InstructionsManual

        if self.instructions is None:
            raise RuntimeError("read() without an instructions builder")  # install_page refused
        try:
            result = await self.instructions.build(
                tool, page.url, came_from=came_from, progress=progress, **build
            )
        except InstructionsManual as manual:
            spec = page_package(manual.data)
            if spec is None:
                raise
            # The page names a package of a registry tsuku has a builder for: the
            # person accepts it (unless the repository names it) before any fetch.
            await say(page_says(page.url, manual, spec))
            await consent(manual.data.get("uses"))
            return PagePackage(source=spec)
        return PageRecipe(result=result)


# An install page's package manager (``pipx install``, ...): the ``--from`` prefix of
# the registry builder it goes to, from the records.
PAGE_ECOSYSTEMS = {m: e.prefix for m, e in BY_PAGE_MANAGER.items()}


def page_says(url: str, manual: TsukuError, spec: FromSource) -> str:
    return (
        f"the install page {url} says `{manual.data['install_command']}`: writing the "
        f"recipe from {spec}"
    )


def page_package(data: dict[str, Any]) -> FromSource | None:
    """``<prefix>:<package>`` for an install page whose instructions are a package of a
    registry with a builder (its record's ``page_manager``); None for anything else
    (shown, not run). A name the registry cannot have is ``BadSource``."""
    prefix = PAGE_ECOSYSTEMS.get(str(data.get("manager")))
    package = data.get("package")
    if data.get("kind") != "ecosystem" or prefix is None or not isinstance(package, str):
        return None
    return parse_source(f"{prefix}:{package}")


async def page_consent(
    confirmations: Confirmations | None,
    progress: Progress,
    *,
    tool: str,
    url: str,
    uses: Sequence[PageUse],
    can_ask: bool,
    trust: bool,
    again: str,
    session: str | None = None,
) -> None:
    """Return when a page-derived recipe may use ``uses``: each is the repository's own,
    or ``trust`` (``--trust-page-hosts``), or a person said yes after seeing each listed
    with where the page names it. Otherwise :class:`PageNotTrusted` (nobody to ask) or
    ``UserDeclined``."""
    strangers = foreign(uses)
    if not strangers or trust:
        return
    if not can_ask or confirmations is None:
        raise refusal(tool, url, strangers, again)
    question = ConfirmationRequired(
        f"The recipe for {tool} read from {url} uses what its repository does not name "
        f"(hidden or injected text can put a host or package on a page):\n{listing(uses)}",
        question=f"Use {', '.join(u.ascii for u in strangers)} for {tool}?",
        kind="page_uses",
        page={"tool": tool, "url": url, "uses": [u.ascii for u in strangers]},
    )
    try:
        await confirmations.ask(progress, can_ask=True, session=session, question=question)
    except UserDeclined:
        raise UserDeclined(
            f"{', '.join(u.ascii for u in strangers)} not accepted: nothing was fetched, "
            "saved or installed",
            hint=f"Name the source yourself with --from, or accept them with {TRUST_FLAG}.",
        ) from None
