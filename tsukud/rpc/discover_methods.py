"""RPC: ``discover`` (where does a tool come from?).

``discover`` streams progress frames ``{stage: "discovery", step, message, ...}`` and
answers with the :class:`~tsukud.discover.model.Discovery`; it reports and asks nothing
about installing (``install`` does, through ``tsukud.flows.install_missing``).

Everything heavy is imported by the service, on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from tsukud.rpc.registry import method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.discover.model import Discovered, SearchAnswer


class DiscoverParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    yes: bool = False  # accept the LLM cost without asking
    can_ask: bool = False
    search_provider: str | None = None  # ddg | tavily | brave (local models)
    provider: str | None = None  # LLM order: provider names, "a" or "a,b"
    only_provider: bool | None = None  # None: the llm.only_provider setting
    no_llm: bool = False  # registry and ecosystems only
    collect_tool_stats: bool = False  # the result lists the model's tool calls


@method("discover", DiscoverParams)
async def discover(s: Services, p: DiscoverParams, call: Call) -> Discovered:
    """Find and verify where ``tool`` comes from (registry, ecosystems, web search)."""
    found = await s.discovery.discover(
        p.tool,
        progress=call.progress,
        yes=p.yes,
        can_ask=p.can_ask,
        confirm=False,
        search_provider=p.search_provider,
        providers=p.provider,
        only_provider=p.only_provider,
        llm=not p.no_llm,
        collect_tool_stats=p.collect_tool_stats,
    )
    from tsukud.discover.model import Discovered
    from tsukud.discover.service import builder_sources

    prefix = builder_sources().get(found.builder)
    # A package tsuku itself can turn into a recipe and install: the command that does.
    command = (
        None if prefix is None else f"tsukuctl install {found.tool} --from {prefix}:{found.source}"
    )
    return Discovered(**msgspec.structs.asdict(found), tsuku_command=command)


class SearchParams(msgspec.Struct, forbid_unknown_fields=True):
    name: str


@method("search", SearchParams)
async def search(s: Services, p: SearchParams, call: Call) -> SearchAnswer:
    """What is known of ``name`` without money or questions: recipe, discovery registry
    entry, same-name packages per ecosystem, and what ``install`` would do."""
    return await s.discovery.search(p.name)
