"""Installing a tool that has no recipe: discover its source (or take ``--from``),
write a recipe with the generator, install it.

Discovery asks the user before trusting a source found by search. A GitHub hit goes to
the release generator; an npm or PyPI hit (a clear winner, or the one the user picked)
to that registry's deterministic builder (``--from npm:<package>`` / ``pypi:<project>``
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

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.create.errors import NoBinaryAssets, from_hint
from tsukud.discover.ecosystem import BUILDER_SOURCES
from tsukud.discover.errors import (
    CreateUnavailable,
    DiscoveredElsewhere,
    DiscoveryConfirmationRequired,
    DiscoveryNotFound,
)
from tsukud.discover.model import Discovery
from tsukud.discover.normalize import BadSource, github_source, normalize_name
from tsukud.errors import ConfirmationRequired, TsukuError, UsageError, UserDeclined
from tsukud.instructions.trust import (
    TRUST_FLAG,
    PageUse,
    decode_uses,
    foreign,
    listing,
    refusal,
)
from tsukud.policy import spent
from tsukud.progress import Progress
from tsukud.registries.ecosystems import sources_hint

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.create.service import Creator
    from tsukud.discover.service import DiscoveryService
    from tsukud.install.installer import Installer
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
    install: dict[str, Any]  # the installer's result
    # owner/repo on GitHub, the package (npm:<package>, pypi:<project>), or the install
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
        source: str | None = None,
        collect_tool_stats: bool = False,
        llm: LlmChoice | None = None,
        trust_page_hosts: bool = False,
    ) -> MissingToolInstalled:
        """``trust_page_hosts``: ``--trust-page-hosts``, a recipe read from a page may
        use hosts and packages its repository does not name without a person's yes."""
        name = normalize_name(name)
        llm = llm or LlmChoice()
        found: Discovery | None = None
        if source:
            spec, repo = given_source(source)
        else:
            found = await self._discover(
                name, progress, yes, can_ask, search_provider, collect_tool_stats, llm
            )
        if found is not None and found.builder == "instructions":
            repo = found.source
            if not can_ask or self.confirmations is None:
                raise DiscoveryConfirmationRequired(
                    f"found the install page {repo} for {name} by web search; a recipe read "
                    "from a page found by search needs a person's review (--yes does not "
                    "approve it) and there is no terminal: nothing was spent or installed",
                    hint=f"Run `tsukuctl install {name}` on a terminal to review the recipe "
                    "read from it.",
                    source=repo,
                )
            if near := found.metadata.get("near_miss"):
                await progress(
                    {
                        "stage": "discovery",
                        "step": "near_miss",
                        "message": f"warning: {near}; the recipe read from {repo} is shown "
                        "for your review: check it is the tool you meant",
                    }
                )
            created, create_stats = await self._from_page(
                name,
                repo,
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
            if found is not None:
                spec, repo = _found_source(found)
            created, create_stats = await self._create(
                name,
                spec,
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
            install=result, source=repo, discovery=found, created=created, tool_stats=stats
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
        spec: str,
        progress: Progress,
        *,
        yes: bool,
        can_ask: bool,
        llm: LlmChoice,
        collect_tool_stats: bool = False,
        version: str | None = None,
        trust_page_hosts: bool = False,
    ) -> tuple[CreatedRecipe, tuple[dict[str, Any], ...]]:
        """Write the recipe from ``spec`` (``github:o/r``, ``npm:<package>``, ...),
        validated at ``version`` when one was asked for (``install tool@1.2.3``): the
        installer installs a generated recipe only at the version it validated."""
        if self.creator is None:
            raise CreateUnavailable(
                f"found {spec} for {name}, but this tsukud has no recipe generator",
                hint=f"Write a recipe by hand: $TSUKU_HOME/recipes/{name}.toml ({spec}).",
                source=spec.removeprefix("github:"),
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
            page = await self._install_page(spec)
            if self.instructions is None or page is None:
                why = "no install page to read" if page is None else "no instructions builder"
                raise NoBinaryAssets(
                    f"{exc.message} ({why})",
                    hint="Name a package source if it has one: --from "
                    f"{sources_hint(github=False)}.",
                    **exc.data,
                ) from None
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
                repo=spec.removeprefix("github:"),
                collect_tool_stats=collect_tool_stats,
                trust_page_hosts=trust_page_hosts,
            )
        return await self._accept(name, spec, res, progress, yes=yes, can_ask=can_ask)

    async def _install_page(self, spec: str) -> str | None:
        """Where a repository without release builds says how to install it: its
        homepage, when GitHub names one."""
        from tsukud.errors import TsukuError

        if not spec.startswith("github:"):
            return None
        try:
            return await self.discovery.homepage(spec.removeprefix("github:"))
        except TsukuError:  # no page is the answer: the original error stands
            return None

    async def _from_page(
        self,
        name: str,
        url: str,
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
        from tsukud.instructions.builder import InstructionsManual

        try:
            res = await self.instructions.build(
                name,
                url,
                came_from=came_from,
                progress=progress,
                confirmed=yes,
                can_ask=can_ask,
                providers=llm.providers,
                only_provider=llm.only_provider,
                repo=repo,
                collect_tool_stats=collect_tool_stats,
                refuse_strangers=not trust_page_hosts
                and (not can_ask or self.confirmations is None),
            )
        except InstructionsManual as exc:
            spec = page_package(exc.data)
            if spec is None:
                raise
            # The page names a package of a registry tsuku has a builder for; nothing is
            # fetched from that registry before the package is accepted.
            await progress(
                {
                    "stage": "discovery",
                    "step": "instructions",
                    "message": page_says(url, exc, spec),
                }
            )
            await page_consent(
                self.confirmations,
                progress,
                tool=name,
                url=url,
                uses=decode_uses(exc.data.get("uses")),
                can_ask=can_ask,
                trust=trust_page_hosts,
                again=f"tsukuctl install {name}" + (f" --from github:{repo}" if repo else ""),
            )
            return await self._create(
                name,
                spec,
                progress,
                yes=yes and not review,
                can_ask=can_ask,
                llm=llm,
                collect_tool_stats=collect_tool_stats,
            )
        strangers = foreign(decode_uses(res.preview.get("uses")))
        if strangers and not trust_page_hosts:
            if not can_ask or self.confirmations is None:
                raise refusal(name, url, strangers, f"tsukuctl install {name} without --yes")
            review = True  # the review lists them: the person's [i] accepts them
        return await self._accept(name, url, res, progress, yes=yes and not review, can_ask=can_ask)

    async def _accept(
        self,
        name: str,
        spec: str,
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
        self, name: str, spec: str, res: CreateResult, progress: Progress, *, can_ask: bool
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
            if spec.startswith(("http://", "https://"))
            else f"tsukuctl create {name} --from {spec}"
        )
        if not can_ask or self.confirmations is None:
            raise ConfirmationRequired(
                f"{what} must be reviewed before it is installed, and there is no terminal "
                "to show it: nothing was saved or installed",
                hint=f"Run it again with --yes to install it unseen, or review it with: {again}",
                kind="recipe",
                source=spec.removeprefix("github:"),
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
                shown={"create": msgspec.to_builtins(res), "source": spec},
            )
        except UserDeclined:
            raise UserDeclined(
                f"the recipe for {name} was not accepted: nothing was saved or installed",
                hint=f"`{again}` writes and shows it again without installing it.",
            ) from None


def given_source(source: str) -> tuple[str, str]:
    """``--from``: (the create source, what the result reports as the source)."""
    from tsukud.create.ecosystem_builders import parse_ecosystem_source
    from tsukud.create.homebrew_builder import formula_name
    from tsukud.errors import TsukuError

    try:
        eco = parse_ecosystem_source(source)
        formula = formula_name(source)
    except TsukuError as exc:
        raise UsageError(f"--from {source!r}: {exc.message}", hint=from_hint()) from None
    if eco is not None:
        return str(eco), str(eco)
    if formula is not None:
        return f"homebrew:{formula}", f"homebrew:{formula}"
    try:
        repo = github_source(source)
    except BadSource as exc:
        raise UsageError(f"--from {source!r}: {exc}", hint=from_hint()) from None
    return f"github:{repo}", repo


# An install page's ``npm install -g`` / ``pipx install`` / ``cargo install`` / ``go
# install``: the registry builder it goes to.
PAGE_ECOSYSTEMS = {"npm": "npm", "pipx": "pypi", "cargo": "crates", "go": "go"}


def page_says(url: str, manual: TsukuError, spec: str) -> str:
    return (
        f"the install page {url} says `{manual.data['install_command']}`: writing the "
        f"recipe from {spec}"
    )


def page_package(data: dict[str, Any]) -> str | None:
    """``npm:<package>`` / ``pypi:<project>`` / ``crates:<crate>`` / ``go:<path>`` for an
    install page whose instructions are one of those registries' packages; None for
    anything else (shown, not run)."""
    prefix = PAGE_ECOSYSTEMS.get(str(data.get("manager")))
    package = data.get("package")
    if data.get("kind") != "ecosystem" or prefix is None or not isinstance(package, str):
        return None
    return f"{prefix}:{package}"


def _found_source(found: Discovery) -> tuple[str, str]:
    if found.builder == "github":
        return f"github:{found.source}", found.source
    spec = f"{BUILDER_SOURCES[found.builder]}:{found.source}"
    return spec, spec


def with_command_cost(result: CreateResult) -> CreateResult:
    """``result`` with what its request's runs have settled so far (every paid call of
    the command: discovery, an install page's reading, the generation itself)."""
    command = spent.current()
    if command is not None and result.cost_usd is not None:
        result.command_cost_usd = float(command.usd)
    return result


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
