"""Installing a tool that has no recipe: discover its source (or take ``--from``),
write a recipe with the generator, install it.

Discovery asks the user before trusting a source found by search. An ecosystem package
(npm, PyPI, ...) is not installed: the error's hint is that ecosystem's own command. The
recipe is written to ``$TSUKU_HOME/recipes`` like ``tsukuctl create --yes`` would.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.discover.errors import CreateUnavailable, DiscoveredElsewhere, DiscoveryNotFound
from tsukud.discover.model import Discovery
from tsukud.discover.normalize import BadSource, github_source, normalize_name
from tsukud.errors import UsageError

if TYPE_CHECKING:
    from tsukud.create.service import Creator
    from tsukud.discover.service import DiscoveryService
    from tsukud.install.installer import Installer

Progress = Callable[[dict[str, Any]], Awaitable[None]]


class CreatedRecipe(msgspec.Struct, frozen=True, kw_only=True):
    """The recipe the generator wrote on the way to the install."""

    recipe: str | None  # where it was written
    session: str
    generated_by: str
    validation: str  # the container validation's status
    cost_usd: float | None  # None: some LLM turn had no known price


class MissingToolInstalled(msgspec.Struct, frozen=True, kw_only=True):
    install: dict[str, Any]  # the installer's result
    source: str  # owner/repo on GitHub
    discovery: Discovery | None  # None when the source was given (--from)
    created: CreatedRecipe


class InstallMissing:
    def __init__(
        self,
        *,
        discovery: DiscoveryService,
        creator: Creator | None,
        installer: Installer,
    ) -> None:
        self.discovery = discovery
        self.creator = creator  # None: this daemon has no recipe generator
        self.installer = installer

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
    ) -> MissingToolInstalled:
        name = normalize_name(name)
        found: Discovery | None = None
        if source:
            try:
                repo = github_source(source)
            except BadSource as exc:
                raise UsageError(
                    f"--from {source!r}: {exc}", hint="Name the source as --from github:owner/repo."
                ) from None
        else:
            found = await self._discover(name, progress, yes, can_ask, search_provider)
            repo = found.source
        created = await self._create(name, repo, progress, yes=yes, can_ask=can_ask)
        result = await self.installer.install(name, version, force=force, progress=progress)
        return MissingToolInstalled(install=result, source=repo, discovery=found, created=created)

    async def _discover(
        self, name: str, progress: Progress, yes: bool, can_ask: bool, search_provider: str | None
    ) -> Discovery:
        try:
            found = await self.discovery.discover(
                name,
                progress=progress,
                yes=yes,
                can_ask=can_ask,
                confirm=True,
                check_recipes=False,  # install has just looked
                search_provider=search_provider,
            )
        except DiscoveryNotFound as exc:
            raise DiscoveryNotFound(
                f"no recipe for {name}, and discovery found no source: {exc.message}",
                hint=exc.hint,
                **exc.data,
            ) from None
        if found.builder != "github":
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
        self, name: str, repo: str, progress: Progress, *, yes: bool, can_ask: bool
    ) -> CreatedRecipe:
        if self.creator is None:
            raise CreateUnavailable(
                f"found github:{repo} for {name}, but this tsukud has no recipe generator",
                hint=f"Write a recipe by hand: $TSUKU_HOME/recipes/{name}.toml (github:{repo}).",
                source=repo,
            )
        await progress(
            {
                "stage": "discovery",
                "step": "create",
                "message": f"writing a recipe for {name} from github:{repo}",
            }
        )
        res = await self.creator.create(
            name, f"github:{repo}", progress=progress, write=True, confirmed=yes, can_ask=can_ask
        )
        status = res.validation.status
        await progress(
            {
                "stage": "discovery",
                "step": "created",
                "message": f"recipe written to {res.written} (generated by "
                f"{res.generated_by}; validation {status})",
            }
        )
        return CreatedRecipe(
            recipe=res.written,
            session=res.session,
            generated_by=res.generated_by,
            validation=status,
            cost_usd=res.cost_usd,
        )
