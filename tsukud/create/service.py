"""Writing recipes inside the daemon: the create pipeline with the daemon's real parts.

:meth:`Creator.create` runs ``tsukud.create.pipeline`` with the GitHub client and HTTP
layer, the LLM service (admission, budget, confirmation, breakers, priced ``llm.turn``
events), the container validator and the ledger. It writes the recipe only when asked;
otherwise the client shows the preview and calls :meth:`Creator.save` if the user
accepts. The "already exists" check runs before anything that costs money, and a saved
recipe is checked again, so what lands in ``recipes/`` is always something the
installer accepts.

The pipeline (and through it httpx2) is imported on first use.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio

from tsukud.create.errors import CreateError, RecipeExists
from tsukud.create.preview import PlatformDownloads, Preview
from tsukud.errors import TsukuError, UsageError
from tsukud.events.catalogue import as_payload
from tsukud.progress import Progress

if TYPE_CHECKING:
    from tsukud.clock import Clock
    from tsukud.config import Config
    from tsukud.create.pipeline import CreateResult
    from tsukud.events.store import EventStore
    from tsukud.github.client import GitHub
    from tsukud.install.registry import Registry
    from tsukud.llm.service import LLM
    from tsukud.net.http import Http
    from tsukud.policy.confirm import Confirmations
    from tsukud.recipe import Recipe
    from tsukud.sandbox.service import Sandbox
    from tsukud.source import EcosystemPackage, FromSource
    from tsukud.validation.validator import Validator


class SavedRecipe(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    path: str
    sha256: str


def new_session() -> str:
    return "create-" + secrets.token_hex(6)


def recipe_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def checked_recipe_text(tool: str, text: str) -> None:
    """Refuse a recipe text that is not a valid recipe for ``tool`` on paper."""
    from tsukud.create.static_checks import check_on_paper
    from tsukud.recipe import RecipeError, parse_recipe
    from tsukud.validation.findings import errors, format_findings

    try:
        recipe = parse_recipe(text, f"{tool}.toml")
    except RecipeError as exc:
        raise CreateError(f"not a valid recipe: {exc.message}") from None
    if recipe.metadata.name != tool:
        raise CreateError(f"the recipe is for {recipe.metadata.name!r}, not {tool!r}")
    found = errors(check_on_paper(recipe))
    if found:
        raise CreateError(
            "the recipe fails the static checks:\n" + format_findings(found), stage="static_checks"
        )


def refuse_guarded(recipe: Recipe, source: str) -> None:
    """A package whose executables include ``sudo``, ``ssh``, ``gpg`` … (and is not that
    command's own) is refused before anything is fetched or validated: the install
    would refuse it too (``install/shadowing.py``)."""
    from tsukud.create.static_checks import guarded_findings
    from tsukud.validation.findings import format_findings

    found = guarded_findings(recipe)
    if found:
        raise CreateError(
            f"{source} would install commands only their own recipes may install:\n"
            + format_findings(found),
            hint="A package that ships sudo, ssh, gpg or the like under another name is "
            "not installed as a tool; nothing was written.",
        )


async def offer_image(
    sandbox: Sandbox,
    confirmations: Confirmations,
    progress: Progress,
    *,
    can_ask: bool,
    session: str,
) -> None:
    """The first validation on a machine without the image: offer to build it now.

    Only a person at a terminal is asked; without one, or when the answer is no,
    nothing happens here and validation meets the missing image as it would anyway
    (its error names ``tsukuctl sandbox prepare``). No runtime: nothing to offer.
    """
    from tsukud.errors import ConfirmationRequired, SandboxError, UserDeclined

    if not can_ask:
        return
    try:
        rt = await sandbox.runtime()
        if await rt.image_exists(sandbox.image):
            return
    except SandboxError:
        return
    question = ConfirmationRequired(
        f"the validation image {sandbox.image} is not built yet; build it now "
        "(debootstrap --variant=minbase from Debian's packages, about 2 minutes)? "
        "Without it the recipe cannot be validated.",
        kind="sandbox_image",
        option={"image": sandbox.image},
    )
    try:
        await confirmations.ask(progress, can_ask=True, session=session, question=question)
    except UserDeclined:
        return

    async def say(message: str) -> None:
        await progress({"stage": "preparing", "message": message})

    await sandbox.prepare(progress=say)


def checked_repairs(max_repairs: int) -> int:
    """``--repairs`` as the pipeline takes it: 0, 1 or 2 (more would exceed the turns
    and money a run reserves for)."""
    from tsukud.create.pipeline import MAX_REPAIRS

    if not 0 <= max_repairs <= MAX_REPAIRS:
        raise UsageError(f"repairs must be 0 to {MAX_REPAIRS}, got {max_repairs}")
    return max_repairs


def refuse_existing(path: Path, force: bool) -> None:
    if not force and (path.exists() or path.is_symlink()):
        raise RecipeExists(f"a recipe already exists at {path}", path=str(path))


class Creator:
    def __init__(
        self,
        *,
        home: Path,
        config: Callable[[], Config],
        store: EventStore,
        clock: Clock,
        github: Callable[[], GitHub],
        http: Callable[[], Http],
        llm: Callable[[], LLM],
        validator: Callable[[], Validator],
        sandbox: Callable[[], Sandbox] | None = None,
        confirmations: Confirmations | None = None,
        env: Mapping[str, str] | None = None,
        recipes: Callable[[], Registry] | None = None,
    ) -> None:
        # Getters: a deterministic run never builds the LLM service, a run that skips
        # validation never opens the container runtime.
        self.home = home
        self._config = config
        self.store = store
        self.clock = clock
        self._github = github
        self._http = http
        self._llm = llm
        self._validator = validator
        self._sandbox = sandbox
        self._confirmations = confirmations
        # What an ecosystem package manager and a verify command see of the daemon's
        # environment (PATH, HOME, locale: install.checks.verify_env).
        self.env = dict(env or {})
        # Where a homebrew recipe's runtime dependencies are read from (local recipes,
        # then the registry), as the installer reads them.
        self._recipes = recipes

    def target(self, tool: str, output: str | None) -> Path:
        """Where a recipe for ``tool`` goes: ``output`` (absolute) or ``recipes/``."""
        if output is None:
            return self.home / "recipes" / f"{tool}.toml"
        path = Path(output)
        if not path.is_absolute():
            raise UsageError(f"--output must be an absolute path (got {output!r})")
        return path

    async def create(
        self,
        tool: str,
        source: FromSource,
        *,
        progress: Progress,
        session: str | None = None,
        **options: Any,
    ) -> CreateResult:
        """:meth:`_create` in a session of its own (or the caller's), named by any error
        it ends with, so the hint is the exact `tsukuctl events --session` to run."""
        session = session or new_session()
        try:
            return await self._create(tool, source, progress=progress, session=session, **options)
        except TsukuError as exc:
            exc.in_session(session)
            raise

    async def _create(
        self,
        tool: str,
        source: FromSource,
        *,
        progress: Progress,
        output: str | None = None,
        write: bool = False,
        force: bool = False,
        check_target: bool = True,
        deterministic_only: bool = False,
        force_llm: bool = False,
        skip_validation: bool = False,
        providers: str | None = None,
        only_provider: bool | None = None,
        confirmed: bool = False,
        can_ask: bool = False,
        collect_tool_stats: bool = False,
        version: str | None = None,
        session: str | None = None,
        max_repairs: int = 2,
    ) -> CreateResult:
        """Write a recipe for ``tool`` from ``source`` (a repository's releases, a
        registry's package or a Homebrew formula; ``written`` set when ``write``).
        ``session``: the ledger session its events go in (a batch job names its own, so
        ``events summary --by session`` shows each job's cost); a fresh one otherwise.
        ``max_repairs``: the model's repairs after a failed check or validation
        (``--repairs``; 0 measures what repair is worth)."""
        from tsukud.create.pipeline import CreateRequest, Deps, run_create
        from tsukud.install.registry import check_name
        from tsukud.source import EcosystemPackage, HomebrewFormula

        tool = check_name(tool)
        if isinstance(source, HomebrewFormula):  # no model
            target = self.target(tool, output)
            if check_target or write:
                refuse_existing(target, force)
            session = session or new_session()
            if (
                not skip_validation
                and self._sandbox is not None
                and self._confirmations is not None
            ):
                await offer_image(
                    self._sandbox(), self._confirmations, progress, can_ask=can_ask, session=session
                )
            result = await self._from_homebrew(
                tool,
                source.formula,
                session,
                version,
                progress=progress,
                skip_validation=skip_validation,
            )
            if write:
                self._write(result, target, force, session)
            return result
        if isinstance(source, EcosystemPackage):
            return await self._create_from_registry(
                tool,
                source,
                progress=progress,
                output=output,
                write=write,
                force=force,
                check_target=check_target,
                skip_validation=skip_validation,
                version=version,
                session=session,
            )
        repo = source.slug
        target = self.target(tool, output)
        if check_target or write:
            refuse_existing(target, force)  # before anything that costs money
        session = session or new_session()
        store = self.store

        async def emit(type_: str, payload: dict[str, Any]) -> None:
            ev = store.append_nowait(type_, payload, session)
            if type_.startswith("generation."):
                await store.wait_durable(ev.id)

        if not skip_validation and self._sandbox is not None and self._confirmations is not None:
            await offer_image(
                self._sandbox(), self._confirmations, progress, can_ask=can_ask, session=session
            )
        config = self._config()
        llm = None if deterministic_only else self._llm()
        deps = Deps(
            github=self._github(),
            http=self._http(),
            github_url=str(config["github.url"]),
            emit=emit,
            progress=progress,
            open_llm=llm.run if llm is not None else None,
            validator=None if skip_validation else self._validator(),
            secrets=tuple(config.secret_values()),
            clock=self.clock,
        )
        req = CreateRequest(
            tool=tool,
            repo=repo,
            deterministic_only=deterministic_only,
            force_llm=force_llm,
            skip_validation=skip_validation,
            providers=providers,
            only_provider=only_provider,
            confirmed=confirmed,
            can_ask=can_ask,
            collect_tool_stats=collect_tool_stats,
            version=version,
            max_repairs=checked_repairs(max_repairs),
        )
        result = await run_create(req, deps, session=session)
        if write:
            self._write(result, target, force, session)
        return result

    def _write(self, result: CreateResult, target: Path, force: bool, session: str) -> None:
        from tsukud.fsutil import write_atomic

        refuse_existing(target, force)
        write_atomic(target, result.recipe)
        result.written = str(target)
        self.store.append_nowait(
            "recipe.written",
            {"tool": result.tool, "path": str(target), "sha256": recipe_sha256(result.recipe)},
            session,
        )

    async def _from_homebrew(
        self,
        tool: str,
        formula: str,
        session: str,
        version: str | None,
        *,
        progress: Progress,
        skip_validation: bool,
    ) -> CreateResult:
        """``--from homebrew:<formula>``: ``create/homebrew_builder.py``, validated by
        ``validation/bottles.py``."""
        from tsukud.create.homebrew_builder import build_from_homebrew
        from tsukud.install.homebrew.client import HomebrewClient
        from tsukud.recipe import host_platform
        from tsukud.secrets import redact
        from tsukud.validation.bottles import BottleValidation

        config = self._config()
        client = HomebrewClient(
            self._http(),
            api_url=lambda: str(config["homebrew.api_url"]),
            registry_url=lambda: str(config["homebrew.registry_url"]),
        )
        store = self.store

        async def emit(type_: str, payload: dict[str, Any]) -> None:
            ev = store.append_nowait(type_, payload, session)
            if type_.startswith("generation."):
                await store.wait_durable(ev.id)

        async def load(name: str) -> Recipe:
            if self._recipes is None:
                raise CreateError("no recipe registry is configured for runtime dependencies")
            return (await self._recipes().load(name)).recipe

        known = tuple(config.secret_values())
        validate = BottleValidation(
            validator=self._validator,
            client=client,
            load=load,
            emit=emit,
            progress=progress,
            session=session,
            clean=lambda text: redact(text, known),
            skip=skip_validation,
        )
        return await build_from_homebrew(
            tool,
            formula,
            client,
            host_platform(),
            emit=emit,
            session=session,
            check=checked_recipe_text,
            validate=validate,
            skip_validation=skip_validation,
            version=version,
        )

    async def _create_from_registry(
        self,
        tool: str,
        source: EcosystemPackage,
        *,
        progress: Progress,
        output: str | None,
        write: bool,
        force: bool,
        check_target: bool,
        skip_validation: bool,
        version: str | None,
        session: str | None = None,
    ) -> CreateResult:
        """``--from <prefix>:<package>`` (an ecosystem's): the recipe from the registry's
        metadata (no model, $0), fetched on the host with its scripts off and built and
        verified in the validation container (``validation/ecosystem.py``)."""
        from tsukud.create.ecosystem_builders import DRAFTERS
        from tsukud.create.pipeline import CreateResult, builder_completed, failed_event
        from tsukud.install.ecosystem.actions import index_key, registry_urls
        from tsukud.install.ecosystem.prefix import proxy_env
        from tsukud.recipe import host_platform
        from tsukud.validation.ecosystem import validate_in_container
        from tsukud.validation.errors import ValidationFailed
        from tsukud.validation.summary import ValidationSummary

        target = self.target(tool, output)
        if check_target or write:
            refuse_existing(target, force)
        session = session or new_session()
        store = self.store
        started = time.monotonic()
        config = self._config()
        urls = registry_urls(lambda key: str(config[key] or ""))
        base = urls[source.record.version_source]
        store.append_nowait(
            "create.started",
            {
                "tool": tool,
                "repo": str(source),
                "deterministic_only": True,
                "llm": False,
                "skip_validation": skip_validation,
            },
            session,
        )
        await progress({"stage": "context", "message": f"reading {source} from {base}"})

        async def failed(stage: str, exc: BaseException) -> None:
            # Whatever ended the run, Ctrl-C included, is its last event, as for a
            # model's run (shielded: a cancelled run still records why it ended).
            payload = as_payload(
                failed_event(tool, str(source), exc, stage=stage, repairs=0, spent=0.0)
            )
            with trio.CancelScope(shield=True):
                ev = store.append_nowait("generation.failed", payload, session)
                await store.wait_durable(ev.id)

        try:
            draft = await DRAFTERS[source.ecosystem](
                self._http(), base, tool, source.package, version
            )
            refuse_guarded(draft.recipe, str(source))
        except BaseException as exc:
            await failed("context", exc)
            raise
        generated_by = f"{source.ecosystem} builder"
        if skip_validation:
            summary = ValidationSummary(
                status="skipped", platform=str(host_platform().key), message="--skip-validation"
            )
            store.append_nowait("validation.skipped", {"reason": "--skip-validation"}, session)
        else:
            await progress(
                {
                    "stage": "validating",
                    "message": f"fetching {source}@{draft.tag} with its scripts off; its "
                    "install and verify run in a container",
                }
            )
            validator = self._validator()
            store.append_nowait(
                "validation.started",
                {"attempt": 1, "platform": str(host_platform().key), "image": validator.image},
                session,
            )
            validating = time.monotonic()
            try:
                summary = await validate_in_container(
                    draft.recipe,
                    draft.step,
                    version=draft.version,
                    tag=draft.tag,
                    validator=validator,
                    http=self._http(),
                    session=session,
                    registry_url=base,
                    index_url=urls.get(index_key(source.record.version_source), ""),
                    env=self.env,
                    proxies=proxy_env(lambda key: str(config[key] or "")),
                )
            except BaseException as exc:
                await failed("validation", exc)
                raise
            took = round((time.monotonic() - validating) * 1000)
            store.append_nowait(
                f"validation.{summary.status}",
                {
                    "attempt": 1,
                    "status": summary.status,
                    "stage": summary.stage or "verify",
                    "platform": summary.platform,
                    "image": validator.image,
                    "duration_ms": took,
                    "command": summary.command,
                    "message": summary.message,
                },
                session,
            )
            if summary.status != "passed":
                refused = ValidationFailed(
                    f"the {source} recipe did not validate: {summary.message}",
                    hint=summary.hint
                    or "Nothing was written. Check the package's executables and its "
                    "--version output, or write the recipe by hand.",
                )
                await failed("validation", refused)
                raise refused
        step = draft.step
        result = CreateResult(
            session=session,
            tool=tool,
            repo=str(source),
            tag=draft.tag,
            version=draft.version,
            recipe=draft.text,
            generated_by=generated_by,
            validation=summary,
            preview=Preview(
                downloads=[
                    PlatformDownloads(
                        platform="any",
                        assets=[f"{source.package}@{draft.tag} from {base}"],
                        urls=[base],
                    )
                ],
                actions=[
                    f"{step.action}: install {source.package}@{draft.tag} into the tool's "
                    f"directory; link {', '.join(step.executables)} into bin/"
                ],
                verify=draft.recipe.verify.command if draft.recipe.verify else None,
                verify_pattern=draft.recipe.verify.pattern if draft.recipe.verify else None,
            ),
            duration_ms=round((time.monotonic() - started) * 1000),
        )
        ev = store.append_nowait(
            "generation.completed", as_payload(builder_completed(result)), session
        )
        await store.wait_durable(ev.id)
        if write:
            self._write(result, target, force, session)
        return result

    async def save(
        self,
        tool: str,
        text: str,
        *,
        output: str | None = None,
        force: bool = False,
        session: str | None = None,
    ) -> SavedRecipe:
        """Write a recipe ``create`` returned (after the client's preview), atomically,
        once it passes the checks again; answered once ``recipe.written`` is durable."""
        from tsukud.fsutil import write_atomic
        from tsukud.install.registry import check_name

        tool = check_name(tool)
        target = self.target(tool, output)
        checked_recipe_text(tool, text)
        refuse_existing(target, force)
        write_atomic(target, text)
        sha = recipe_sha256(text)
        ev = self.store.append_nowait(
            "recipe.written", {"tool": tool, "path": str(target), "sha256": sha}, session
        )
        await self.store.wait_durable(ev.id)
        return SavedRecipe(tool=tool, path=str(target), sha256=sha)
