"""Installing a tool that has no recipe: discover its source (or take ``--from``),
write a recipe with the generator, install it.

Discovery asks the user before trusting a source found by search. A GitHub hit goes to
the release generator; an ecosystem package hit (a clear winner, or the one the user picked)
to that registry's deterministic builder (``--from <prefix>:<package>``
too); a package of an ecosystem without a builder is not installed: the error's hint
is that ecosystem's own command. The recipe the generator writes is shown and
accepted exactly as ``tsukuctl create`` shows it (the whole result goes to the client,
which renders the same preview and ``[v]iew/[i]nstall/[c]ancel``) before it is saved
to ``$TSUKU_HOME/recipes`` and installed; ``--yes`` is that acceptance, and without a
terminal or ``--yes`` nothing is saved (``confirmation_required``, exit 12, naming
``--yes``).

An install page (discovery's ``instructions`` result, or the homepage of a repository
whose releases carry no build) goes to the instructions builder; a recipe read from a
page found by web search is always shown to a person (``--yes`` does not approve it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.create.errors import NoBinaryAssets
from tsukud.create.preview import page_uses
from tsukud.discover.ecosystem import BUILDER_SOURCES
from tsukud.discover.errors import (
    CreateUnavailable,
    DiscoveredElsewhere,
    DiscoveryConfirmationRequired,
    DiscoveryNotFound,
)
from tsukud.discover.model import Discovery
from tsukud.discover.normalize import normalize_name
from tsukud.errors import ConfirmationRequired, UsageError, UserDeclined
from tsukud.flows.no_build import NoBuildFallback, PagePackage, page_consent
from tsukud.instructions.trust import (
    decode_uses,
    foreign,
    refusal,
)
from tsukud.policy import spent
from tsukud.progress import Progress
from tsukud.source import (
    FromSource,
    Page,
    Source,
    from_hint,
    parse_github,
    parse_source,
    shown,
)

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.create.service import Creator
    from tsukud.discover.service import DiscoveryService
    from tsukud.install.installer import Installer
    from tsukud.install.results import Installed
    from tsukud.instructions.service import InstructionsBuilder
    from tsukud.policy.confirm import Confirmations


class CreatedRecipe(msgspec.Struct, frozen=True, kw_only=True):
    """The recipe the generator wrote on the way to the install."""

    recipe: str | None  # where it was written
    session: str
    generated_by: str
    validation: str  # the container validation's status
    cost_usd: float | None  # None: some LLM turn had no known price


class LlmChoice(msgspec.Struct, frozen=True, kw_only=True):
    """Which LLM providers the user asked for (``--provider``, ``--only-provider``):
    the same for discovery, create and the instructions builder of one install."""

    providers: str | None = None
    only_provider: bool | None = None


class MissingToolInstalled(msgspec.Struct, frozen=True, kw_only=True):
    install: Installed  # the installer's result
    # owner/repo on GitHub, the package (<prefix>:<package>), or the install
    # page the recipe was read from
    source: str
    discovery: Discovery | None  # None when the source was given (--from)
    created: CreatedRecipe
    tool_stats: tuple[dict[str, Any], ...] | None = None  # discovery's, then create's


class InstallMissing:
    def __init__(
        self,
        *,
        discovery: DiscoveryService,
        creator: Creator | None,
        installer: Installer,
        confirmations: Confirmations | None = None,
        instructions: InstructionsBuilder | None = None,
    ) -> None:
        self.discovery = discovery
        self.instructions = instructions  # None: install pages are not read
        self.creator = creator  # None: this daemon has no recipe generator
        self.installer = installer
        self.confirmations = confirmations  # None: no one can be asked (only --yes)
        self.fallback = NoBuildFallback(
            homepage=lambda repo: self.discovery.homepage(repo), instructions=instructions
        )

    async def run(
        self,
        name: str,
        version: str | None,
        *,
        progress: Progress,
        force: bool = False,
        yes: bool = False,
        can_ask: bool = False,
        search_provider: str | None = None,
        source: FromSource | None = None,
        collect_tool_stats: bool = False,
        llm: LlmChoice | None = None,
        trust_page_hosts: bool = False,
    ) -> MissingToolInstalled:
        """``trust_page_hosts``: ``--trust-page-hosts``, a recipe read from a page may
        use hosts and packages its repository does not name without a person's yes."""
        name = normalize_name(name)
        llm = llm or LlmChoice()
        found: Discovery | None = None
        chosen: Source
        if source is None:
            found = await self._discover(
                name, progress, yes, can_ask, search_provider, collect_tool_stats, llm
            )
            chosen = _found_source(found)
        else:
            chosen = source
        if isinstance(chosen, Page):
            assert found is not None  # a page is found, never named
            url = chosen.url
            if not can_ask or self.confirmations is None:
                raise DiscoveryConfirmationRequired(
                    f"found the install page {url} for {name} by web search; a recipe read "
                    "from a page found by search needs a person's review (--yes does not "
                    "approve it) and there is no terminal: nothing was spent or installed",
                    hint=f"Run `tsukuctl install {name}` on a terminal to review the recipe "
                    "read from it.",
                    source=url,
                )
            if near := found.metadata.get("near_miss"):
                await progress(
                    {
                        "stage": "discovery",
                        "step": "near_miss",
                        "message": f"warning: {near}; the recipe read from {url} is shown "
                        "for your review: check it is the tool you meant",
                    }
                )
            created, create_stats = await self._from_page(
                name,
                chosen,
                "discovery",
                progress,
                yes=yes,
                can_ask=can_ask,
                llm=llm,
                review=True,
                collect_tool_stats=collect_tool_stats,
                trust_page_hosts=trust_page_hosts,
            )
        else:
            created, create_stats = await self._create(
                name,
                chosen,
                progress,
                yes=yes,
                can_ask=can_ask,
                llm=llm,
                collect_tool_stats=collect_tool_stats,
                version=version,
                trust_page_hosts=trust_page_hosts,
            )
        result = await self.installer.install(
            name, version, force=force, progress=progress, can_ask=can_ask, yes=yes
        )
        stats = None
        if collect_tool_stats:
            stats = (*((found.tool_stats or ()) if found else ()), *create_stats)
        return MissingToolInstalled(
            install=result, source=shown(chosen), discovery=found, created=created, tool_stats=stats
        )

    async def _discover(
        self,
        name: str,
        progress: Progress,
        yes: bool,
        can_ask: bool,
        search_provider: str | None,
        collect_tool_stats: bool = False,
        llm: LlmChoice | None = None,
    ) -> Discovery:
        llm = llm or LlmChoice()
        try:
            found = await self.discovery.discover(
                name,
                progress=progress,
                yes=yes,
                can_ask=can_ask,
                confirm=True,
                check_recipes=False,  # install has just looked
                search_provider=search_provider,
                providers=llm.providers,
                only_provider=llm.only_provider,
                collect_tool_stats=collect_tool_stats,
            )
        except DiscoveryNotFound as exc:
            raise DiscoveryNotFound(
                f"no recipe for {name}, and discovery found no source: {exc.message}",
                hint=exc.hint,
                **exc.data,
            ) from None
        if found.builder not in ("github", "instructions", *BUILDER_SOURCES):
            command = found.install_command
            raise DiscoveredElsewhere(
                f"{name} has no tsuku recipe; it is a {found.builder} package ({found.source})",
                hint=f"Install it with: {command}"
                if command
                else f"Install it with {found.builder}.",
                builder=found.builder,
                source=found.source,
                install_command=command,
                discovery=msgspec.to_builtins(found),
            )
        return found

    async def _create(
        self,
        name: str,
        spec: FromSource,
        progress: Progress,
        *,
        yes: bool,
        can_ask: bool,
        llm: LlmChoice,
        collect_tool_stats: bool = False,
        version: str | None = None,
        trust_page_hosts: bool = False,
    ) -> tuple[CreatedRecipe, tuple[dict[str, Any], ...]]:
        """Write the recipe from ``spec`` (``github:o/r``, ``<prefix>:<package>``, ...),
        validated at ``version`` when one was asked for (``install tool@1.2.3``): the
        installer installs a generated recipe only at the version it validated."""
        if self.creator is None:
            raise CreateUnavailable(
                f"found {spec} for {name}, but this tsukud has no recipe generator",
                hint=f"Write a recipe by hand: $TSUKU_HOME/recipes/{name}.toml ({spec}).",
                source=shown(spec),
            )
        await progress(
            {
                "stage": "discovery",
                "step": "create",
                "message": f"writing a recipe for {name} from {spec}",
            }
        )
        try:
            res = await self.creator.create(
                name,
                spec,
                progress=progress,
                confirmed=yes,
                can_ask=can_ask,
                providers=llm.providers,
                only_provider=llm.only_provider,
                collect_tool_stats=collect_tool_stats,
                version=version,
            )
        except NoBinaryAssets as exc:
            page = await self.fallback.install_page(spec, exc)
            await progress(
                {
                    "stage": "discovery",
                    "step": "instructions",
                    "message": f"{spec} has no release build ({exc.message}); "
                    f"reading its install page {page}",
                }
            )
            return await self._from_page(
                name,
                page,
                "no_binary_assets",
                progress,
                yes=yes,
                can_ask=can_ask,
                llm=llm,
                repo=shown(spec),
                collect_tool_stats=collect_tool_stats,
                trust_page_hosts=trust_page_hosts,
            )
        return await self._accept(name, spec, res, progress, yes=yes, can_ask=can_ask)

    async def _from_page(
        self,
        name: str,
        page: Page,
        came_from: str,
        progress: Progress,
        *,
        yes: bool,
        can_ask: bool,
        llm: LlmChoice,
        review: bool = False,
        repo: str | None = None,
        collect_tool_stats: bool = False,
        trust_page_hosts: bool = False,
    ) -> tuple[CreatedRecipe, tuple[dict[str, Any], ...]]:
        """A recipe read from an install page by the instructions builder, then
        accepted and saved exactly as a generated one. ``review``: a person must see it
        even with ``--yes`` (a page found by web search has nothing like a repository's
        verification to stand on); ``--yes`` still answers the money questions. A host
        or package the repository does not name (instructions/trust.py) is never
        accepted by ``--yes`` alone: the person sees it listed (the recipe's review, or
        a question before a page's package is fetched), or ``--trust-page-hosts``
        accepts it; with neither, :class:`PageNotTrusted`."""
        url = page.url
        if self.instructions is None or self.creator is None:
            raise CreateUnavailable(
                f"found the install page {url} for {name}, but this tsukud does not read "
                "install pages",
                hint=f"Read {url} and install {name} by hand.",
                source=url,
            )
        await progress(
            {
                "stage": "discovery",
                "step": "instructions",
                "message": f"reading the install page {url} for {name} ({came_from})",
            }
        )

        async def say(message: str) -> None:
            await progress({"stage": "discovery", "step": "instructions", "message": message})

        async def consent(uses: object) -> None:
            await page_consent(
                self.confirmations,
                progress,
                tool=name,
                url=url,
                uses=decode_uses(uses),
                can_ask=can_ask,
                trust=trust_page_hosts,
                again=f"tsukuctl install {name}" + (f" --from github:{repo}" if repo else ""),
            )

        outcome = await self.fallback.read(
            name,
            page,
            came_from=came_from,
            progress=progress,
            say=say,
            consent=consent,
            confirmed=yes,
            can_ask=can_ask,
            providers=llm.providers,
            only_provider=llm.only_provider,
            repo=repo,
            collect_tool_stats=collect_tool_stats,
            refuse_strangers=not trust_page_hosts and (not can_ask or self.confirmations is None),
        )
        if isinstance(outcome, PagePackage):
            return await self._create(
                name,
                outcome.source,
                progress,
                yes=yes and not review,
                can_ask=can_ask,
                llm=llm,
                collect_tool_stats=collect_tool_stats,
            )
        res = outcome.result
        strangers = foreign(decode_uses(page_uses(res.preview)))
        if strangers and not trust_page_hosts:
            if not can_ask or self.confirmations is None:
                raise refusal(name, url, strangers, f"tsukuctl install {name} without --yes")
            review = True  # the review lists them: the person's [i] accepts them
        return await self._accept(
            name, page, res, progress, yes=yes and not review, can_ask=can_ask
        )

    async def _accept(
        self,
        name: str,
        spec: Source,
        res: CreateResult,
        progress: Progress,
        *,
        yes: bool,
        can_ask: bool,
    ) -> tuple[CreatedRecipe, tuple[dict[str, Any], ...]]:
        """The recipe shown and accepted (unless ``yes``), saved, reported."""
        assert self.creator is not None
        if not yes:
            await self._review(name, spec, with_command_cost(res), progress, can_ask=can_ask)
        saved = await self.creator.save(name, res.recipe, session=res.session)
        status = res.validation.status
        await progress(
            {
                "stage": "discovery",
                "step": "created",
                "message": f"recipe written to {saved.path} (generated by "
                f"{res.generated_by}; validation {status})",
            }
        )
        created = CreatedRecipe(
            recipe=saved.path,
            session=res.session,
            generated_by=res.generated_by,
            validation=status,
            cost_usd=res.cost_usd,
        )
        return created, tuple(msgspec.to_builtins(s) for s in res.tool_stats or ())

    async def _review(
        self, name: str, spec: Source, res: CreateResult, progress: Progress, *, can_ask: bool
    ) -> None:
        """A person sees the recipe and accepts it, as ``tsukuctl create`` asks, before
        anything is saved or installed."""
        from tsukud.create.service import recipe_sha256

        what = (
            f"the recipe for {name} from {spec} (generated by {res.generated_by}; "
            f"validation {res.validation.status})"
        )
        # An install page has no --from: install shows the recipe again.
        again = (
            f"tsukuctl install {name}"
            if isinstance(spec, Page)
            else f"tsukuctl create {name} --from {spec}"
        )
        if not can_ask or self.confirmations is None:
            raise ConfirmationRequired(
                f"{what} must be reviewed before it is installed, and there is no terminal "
                "to show it: nothing was saved or installed",
                hint=f"Run it again with --yes to install it unseen, or review it with: {again}",
                kind="recipe",
                source=shown(spec),
            )
        question = ConfirmationRequired(
            f"Review {what}",
            question=f"Install {name} with this recipe?",
            kind="recipe",
            recipe={
                "tool": name,
                "sha256": recipe_sha256(res.recipe),
                "generated_by": res.generated_by,
            },
        )
        try:
            await self.confirmations.ask(
                progress,
                can_ask=True,
                session=res.session,
                question=question,
                shown={"create": msgspec.to_builtins(res), "source": str(spec)},
            )
        except UserDeclined:
            raise UserDeclined(
                f"the recipe for {name} was not accepted: nothing was saved or installed",
                hint=f"`{again}` writes and shows it again without installing it.",
            ) from None


def given_source(text: str) -> FromSource:
    """``--from``: the source, or a usage error naming what is wrong with it (a
    malformed ``--from`` is the person's typo whatever follows)."""
    from tsukud.source import BadSource

    try:
        return parse_source(text)
    except BadSource as exc:
        raise UsageError(f"--from {text!r}: {exc.message}", hint=from_hint()) from None


def _found_source(found: Discovery) -> Source:
    """What discovery found, as the source it is (checked by its rules again: a
    discovery read from the ledger's cache is text like any other)."""
    if found.builder == "github":
        return parse_github(found.source)
    if found.builder == "instructions":
        return Page(found.source)
    return parse_source(f"{BUILDER_SOURCES[found.builder]}:{found.source}")


def with_command_cost(result: CreateResult) -> CreateResult:
    """``result`` with what its request's runs have settled so far (every paid call of
    the command: discovery, an install page's reading, the generation itself)."""
    command = spent.current()
    if command is not None and result.cost_usd is not None:
        result.command_cost_usd = float(command.usd)
    return result
