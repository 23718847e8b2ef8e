"""RPC methods for writing recipes: ``create`` and ``create.save`` (schema/rpc.md).

``create`` runs the pipeline through ``tsukud.create.service.Creator``. Progress frames
are ``{stage, message, ...}``; the result is the recipe (TOML) with everything the
client's preview shows. It writes the recipe only when asked (``write``: ``--yes`` or
``--output``); otherwise the client shows the preview and calls ``create.save`` if the
user accepts.

Heavy modules (httpx2, the pipeline) are imported by the service, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from tsukud.rpc.registry import method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.create.pipeline import CreateResult
    from tsukud.create.service import SavedRecipe


class CreateParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    source: str  # github:owner/repo, <ecosystem>:<package>, homebrew:<formula>
    output: str | None = None  # absolute path; default $TSUKU_HOME/recipes/<tool>.toml
    write: bool = False
    force: bool = False
    check_target: bool = True
    deterministic_only: bool = False
    llm: bool = False
    skip_validation: bool = False
    provider: str | None = None
    only_provider: bool | None = None  # None: the llm.only_provider setting
    yes: bool = False
    can_ask: bool = False
    collect_tool_stats: bool = False
    version: str | None = None  # build and validate for this release, not the newest
    # a recipe read from the homepage may use hosts/packages the repository does not name
    # without a person's yes (--trust-page-hosts)
    trust_page_hosts: bool = False
    max_repairs: int = 2  # LLM repairs after a failed check or validation (0-2)


class SaveParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    recipe: str  # TOML, as ``create`` returned it
    output: str | None = None
    force: bool = False
    session: str | None = None


@method("create", CreateParams)
async def create(s: Services, p: CreateParams, call: Call) -> CreateResult:
    """Write a recipe for ``tool`` from ``source`` (a repository without release builds:
    from its install page, ``flows/create_recipe.py``)."""
    from tsukud.source import parse_source

    return await s.create_recipe.create(
        p.tool,
        parse_source(p.source),
        progress=call.progress,
        output=p.output,
        write=p.write,
        force=p.force,
        check_target=p.check_target,
        deterministic_only=p.deterministic_only,
        force_llm=p.llm,
        skip_validation=p.skip_validation,
        providers=p.provider,
        only_provider=p.only_provider,
        confirmed=p.yes,
        can_ask=p.can_ask,
        collect_tool_stats=p.collect_tool_stats,
        version=p.version,
        trust_page_hosts=p.trust_page_hosts,
        max_repairs=p.max_repairs,
    )


@method("create.save", SaveParams)
async def create_save(s: Services, p: SaveParams, call: Call) -> SavedRecipe:
    """Write a recipe ``create`` returned (after the client's preview), atomically.

    The text is parsed and checked again (schema, limits, verify command, paths), so
    what lands in ``recipes/`` is always something the installer accepts."""
    return await s.creator.save(p.tool, p.recipe, output=p.output, force=p.force, session=p.session)
