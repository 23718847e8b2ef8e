"""RPC methods for writing recipes: ``create`` and ``create.save`` (schema/rpc.md).

``create`` runs the whole pipeline (``tsukud.create.pipeline``) with the daemon's real
parts: the GitHub client and HTTP layer, the LLM service (admission, budget,
confirmation, breakers, priced ``llm.turn`` events), the sandbox runtime and the
container lock. Progress frames are ``{stage, message, ...}``; the result is the recipe
(TOML) with everything the client's preview shows. It writes the recipe only when asked
(``write``: ``--yes`` or ``--output``); otherwise the client shows the preview and calls
``create.save`` if the user accepts. The "already exists" check runs before anything
that costs money.

Heavy modules (httpx2, the pipeline) are imported inside the handlers.
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.daemon import Daemon
from tsukud.rpc.registry import method
from tsukud.rpc.server import Call

if TYPE_CHECKING:
    from tsukud.sandbox.validate import Validator


class CreateParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    source: str  # github:owner/repo
    output: str | None = None  # absolute path; default $TSUKU_HOME/recipes/<tool>.toml
    write: bool = False
    force: bool = False
    check_target: bool = True
    deterministic_only: bool = False
    llm: bool = False
    skip_validation: bool = False
    provider: str | None = None
    yes: bool = False
    can_ask: bool = False
    collect_tool_stats: bool = False


class SaveParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    recipe: str  # TOML, as ``create`` returned it
    output: str | None = None
    force: bool = False
    session: str | None = None


def validator_from_daemon(d: Daemon) -> Validator:
    """The daemon's validator (``d.service(validator_from_daemon)``)."""
    from tsukud.net.http import shared
    from tsukud.sandbox.service import Sandbox
    from tsukud.sandbox.validate import Validator

    sb = d.service(Sandbox.from_daemon)
    return Validator(
        http=d.service(shared),
        github_url=lambda: str(d.config["github.url"]),
        workdir=d.home / "validate",
        runtime=sb.runtime,
        image=lambda: sb.image,
        lock=lambda session: d.container_lock.hold(session=session),
        forget=sb.forget,
        # The same cap as installs of the recipe will have.
        max_download_bytes=int(d.config["install.max_download_mb"]) * 1024 * 1024,
    )


def _target(d: Daemon, tool: str, output: str | None) -> Path:
    from tsukud.errors import UsageError

    if output is None:
        return d.home / "recipes" / f"{tool}.toml"
    path = Path(output)
    if not path.is_absolute():
        raise UsageError(f"--output must be an absolute path (got {output!r})")
    return path


def _refuse_existing(path: Path, force: bool) -> None:
    from tsukud.create.errors import RecipeExists

    if not force and (path.exists() or path.is_symlink()):
        raise RecipeExists(f"a recipe already exists at {path}", path=str(path))


@method("create", CreateParams)
async def create(d: Daemon, p: CreateParams, call: Call) -> dict[str, Any]:
    """Write a recipe for ``tool`` from ``source``'s GitHub releases."""
    from tsukud.create.context import parse_source
    from tsukud.create.pipeline import CreateRequest, Deps, run_create
    from tsukud.fsutil import write_atomic
    from tsukud.github.client import from_daemon as github_from_daemon
    from tsukud.install.registry import check_name
    from tsukud.llm.service import LLM
    from tsukud.net.http import shared

    tool = check_name(p.tool)
    repo = parse_source(p.source)
    target = _target(d, tool, p.output)
    if p.check_target or p.write:
        _refuse_existing(target, p.force)  # before anything that costs money
    session = "create-" + secrets.token_hex(6)
    store = d.store

    async def emit(type_: str, payload: dict[str, Any]) -> None:
        ev = store.append_nowait(type_, payload, session)
        if type_.startswith("generation."):
            await store.wait_durable(ev.id)

    validator = None if p.skip_validation else d.service(validator_from_daemon)
    llm = None if p.deterministic_only else d.service(LLM.from_daemon)
    deps = Deps(
        github=d.service(github_from_daemon),
        http=d.service(shared),
        github_url=str(d.config["github.url"]),
        emit=emit,
        progress=call.progress,
        open_llm=llm.run if llm is not None else None,
        validator=validator,
        secrets=tuple(d.config.secret_values()),
    )
    req = CreateRequest(
        tool=tool,
        repo=repo,
        deterministic_only=p.deterministic_only,
        force_llm=p.llm,
        skip_validation=p.skip_validation,
        providers=p.provider,
        confirmed=p.yes,
        can_ask=p.can_ask,
        collect_tool_stats=p.collect_tool_stats,
    )
    result = await run_create(req, deps, session=session)
    if p.write:
        _refuse_existing(target, p.force)
        write_atomic(target, result.recipe)
        result.written = str(target)
        store.append_nowait(
            "recipe.written",
            {"tool": tool, "path": str(target), "sha256": _sha(result.recipe)},
            session,
        )
    return msgspec.to_builtins(result)  # type: ignore[no-any-return]


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@method("create.save", SaveParams)
async def create_save(d: Daemon, p: SaveParams, call: Call) -> dict[str, Any]:
    """Write a recipe ``create`` returned (after the client's preview), atomically.

    The text is parsed and checked again (schema, limits, verify command, paths), so
    what lands in ``recipes/`` is always something the installer accepts."""
    from tsukud.create.errors import CreateError
    from tsukud.create.findings import errors, format_findings
    from tsukud.create.static_checks import check_binaries, check_limits, check_schema, check_verify
    from tsukud.fsutil import write_atomic
    from tsukud.install.registry import check_name
    from tsukud.recipe import RecipeError, parse_recipe

    tool = check_name(p.tool)
    target = _target(d, tool, p.output)
    try:
        recipe = parse_recipe(p.recipe, f"{tool}.toml")
    except RecipeError as exc:
        raise CreateError(f"not a valid recipe: {exc.message}") from None
    if recipe.metadata.name != tool:
        raise CreateError(f"the recipe is for {recipe.metadata.name!r}, not {tool!r}")
    found = errors(
        [
            *check_schema(recipe),
            *check_limits(recipe),
            *check_verify(recipe),
            *check_binaries(recipe),
        ]
    )
    if found:
        raise CreateError("the recipe fails the static checks:\n" + format_findings(found))
    _refuse_existing(target, p.force)
    write_atomic(target, p.recipe)
    sha = _sha(p.recipe)
    ev = d.store.append_nowait(
        "recipe.written", {"tool": tool, "path": str(target), "sha256": sha}, p.session
    )
    await d.store.wait_durable(ev.id)
    return {"tool": tool, "path": str(target), "sha256": sha}
