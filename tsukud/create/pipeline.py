"""``tsukuctl create``: one whole run, from ``github:owner/repo`` to a checked recipe.

1. **Context**: repository, five newest published releases, root files and README at
   the release tag (:mod:`tsukud.create.context`).
2. **Deterministic matcher** (no LLM, $0). Confident and replaying on every platform →
   no model is asked unless ``--llm``; otherwise its candidates become hints.
   ``--deterministic-only`` never asks one.
3. **Conversation** (:mod:`tsukud.create.session`): at most 5 turns, tool choice *any*,
   ``extract_pattern`` forced on the last turn, every answer judged at once by the
   static checks (schema, limits, replay against the real assets), whose findings are
   the cheapest repair feedback there is.
4. **Validation** (:mod:`tsukud.validation.validator`) on the container's platform, after a
   deterministic binary-path fix (:func:`tsukud.create.repair.fix_layout`) and verify
   self-repair (:mod:`tsukud.create.verify_repair`) when they apply; then the other
   platforms as far as this machine can (another CPU under emulation, darwin by its
   Mach-O headers), whose assets' sha256 the recipe pins too.
5. **Repair**: at most ``max_repairs`` LLM repairs, each continuing the same
   conversation (the model sees its previous answer) with sanitised feedback. A 404, a
   failed replay or a failed verify is feedback, never an abort.
6. **Result**: the recipe with ``{version}`` templated, ``generated_by``, validation
   metadata and the validated asset's sha256, plus what the client needs for its
   preview; the caller decides whether to write it.

Everything outside is injected (:class:`Deps`): the GitHub client, the HTTP layer, how
to open an LLM run (the daemon's money-aware ``LLM.run``, or a provider directly in
tests), the validator and an event sink, so the whole run works in-process.

Events, all with the run's session id: ``create.started``; ``generation.started`` (when
an LLM run is admitted; counted by the hourly limit); ``llm.turn`` (the LLM service);
``tool.called``; ``validation.started|passed|failed|skipped``; ``repair.attempted``;
``generation.completed|failed``.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import msgspec
import trio
from msgspec import UNSET

from tsukud.clock import Clock, SystemClock, iso
from tsukud.create.answer import InvalidAnswer, RecipeContext, answer_to_recipe, parse_answer
from tsukud.create.assets import fenced, render_readme, render_releases
from tsukud.create.context import RepoContext, gather
from tsukud.create.deterministic import DETERMINISTIC, draft_recipe, recipe_context
from tsukud.create.errors import (
    DeterministicFailed,
    DeterministicUncertain,
    NoBinaryAssets,
)
from tsukud.create.matcher import (
    CONFIDENT,
    MatchResult,
    candidates_data,
    hints_text,
    match_releases,
    uncertain_text,
)
from tsukud.create.payload_check import confirm_guesses
from tsukud.create.preview import PlatformDownloads, Preview
from tsukud.create.prompts import user_message
from tsukud.create.repair import feedback_for, fix_layout, static_feedback, with_verify
from tsukud.create.session import (
    MAX_TOKENS,
    MAX_TURNS,
    REPAIR_TURNS,
    SYSTEM,
    Conversation,
    Judgement,
)
from tsukud.create.static_checks import check_recipe, check_verify
from tsukud.create.tools import RepoTools, ToolCallRecord
from tsukud.errors import ProviderUnavailable, SandboxError
from tsukud.events import catalogue
from tsukud.events.catalogue import GenerationCompleted, as_payload
from tsukud.generation.errors import GenerationFailed
from tsukud.generation.loop import Answered, Loop, Strategy, failure_data
from tsukud.llm.providers import key_variables, lists_deprecations, name_of_tag
from tsukud.llm.run import OpenLlm, cost_usd, first_provider
from tsukud.progress import Emit, Progress
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    GitHubArchiveStep,
    GitHubFileStep,
    Recipe,
    RecipeError,
    ResolvedVersion,
    dump_recipe,
    render_recipe,
)
from tsukud.registries.ecosystems import prefixes_hint
from tsukud.validation.errors import ValidationFailed
from tsukud.validation.findings import errors, format_findings
from tsukud.validation.sanitize import redact
from tsukud.validation.summary import (
    ValidationSummary,
    attempt_recorded,
    attempt_started,
    validation_summary,
    validation_unavailable,
)
from tsukud.validation.validator import Verdict, container_platform, skipped

if TYPE_CHECKING:
    from tsukud.github.client import GitHub
    from tsukud.llm.types import Response
    from tsukud.net.http import Http
    from tsukud.validation.validator import ValidationRun, Validator

MAX_REPAIRS = 2


class CreateRequest(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    repo: str
    deterministic_only: bool = False
    force_llm: bool = False
    skip_validation: bool = False
    providers: str | None = None
    only_provider: bool | None = None  # None: the llm.only_provider setting
    confirmed: bool = False
    can_ask: bool = False
    collect_tool_stats: bool = False
    max_repairs: int = MAX_REPAIRS
    version: str | None = None  # build for this release instead of the newest


class CreateResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    session: str
    tool: str
    repo: str
    tag: str
    version: str
    recipe: str  # TOML
    generated_by: str
    validation: ValidationSummary
    provider: str | None = None
    model: str | None = None
    cost_usd: float | None = 0.0  # None: some turn had no known price
    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    repairs: int = 0
    max_repairs: int = MAX_REPAIRS
    self_repairs: tuple[str, ...] = ()
    matcher: dict[str, Any] = msgspec.field(default_factory=dict)
    preview: Preview | None = None
    warnings: tuple[str, ...] = ()
    tool_stats: tuple[ToolCallRecord, ...] | None = None
    duration_ms: int = 0
    written: str | None = None
    # Every paid call of the command that showed this recipe (discovery, reading an
    # install page, this run): what the preview's cost line says it cost in all.
    command_cost_usd: float | None = None


def builder_completed(result: CreateResult) -> GenerationCompleted:
    """The ``generation.completed`` payload of a run with no model (a registry's or
    Homebrew's builder): no turns, no tokens, no money, no repairs allowed."""
    return GenerationCompleted(
        tool=result.tool,
        repo=result.repo,
        tag=result.tag,
        generated_by=result.generated_by,
        provider=None,
        model=None,
        validation=result.validation.status,
        repairs=0,
        self_repairs=0,
        turns=0,
        run_input_tokens=0,
        run_output_tokens=0,
        run_cost_usd=0.0,
        duration_ms=result.duration_ms,
    )


@dataclass
class Deps:
    github: GitHub
    http: Http
    github_url: str
    emit: Emit
    progress: Progress
    open_llm: OpenLlm | None = None
    validator: Validator | None = None
    secrets: Sequence[str] = ()
    workdir: Path | None = None
    clock: Clock = field(default_factory=SystemClock)
    no_runtime_reason: str | None = None


def reserved_input_tokens(first_chars: int) -> int:
    """The input tokens a run reserves per turn for a first message of ``first_chars``
    characters: the system prompt and the message at 3 characters a token, plus room
    for tool results (``eval create`` states its worst case with the same rule)."""
    return (len(SYSTEM) + first_chars) // 3 + 6000


def provider_name(response: Response) -> str:
    return name_of_tag(response.provider)


def _root_files(files: Sequence[str]) -> str:
    return "Files at the repository root (names only):\n" + fenced("\n".join(files), "text")


@dataclass
class _Run:
    req: CreateRequest
    deps: Deps
    session: str
    stage: str = "context"
    ctx: RepoContext | None = None
    match: MatchResult | None = None
    repairs: int = 0
    self_repairs: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    validations: int = 0
    vrun: ValidationRun | None = None
    tools: RepoTools | None = None
    conv: Conversation | None = None
    spent: float | None = 0.0
    ready: bool = False  # the container runtime and image answered once this run

    def clean(self, text: str) -> str:
        """``text`` without known secrets, credentials, home directories or addresses."""
        return redact(text, self.deps.secrets)

    async def progress(self, stage: str, message: str, **extra: Any) -> None:
        await self.deps.progress({"stage": stage, "message": message, **extra})

    async def emit(self, type_: str, payload: dict[str, Any]) -> None:
        await self.deps.emit(type_, payload)

    # ---- context and matching ------------------------------------------------------

    def _context(self, generated_by: str | None = None) -> RecipeContext:
        assert self.ctx is not None and self.match is not None
        return recipe_context(self.ctx, self.req.tool, self.match, generated_by)

    def judge(self, arguments: Any) -> Judgement:
        """An ``extract_pattern`` call → an accepted recipe, or the findings."""
        assert self.ctx is not None
        versions = [r.version for r in self.ctx.releases]
        try:
            answer = parse_answer(arguments, versions=versions)
            recipe = answer_to_recipe(answer, self._context())
        except InvalidAnswer as exc:
            return Judgement(findings=tuple(exc.findings), error_type="invalid_answer")
        found = check_recipe(recipe, self.ctx.releases)
        problems = errors(found)
        if problems:
            return Judgement(findings=tuple(problems), error_type="static_check")
        return Judgement(answer=answer, recipe=recipe, findings=tuple(found))

    # ---- the run -------------------------------------------------------------------

    async def run(self) -> CreateResult:
        req, deps = self.req, self.deps
        started = deps.clock.now()
        self.stage = "context"
        await self.progress("fetching_releases", f"fetching releases of {req.repo}")
        ctx = self.ctx = await gather(deps.github, req.repo, version=req.version)
        self.stage = "matching"
        kept = len(ctx.release.assets)
        await self.progress(
            "matching", f"matching the {kept} assets of {ctx.tag}", tag=ctx.tag, assets=kept
        )
        match = self.match = match_releases(ctx.releases, repo=ctx.repo, tool=req.tool)
        if not match.candidates and not match.unplaced:
            raise NoBinaryAssets(
                f"{ctx.repo} {ctx.tag}: no release asset is a build for linux or darwin",
                hint="The tool may need to be built from source, or installed another "
                f"way: `tsukuctl create {req.tool} --from github:{ctx.repo}` (with a model "
                "and validation: not --deterministic-only or --skip-validation) and "
                "`tsukuctl install` read the project's install page (the instructions "
                f"builder); a package source works too: --from {prefixes_hint()}.",
                tag=ctx.tag,
            )
        async with contextlib.AsyncExitStack() as stack:
            if deps.validator is not None and not req.skip_validation:
                self.vrun = await stack.enter_async_context(
                    deps.validator.session(self.session, deps.progress)
                )
            workdir = deps.workdir or Path(
                stack.enter_context(tempfile.TemporaryDirectory(prefix="tsuku-create-"))
            )
            tool_ctx = ctx.for_tag_prefix(match.tag_prefix)  # the tool's own release
            self.tools = RepoTools(
                github=deps.github,
                http=deps.http,
                repo=ctx.repo,
                release=tool_ctx.release,
                api_release=tool_ctx.api_release,
                github_url=deps.github_url,
                emit=deps.emit,
                workdir=workdir,
            )
            # Names without an OS are Linux builds only if their payload agrees.
            match = self.match = await confirm_guesses(
                match, tool_ctx.release.version, self.tools.payload
            )
            result = await self._decide(match)
        result.duration_ms = round((deps.clock.now() - started) * 1000)
        return result

    async def _decide(self, match: MatchResult) -> CreateResult:
        req = self.req
        best = match.best
        assert self.ctx is not None
        draft = draft_recipe(self.ctx, req.tool, match)
        det_recipe, det_errors, det_ok = draft.recipe, list(draft.findings), draft.passes
        use_llm = not req.deterministic_only and (req.force_llm or not (match.confident and det_ok))
        note: str | None = None
        if not use_llm:
            if not det_ok or det_recipe is None or best is None:
                reasons = "; ".join(match.reasons or (best.reasons if best else ()))
                detail = format_findings(det_errors) if det_errors else reasons
                raise DeterministicFailed(
                    f"the deterministic matcher found no recipe that passes the checks: {detail}"
                )
            if not match.confident:
                # Only --deterministic-only gets here unconfident (otherwise the LLM
                # decides): a doubtful recipe is never written without a model.
                raise DeterministicUncertain(
                    f"the deterministic matcher is not confident "
                    f"({best.confidence:.2f} < {CONFIDENT}): {uncertain_text(match)}",
                    candidates=candidates_data(match),
                )
            recipe, verdict = await self._validate(det_recipe, expected=best.expected)
            if not verdict.failed:
                return await self._finish(recipe, verdict, generated_by=DETERMINISTIC)
            if req.deterministic_only:
                raise ValidationFailed(
                    f"the deterministic recipe failed validation ({verdict.stage}): "
                    f"{self.clean(verdict.message)}",
                    **failure_data(verdict, self.clean),
                )
            note = (
                "The deterministic matcher's best candidate failed validation "
                f"({verdict.stage}: {verdict.category or 'unknown'}): "
                + self.clean(" ".join(verdict.message.split()))[:300]
            )
        return await self._with_llm(note)

    async def _with_llm(self, note: str | None) -> CreateResult:
        req, deps = self.req, self.deps
        ctx, match, tools = self.ctx, self.match, self.tools
        assert ctx is not None and match is not None and tools is not None
        if deps.open_llm is None:
            raise ProviderUnavailable(
                "the deterministic matcher was not enough and no LLM is available",
                hint=f"Configure a provider ({key_variables()}).",
            )
        readme = render_readme(ctx.readme) if ctx.readme else None
        if ctx.root_files:
            readme = "\n\n".join(x for x in (readme, _root_files(ctx.root_files)) if x)
        hints = hints_text(match) if match.candidates else None
        if note:
            hints = (hints + "\n" if hints else "") + note
        first = user_message(
            ctx.repo, ctx.description, render_releases(ctx.releases), readme, hints
        )
        max_repairs = req.max_repairs
        await self._require_validation()  # before any money is spent
        self.stage = "llm"
        async with deps.open_llm(
            session=self.session,
            purpose="create",
            providers=req.providers,
            only_provider=req.only_provider,
            max_turns=MAX_TURNS + max_repairs * REPAIR_TURNS,
            max_tokens=MAX_TOKENS,
            input_tokens=reserved_input_tokens(len(first)),
            confirmed=req.confirmed,
            can_ask=req.can_ask,
            progress=deps.progress,
            generation_tool=req.tool,
        ) as run:
            conv = self.conv = Conversation(run.complete, tools, self.judge, first)
            provider = first_provider(run)
            await self.progress("asking", f"asking {provider}", provider=provider)
            loop = Loop(
                Strategy(
                    ask=self._ask,
                    tell=conv.add_user,
                    validate=self._validate,
                    feedback=feedback_for(
                        max_repairs=max_repairs,
                        secrets=deps.secrets,
                        notes=lambda: self.self_repairs[-1:],
                    ),
                    done=lambda verdict: not verdict.failed,
                    first_turns=MAX_TURNS,
                    repair_turns=REPAIR_TURNS,
                    answer_tool="extract_pattern",
                    static_feedback=lambda findings, attempt: static_feedback(
                        findings, attempt=attempt, max_repairs=max_repairs
                    ),
                ),
                tally=self,
                max_repairs=max_repairs,
                emit=deps.emit,
                progress=deps.progress,
                clean=self.clean,
            )
            try:
                # Inside the try: a first round that raises has spent money too.
                recipe, verdict = await loop.run()
            finally:
                self.spent = cost_usd(run)
                self.warnings.extend(run.warnings)
        answered = conv.answered_by or conv.last_response
        generated_by = (
            f"{provider_name(answered)}:{answered.model}" if answered is not None else "llm"
        )
        return await self._finish(recipe, verdict, generated_by=generated_by)

    async def _ask(self, turns: int) -> Answered:
        assert self.conv is not None
        outcome = await self.conv.run(turns)
        judgement = outcome.judgement
        recipe = judgement.recipe if judgement is not None and outcome.ok else None
        return Answered(recipe=recipe, findings=outcome.findings)

    # ---- validation ----------------------------------------------------------------

    async def _require_validation(self) -> None:
        """Raise :class:`ValidationUnavailable` unless validation can run (or the user
        said ``--skip-validation``): a recipe nobody saw work is never handed back as if
        checked. Asked once per run, before money is spent or assets downloaded."""
        if self.req.skip_validation or self.ready:
            return
        vrun = self.vrun
        if vrun is None:
            await self._unavailable(
                self.deps.no_runtime_reason or "no container runtime is configured", None
            )
        try:
            await vrun.validator.check_ready()
        except SandboxError as exc:
            await self._unavailable(exc.message, exc.code)
        self.ready = True

    async def _unavailable(self, reason: str, code: str | None) -> NoReturn:
        await self.emit("validation.skipped", {"reason": self.clean(reason)})
        raise validation_unavailable(self.clean(reason), code)

    async def _validate(
        self, recipe: Recipe, *, expected: dict[str, str] | None = None
    ) -> tuple[Recipe, Verdict]:
        assert self.ctx is not None
        # A monorepo's recipe is validated at its own product's newest release.
        ctx = self.ctx = self.ctx.for_recipe(recipe)
        self.stage = "validation"
        vrun = self.vrun
        if self.req.skip_validation:
            reason = "--skip-validation: the recipe was NOT installed or run in a container"
            validator = self.deps.validator
            where = validator.platform.key if validator is not None else container_platform().key
            verdict = skipped(where, reason)
            await self.emit("validation.skipped", {"reason": reason})
            return recipe, verdict
        await self._require_validation()
        assert vrun is not None
        self.validations += 1
        attempt = self.validations
        await attempt_started(vrun, attempt, emit=self.deps.emit, progress=self.deps.progress)
        prepared = await vrun.prepare(recipe, ctx.release)
        if prepared.failure is not None and prepared.failure.stage == "layout":
            fixed = fix_layout(recipe, prepared.failure, version=ctx.version)
            if fixed is not None and not errors(
                check_recipe(fixed[0], ctx.releases, expected=expected)
            ):
                recipe, what = fixed
                self.self_repairs.append(what)
                await self.emit(
                    "repair.attempted", {"attempt": attempt, "kind": "layout", "change": what}
                )
                prepared = await vrun.prepare(recipe, ctx.release)
        verdict = await prepared.verify(recipe.verify)
        if verdict.failed and verdict.stage == "verify" and verdict.category != "verify_command":
            recipe, verdict = await self._self_repair(recipe, verdict, prepared)
        # The container's platform passed: now the others, as far as this machine can.
        verdict = await vrun.prove_platforms(recipe, ctx.release, verdict)
        await attempt_recorded(verdict, attempt, emit=self.deps.emit, clean=self.clean)
        return recipe, verdict

    async def _self_repair(
        self, recipe: Recipe, verdict: Verdict, prepared: Any
    ) -> tuple[Recipe, Verdict]:
        from tsukud.create.verify_repair import looks_like_help, output_pattern, propose

        assert self.ctx is not None and recipe.verify is not None
        command = recipe.verify.command or ""
        tool = command.split(" ", 1)[0]
        for proposal in propose(
            command,
            verdict.output,
            verdict.exit_code if verdict.exit_code is not None else 1,
            version=self.ctx.version,
            pattern=recipe.verify.pattern,
        ):
            await self.emit(
                "repair.attempted",
                {
                    "kind": "verify_self_repair",
                    "method": proposal.method,
                    "command": proposal.command,
                },
            )
            pattern: str | None = proposal.pattern
            if pattern is None:
                got = await prepared.run_command(proposal.command)
                if isinstance(got, Verdict) or got.exit_code != proposal.exit_code:
                    continue
                pattern = output_pattern(got.output, tool)
                if pattern is None or not looks_like_help(got.output, tool):
                    continue
            candidate = with_verify(recipe, proposal.to_verify(pattern))
            if errors(check_verify(candidate)):
                continue
            tried = await prepared.verify(candidate.verify)
            if tried.passed:
                self.self_repairs.append(f"verify: {proposal.reason}")
                return candidate, tried
        return recipe, verdict

    # ---- result --------------------------------------------------------------------

    async def _finish(self, recipe: Recipe, verdict: Verdict, *, generated_by: str) -> CreateResult:
        assert self.ctx is not None and self.match is not None
        ctx, match = self.ctx.for_recipe(recipe), self.match
        self.ctx = ctx
        self.stage = "finish"
        meta = msgspec.structs.replace(recipe.metadata, generated_by=generated_by)
        if verdict.passed:
            meta = msgspec.structs.replace(
                meta,
                validated_at=iso(self.deps.clock.now()),
                validation_platform=verdict.platform,
                validation_image=verdict.image,
                validated_version=verdict.version,
                asset_sha256={a.name: a.sha256 for a in verdict.assets} or None,
            )
        else:
            meta = msgspec.structs.replace(meta, llm_validation="skipped")
            self.warnings.append(
                "the recipe was NOT validated in a container: "
                + (self.clean(verdict.message) or "validation skipped")
                + (f" ({verdict.hint})" if verdict.hint else "")
            )
        recipe = msgspec.structs.replace(recipe, metadata=meta)
        final = errors(check_recipe(recipe, ctx.releases))
        if final:  # a deterministic fix must never produce what the checks refuse
            raise GenerationFailed(
                "the final recipe fails the static checks:\n" + format_findings(final),
                stage="static_checks",
            )
        conv = self.conv
        provider = model = None
        if conv is not None and (conv.answered_by or conv.last_response) is not None:
            answered = conv.answered_by or conv.last_response
            assert answered is not None
            provider, model = provider_name(answered), answered.model
            if lists_deprecations(provider):
                from tsukud.llm.pricing import deprecation

                warning = deprecation(model)
                if warning:
                    self.warnings.append(warning)
        usage = conv.usage if conv is not None else None
        best = match.best
        result = CreateResult(
            session=self.session,
            tool=self.req.tool,
            repo=ctx.repo,
            tag=ctx.tag,
            version=ctx.version,
            recipe=dump_recipe(recipe),
            generated_by=generated_by,
            validation=self._summary(verdict),
            provider=provider,
            model=model,
            cost_usd=self.spent if conv is not None else 0.0,
            input_tokens=(usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens)
            if usage
            else 0,
            output_tokens=(usage.output_tokens + usage.thoughts_tokens) if usage else 0,
            turns=conv.turns if conv is not None else 0,
            repairs=self.repairs,
            max_repairs=self.req.max_repairs,
            self_repairs=tuple(self.self_repairs),
            matcher={
                "confident": match.confident,
                "confidence": best.confidence if best else 0.0,
                "candidates": len(match.candidates),
                "reasons": list(best.reasons[:6]) if best else list(match.reasons),
                "used": generated_by == DETERMINISTIC,
            },
            preview=self._preview(recipe),
            warnings=tuple(self.warnings),
            tool_stats=tuple(self.tools.records)
            if self.req.collect_tool_stats and self.tools
            else None,
        )
        return result

    def _summary(self, verdict: Verdict) -> ValidationSummary:
        return validation_summary(verdict, self.validations, self.clean)

    def _preview(self, recipe: Recipe) -> Preview:
        ctx = self.ctx
        assert ctx is not None
        downloads: list[PlatformDownloads] = []
        for target in STANDARD_PLATFORMS:
            try:
                steps = render_recipe(
                    recipe,
                    ResolvedVersion(ctx.version, ctx.tag),
                    target,
                    assets=ctx.release.assets,
                    github_url=self.deps.github_url,
                )
                # What the recipe says of this platform's build (a Rosetta 2 fallback,
                # the libc chosen) is shown beside it, not only in the TOML.
                notes = [recipe.steps[s.index].note for s in steps if s.index < len(recipe.steps)]
                downloads.append(
                    PlatformDownloads(
                        platform=target.key,
                        assets=[s.asset_name for s in steps],
                        urls=[s.url for s in steps],
                        notes=list(dict.fromkeys(n for n in notes if n)) if any(notes) else UNSET,
                    )
                )
            except RecipeError as exc:
                downloads.append(PlatformDownloads(platform=target.key, unsupported=exc.message))
        actions = []
        for step in recipe.steps:
            when = ""
            if step.when is not None:
                parts = [*(step.when.os or ()), *(step.when.platform or ())]
                parts.extend(step.when.arch or ())
                when = f" (on {'/'.join(parts)})" if parts else ""
            if isinstance(step, GitHubArchiveStep):
                fmt = step.archive_format or "archive"
                bins = ", ".join(b.src for b in step.binaries)
                strip = f", strip_dirs={step.strip_dirs}" if step.strip_dirs else ""
                actions.append(
                    f"Download {step.asset_pattern} and extract the {fmt} archive; "
                    f"install {bins}{strip}{when}"
                )
            elif isinstance(step, GitHubFileStep):
                actions.append(f"Download the binary {step.asset_pattern}{when}")
        verify = recipe.verify
        return Preview(
            downloads=downloads,
            actions=actions,
            verify=verify.command if verify else None,
            verify_pattern=verify.pattern if verify else None,
        )


async def run_create(req: CreateRequest, deps: Deps, *, session: str) -> CreateResult:
    """The whole run; ``generation.completed`` or ``generation.failed`` is its last event."""
    run = _Run(req, deps, session)
    await deps.emit(
        "create.started",
        {
            "tool": req.tool,
            "repo": req.repo,
            "deterministic_only": req.deterministic_only,
            "llm": req.force_llm,
            "skip_validation": req.skip_validation,
        },
    )
    return await recorded(
        run, emit=deps.emit, tool=req.tool, source=req.repo, max_repairs=req.max_repairs
    )


class Spending(Protocol):
    """What a run's ``generation.failed`` reports of it."""

    @property
    def stage(self) -> str: ...

    @property
    def repairs(self) -> int: ...

    @property
    def spent(self) -> float | None: ...

    async def run(self) -> CreateResult: ...


async def recorded(
    run: Spending,
    *,
    emit: Emit,
    tool: str,
    source: str,
    clean: Callable[[str], str] = str,
    max_repairs: int | None = None,
) -> CreateResult:
    """``run``'s result; ``generation.completed`` or ``generation.failed`` (whatever
    ended it, cancellation included) is its last event. Create and the instructions
    builder both end their runs here."""
    try:
        result = await run.run()
    except BaseException as exc:
        with trio.CancelScope(shield=True):
            await emit(
                "generation.failed",
                as_payload(
                    failed_event(
                        tool,
                        source,
                        exc,
                        stage=run.stage,
                        repairs=run.repairs,
                        spent=run.spent,
                        clean=clean,
                        max_repairs=max_repairs,
                    )
                ),
            )
        raise
    await emit("generation.completed", as_payload(completed_event(tool, result)))
    return result


def failed_event(
    tool: str,
    repo: str,
    exc: BaseException,
    *,
    stage: str,
    repairs: int,
    spent: float | None,
    clean: Callable[[str], str] = str,
    max_repairs: int | None = None,
) -> catalogue.GenerationFailed:
    """The payload of ``generation.failed`` for whatever ended a run. ``run_cost_usd``:
    the total of the run's ``llm.turn`` events (only events that spend carry
    cost_usd/input_tokens, so summaries never count them twice)."""
    from tsukud.errors import TsukuError

    if isinstance(exc, TsukuError):
        code, message = exc.code, exc.message
    elif isinstance(exc, Exception):
        code, message = "internal", f"{type(exc).__name__}: {exc}"
    else:
        code, message = "cancelled", "the run was cancelled"
    return catalogue.GenerationFailed(
        tool=tool,
        repo=repo,
        stage=stage,
        error_code=code,
        message=clean(message)[:1000],
        repairs=repairs,
        run_cost_usd=spent,
        max_repairs=max_repairs,
    )


def completed_event(tool: str, result: CreateResult) -> GenerationCompleted:
    """The payload of ``generation.completed``. ``run_*``: totals of the run's
    ``llm.turn`` events; only events that spend carry cost_usd/input_tokens, so
    summaries never count them twice."""
    return GenerationCompleted(
        tool=tool,
        repo=result.repo,
        tag=result.tag,
        generated_by=result.generated_by,
        provider=result.provider,
        model=result.model,
        validation=result.validation.status,
        repairs=result.repairs,
        self_repairs=len(result.self_repairs),
        turns=result.turns,
        run_input_tokens=result.input_tokens,
        run_output_tokens=result.output_tokens,
        run_cost_usd=result.cost_usd,
        duration_ms=result.duration_ms,
        max_repairs=result.max_repairs if result.provider is not None else None,
    )
