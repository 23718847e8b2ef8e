"""``tsukuctl create <tool> --from homebrew:<formula>``: a recipe written from the
formula's JSON and its bottle index, with no model (the bottles are downloaded only
to validate it).

Deterministic: the same formula JSON and index give the same text. The commands are
the bottle's own list of executables on PATH (the index's ``sh.brew.path_exec_files``
annotation, entries under ``bin/``); the runtime dependencies are the formula's
``dependencies`` as this machine's bottle tag sees them (``variations`` merged over
the top level, as the API documents); platforms without a bottle are listed in
``unsupported_platforms``. The recipe then passes the same static checks as any,
and is validated like any (``validation/bottles.py``: the bottles poured, the
verify command run in the container) unless the user skips it.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from tsukud.create.errors import CreateError
from tsukud.create.pipeline import CreateResult, builder_completed
from tsukud.create.preview import PlatformDownloads, Preview
from tsukud.create.tools import Emit
from tsukud.errors import TsukuError
from tsukud.events.catalogue import as_payload
from tsukud.install.homebrew.client import HomebrewClient
from tsukud.recipe import (
    Binary,
    HomebrewStep,
    InstallBinariesStep,
    Metadata,
    Platform,
    Recipe,
    Verify,
    dump_recipe,
    parse_recipe,
)
from tsukud.recipe.homebrew import choose_tag, platform_tags, split_oci_tag
from tsukud.recipe.platform import STANDARD_PLATFORMS
from tsukud.recipe.version import ResolvedVersion
from tsukud.source import HomebrewFormula
from tsukud.validation.summary import ValidationSummary

EXEC_FILES = "sh.brew.path_exec_files"
GENERATED_BY = "homebrew-builder"

Validate = Callable[[str, ResolvedVersion], Awaitable[ValidationSummary]]


def effective(formula: Mapping[str, Any], tag: str) -> dict[str, Any]:
    """The formula as the API describes it for one bottle tag."""
    variations = formula.get("variations") or {}
    extra = variations.get(tag) if isinstance(variations, dict) else None
    return {**formula, **(extra if isinstance(extra, dict) else {})}


def commands(entries: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``bin/`` executables the bottles list, sorted, each once."""
    found: set[str] = set()
    for entry in entries.values():
        listed = (entry.get("annotations") or {}).get(EXEC_FILES)
        if isinstance(listed, str):
            found.update(p.strip() for p in listed.split(",") if p.strip().startswith("bin/"))
    return sorted(found)


def preview(formula: str, tag: str, entries: Mapping[str, Any], recipe: Recipe) -> Preview:
    """What the terminal preview shows: the bottle each standard platform would pour
    (from the index: nothing is downloaded for it), the actions and the verify."""
    pkg = split_oci_tag(tag)[0]
    downloads: list[PlatformDownloads] = []
    for p in STANDARD_PLATFORMS:
        chosen = choose_tag(list(entries), platform_tags(p))
        if chosen is None:
            downloads.append(PlatformDownloads(platform=p.key, unsupported=True))
        else:
            downloads.append(
                PlatformDownloads(
                    platform=p.key, assets=[f"{formula}--{pkg}.{chosen}.bottle.tar.gz"]
                )
            )
    deps = ", ".join(recipe.metadata.runtime_dependencies or ()) or "none"
    bins = [
        b.dest or b.src
        for s in recipe.steps
        if isinstance(s, InstallBinariesStep)
        for b in s.binaries
    ]
    verify = recipe.verify
    return Preview(
        downloads=downloads,
        actions=[
            f"runtime dependencies first: {deps}",
            f"homebrew: pour the {formula} {pkg} bottle (sha256 checked against its "
            "manifest) and relocate it into the tool's directory",
            f"install_binaries: link {', '.join(bins)}",
        ],
        verify=verify.command if verify else None,
        verify_pattern=verify.pattern if verify else None,
    )


def unsupported(entries: Sequence[str]) -> list[str]:
    return [p.key for p in STANDARD_PLATFORMS if choose_tag(entries, platform_tags(p)) is None]


def recipe_from_formula(
    tool: str,
    formula: Mapping[str, Any],
    entries: Mapping[str, Mapping[str, Any]],
    host: Platform,
) -> str:
    name = str(formula.get("name") or tool)
    bins = commands(entries)
    if not bins:
        raise CreateError(
            f"the bottles of {name} list no commands under bin/ ({EXEC_FILES})",
            hint="A library formula is a runtime dependency, not a tool of its own.",
        )
    view = effective(formula, (platform_tags(host) or ("",))[0])
    deps = [d for d in view.get("dependencies") or [] if isinstance(d, str)]
    desc = formula.get("desc")
    homepage = formula.get("homepage")
    metadata = Metadata(
        name=tool,
        description=desc if isinstance(desc, str) and desc else None,
        homepage=homepage if isinstance(homepage, str) and homepage else None,
        runtime_dependencies=tuple(deps) or None,
        unsupported_platforms=tuple(unsupported(list(entries))) or None,
    )
    # The verify command: the formula's namesake command when it has one.
    first = (f"bin/{name}" if f"bin/{name}" in bins else bins[0]).removeprefix("bin/")
    recipe = Recipe(
        metadata=metadata,
        steps=(
            HomebrewStep(formula=name),
            InstallBinariesStep(binaries=tuple(Binary(b) for b in bins)),
        ),
        verify=Verify(command=f"{first} --version", pattern="{version}"),
    )
    return dump_recipe(recipe)


async def build_from_homebrew(
    tool: str,
    formula: str,
    client: HomebrewClient,
    host: Platform,
    *,
    emit: Emit,
    session: str,
    check: Callable[[str, str], None],
    validate: Validate,
    skip_validation: bool = False,
    version: str | None = None,
) -> CreateResult:
    """The recipe for ``tool`` from ``formula``, passed through ``check`` (the static
    checks every saved recipe passes) and ``validate`` (which emits the
    ``validation.*`` events and raises when the recipe is refused), with the run's
    ``create.started`` and ``generation.completed`` events (no model, no money)."""
    started = time.monotonic()
    repo = str(HomebrewFormula(formula))
    await emit(
        "create.started",
        {
            "tool": tool,
            "repo": repo,
            "deterministic_only": True,
            "llm": False,
            "skip_validation": skip_validation,
        },
    )
    stage = "homebrew"
    try:
        resolved = await client.resolve(formula, version)
        _token, entries = await client.entries(formula, resolved.tag)
        text = recipe_from_formula(tool, await client.formula(formula), entries, host)
        check(tool, text)
        shown = preview(formula, resolved.tag, entries, parse_recipe(text))
        stage = "validation"
        validation = await validate(text, resolved)
    except TsukuError as exc:
        await emit(
            "generation.failed",
            {
                "tool": tool,
                "repo": repo,
                "stage": stage,
                "error_code": exc.code,
                "message": exc.message[:1000],
                "repairs": 0,
                "run_cost_usd": 0.0,
            },
        )
        raise
    result = CreateResult(
        session=session,
        tool=tool,
        repo=repo,
        tag=resolved.tag,
        version=resolved.version,
        recipe=text,
        generated_by=GENERATED_BY,
        validation=validation,
        preview=shown,
        duration_ms=int((time.monotonic() - started) * 1000),
    )
    await emit("generation.completed", as_payload(builder_completed(result)))
    return result
