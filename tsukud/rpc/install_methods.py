"""RPC methods for installing tools (schema/rpc.md, "Install").

The install service (``tsukud.install.installer``) pulls in httpx2, so it is built on
first use: loading this module at daemon start-up costs nothing. Installing, or
discovering when there is no recipe, is the ``tsukud.flows.install_tool`` flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.errors import UsageError
from tsukud.flows.install_missing import LlmChoice
from tsukud.rpc.registry import NoParams, method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.flows.install_tool import ToolInstalled
    from tsukud.install.results import (
        RegistryUpdated,
        Removed,
        ToolInfo,
        UnusedRemoved,
        Upgrades,
        Verified,
    )
    from tsukud.install.upgrades import ToolStatus


def split_spec(tool: str, version: str | None) -> tuple[str, str | None]:
    """``age@1.2.0`` → ("age", "1.2.0"); an explicit ``version`` param must agree.
    ``latest`` (either way, any case) means the newest, as in mise and uv."""
    name, at, spec_version = tool.partition("@")
    if at and not spec_version:
        raise UsageError(f"{tool!r}: nothing after '@'", hint="Write tool@1.2.3 or just tool.")
    if at and version and version != spec_version:
        raise UsageError(f"{tool!r} and version {version!r} disagree")
    wanted = spec_version or version or None
    if wanted is not None and wanted.strip().lower() == "latest":
        wanted = None
    return name.strip(), wanted


class InstallParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str
    version: str | None = None
    force: bool = False
    yes: bool = False  # discovery's source question, generation cost; never shadowing
    can_ask: bool = False  # the client can put questions to a person (a terminal)
    discover: bool = False  # no recipe: discover the source, write a recipe, install it
    source: str | None = None  # no recipe: this source (github:o/r, <ecosystem>:p, ...) instead
    search_provider: str | None = None  # discovery's web search for local models
    collect_tool_stats: bool = False  # no recipe: list discovery's and create's tool calls
    provider: str | None = None  # no recipe: LLM provider(s) to try first, "a,b"
    only_provider: bool | None = None  # no recipe: only those, never fail over to others
    # no recipe: a recipe read from a page may use hosts/packages its repository does not
    # name without a person's yes (--trust-page-hosts)
    trust_page_hosts: bool = False


@method("install", InstallParams)
async def install(s: Services, p: InstallParams, call: Call) -> ToolInstalled:
    """Install ``tool[@version]``; progress frames ``{stage, tool, ...}`` as it goes."""
    from tsukud.flows.install_missing import given_source
    from tsukud.flows.install_tool import InstallRequest

    name, version = split_spec(p.tool, p.version)
    request = InstallRequest(
        name=name,
        version=version,
        force=p.force,
        yes=p.yes,
        can_ask=p.can_ask,
        discover=p.discover,
        # a malformed --from is a usage error whatever follows
        source=given_source(p.source) if p.source is not None else None,
        search_provider=p.search_provider,
        collect_tool_stats=p.collect_tool_stats,
        llm=LlmChoice(providers=p.provider, only_provider=p.only_provider),
        trust_page_hosts=p.trust_page_hosts,
    )
    return await s.install_tool.run(request, progress=call.progress)


class InstalledTools(msgspec.Struct, frozen=True):
    tools: list[dict[str, Any]]  # one row per installed tool (``layout.installed_rows``)


class ToolsChecked(msgspec.Struct, frozen=True):
    tools: list[ToolStatus]  # each against its newest release


@method("tools.list", NoParams)
async def tools_list(s: Services, p: NoParams, call: Call) -> InstalledTools:
    """Installed tools, from the ledger's installed-tools projection (no network)."""
    from tsukud.install.layout import installed_rows

    return InstalledTools(installed_rows(s.installed()))


class ToolParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str


@method("tools.remove", ToolParams)
async def tools_remove(s: Services, p: ToolParams, call: Call) -> Removed:
    """Remove an installed tool: its bin links, its directory; ``install.removed``."""
    return await s.installer.remove(p.tool)


@method("tools.verify", ToolParams)
async def tools_verify(s: Services, p: ToolParams, call: Call) -> Verified:
    """Re-run the verify command and re-hash the binaries against the recorded sha256."""
    return await s.installer.verify(p.tool)


@method("tools.info", ToolParams)
async def tools_info(s: Services, p: ToolParams, call: Call) -> ToolInfo:
    """Recipe metadata, platform support and the installed record of one tool."""
    return await s.installer.info(p.tool)


class PlanParams(msgspec.Struct, forbid_unknown_fields=True):
    tool: str | None = None  # a recipe's name (tool@version works too)
    recipe: str | None = None  # or a recipe's TOML text (tool then names its file)
    version: str | None = None
    platform: str | None = None  # os/arch; default: this machine's


@method("tools.plan", PlanParams)
async def tools_plan(s: Services, p: PlanParams, call: Call) -> dict[str, Any]:
    """The installation plan (tsuku's shape) for a tool or a recipe; installs nothing."""
    name, version = (
        (p.tool, p.version) if p.recipe is not None else split_spec(p.tool or "", p.version)
    )
    return await s.installer.plan(name, recipe_text=p.recipe, version=version, platform=p.platform)


@method("registry.update", NoParams)
async def registry_update(s: Services, p: NoParams, call: Call) -> RegistryUpdated:
    """Refetch the registry manifest and every cached recipe."""
    result = await s.installer.registry.update()
    s.hook_index.request_rebuild()  # the shell hook's index lists registry recipes
    return result


class ToolsParams(msgspec.Struct, forbid_unknown_fields=True):
    tools: list[str] = msgspec.field(default_factory=list)


@method("tools.outdated", ToolsParams)
async def tools_outdated(s: Services, p: ToolsParams, call: Call) -> ToolsChecked:
    """Installed tools (all, or ``tools``) against their newest release (cached)."""
    from tsukud.install.upgrades import outdated

    return ToolsChecked(await outdated(s.installer, p.tools))


@method("tools.remove_unused", ToolsParams)
async def tools_remove_unused(s: Services, p: ToolsParams, call: Call) -> UnusedRemoved:
    """``tsukuctl remove --unused``: of ``tools`` (the hidden toolchains the person was
    shown), remove those no installed tool uses still; the others are kept."""
    return await s.installer.remove_unused(p.tools)


class UpgradeParams(msgspec.Struct, forbid_unknown_fields=True):
    tools: list[str] = msgspec.field(default_factory=list)
    all: bool = False


@method("tools.upgrade", UpgradeParams)
async def tools_upgrade(s: Services, p: UpgradeParams, call: Call) -> Upgrades:
    """Install the newest release of each outdated tool; install progress frames."""
    from tsukud.install.upgrades import upgrade

    return await upgrade(s.installer, p.tools, every=p.all, progress=call.progress)
