"""RPC: ``discover`` (where does a tool come from?) and install's fallback for tools
without a recipe (discover → verify → ask → create → install).

``discover`` streams progress frames ``{stage: "discovery", step, message, ...}`` and
answers with the :class:`~tsukud.discover.model.Discovery`; it reports and asks nothing
about installing. :func:`install_missing` is what ``install`` calls when no recipe
exists: the same chain with the install question, then the recipe generator
(``tsukud.rpc.create_methods.create``) for a GitHub source, then the installer. An
ecosystem package is not installed: the error's hint is that ecosystem's command.

Everything heavy is imported inside the handlers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.daemon import Daemon
from tsukud.rpc.registry import method
from tsukud.rpc.server import Call

if TYPE_CHECKING:
    from tsukud.discover.model import Discovery
    from tsukud.discover.service import DiscoveryService


def _service(d: Daemon) -> DiscoveryService:
    from tsukud.discover.service import DiscoveryService

    return d.service(DiscoveryService.from_daemon)


class DiscoverParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    yes: bool = False  # accept the LLM cost without asking
    can_ask: bool = False
    search_provider: str | None = None  # ddg | tavily | brave (local models)
    provider: str | None = None  # LLM order, e.g. "claude" or "gemini,claude"
    no_llm: bool = False  # registry and ecosystems only


@method("discover", DiscoverParams)
async def discover(d: Daemon, p: DiscoverParams, call: Call) -> dict[str, Any]:
    """Find and verify where ``tool`` comes from (registry, ecosystems, web search)."""
    found = await _service(d).discover(
        p.tool,
        progress=call.progress,
        yes=p.yes,
        can_ask=p.can_ask,
        confirm=False,
        search_provider=p.search_provider,
        providers=p.provider,
        llm=not p.no_llm,
    )
    return msgspec.to_builtins(found)  # type: ignore[no-any-return]


async def install_missing(
    d: Daemon,
    call: Call,
    *,
    name: str,
    version: str | None,
    force: bool,
    yes: bool,
    can_ask: bool,
    search_provider: str | None = None,
    source: str | None = None,
) -> dict[str, Any]:
    """No recipe for ``name``: discover its source (or take ``--from``), write a recipe
    with the generator, install it. Returns the installer's result plus ``discovery``
    and ``created``."""
    from tsukud.discover.errors import DiscoveredElsewhere, DiscoveryNotFound
    from tsukud.discover.normalize import BadSource, github_source, normalize_name
    from tsukud.errors import UsageError
    from tsukud.install.installer import Installer

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
        try:
            found = await _service(d).discover(
                name,
                progress=call.progress,
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
        repo = found.source
    created = await _create(d, call, name=name, repo=repo, yes=yes, can_ask=can_ask)
    installer = d.service(Installer.from_daemon)
    result = await installer.install(name, version, force=force, progress=call.progress)
    result["discovery"] = (
        msgspec.to_builtins(found) if found is not None else {"source": repo, "stage": "from"}
    )
    result["created"] = created
    return result


async def _create(
    d: Daemon, call: Call, *, name: str, repo: str, yes: bool, can_ask: bool
) -> dict[str, Any]:
    from tsukud.discover.errors import CreateUnavailable

    try:
        from tsukud.rpc.create_methods import CreateParams
        from tsukud.rpc.create_methods import create as create_method
    except ImportError:
        raise CreateUnavailable(
            f"found github:{repo} for {name}, but this tsukud has no recipe generator",
            hint=f"Write a recipe by hand: $TSUKU_HOME/recipes/{name}.toml (github:{repo}).",
            source=repo,
        ) from None
    await call.progress(
        {
            "stage": "discovery",
            "step": "create",
            "message": f"writing a recipe for {name} from github:{repo}",
        }
    )
    params = CreateParams(
        tool=name,
        source=f"github:{repo}",
        write=True,
        yes=yes,
        can_ask=can_ask,
    )
    res: dict[str, Any] = await create_method(d, params, call)
    validation = res.get("validation") or {}
    await call.progress(
        {
            "stage": "discovery",
            "step": "created",
            "message": f"recipe written to {res.get('written')} (generated by "
            f"{res.get('generated_by')}; validation {validation.get('status', 'unknown')})",
        }
    )
    return {
        "recipe": res.get("written"),
        "session": res.get("session"),
        "generated_by": res.get("generated_by"),
        "validation": validation.get("status"),
        "cost_usd": res.get("cost_usd"),
    }
