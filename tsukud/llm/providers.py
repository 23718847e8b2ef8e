"""The LLM providers tsuku knows: one spec each.

A provider has a name (``llm.provider``, ``--provider``, its breaker, the ledger's
``provider``), a tag its responses carry (``llm.types``: who produced an opaque block),
an adapter module, the settings holding its model, URL and key, the way it searches the
web during discovery, and whether its calls are priced. ``config.py`` owns the settings
(their defaults and environment variables: a core module cannot read this one), and the
spec names them; the service (``llm/service.py``), ``llm status``, discovery
(``discover/llm_discovery.strategy_for``, ``discover/chain.py``) and create's pipeline
read the specs instead of naming providers.

Adding a provider is one spec here, its adapter module on ``llm/adapter.py``'s
``HttpAdapter``, its prices in ``llm/prices.toml`` and its settings in ``config.py``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tsukud.config import KEY_ENV_SETTINGS, KEYS

if TYPE_CHECKING:
    from tsukud.llm.provider import Provider


@dataclass(frozen=True)
class ProviderSpec:
    name: str  # "gemini"
    tag: str  # what its responses carry as ``provider`` (llm/types.py): "gemini"
    adapter: str  # "module:Class", imported when first built
    model_setting: str
    url_setting: str
    key_setting: str  # the ``secrets.*`` key
    key_required: bool  # False: a key is sent only when one is set (a local server)
    # Discovery's web search: "server" (the provider searches inside the request that
    # extracts), "grounded" (Google Search grounding: server-side, billed per grounded
    # prompt, and two successive requests for ``two_step_models``), "client" (tsuku's
    # own search tool).
    search: str
    two_step_models: str | None = None  # models that cannot ground and call tools at once
    priced: bool = True  # False: self-hosted, no per-token price
    slow_import: bool = False  # its SDK takes seconds to import: import off the event loop
    # The ledger's name for the searches it ran itself (``tool.called``).
    search_tool: str = "web_search"
    # Its SDK lists the models it deprecates (``llm/pricing.deprecation`` reads the
    # list): a run or ``llm status`` on one warns, naming this provider's default.
    sdk_deprecations: bool = False

    @property
    def adapter_module(self) -> str:
        return self.adapter.partition(":")[0]

    @property
    def default_model(self) -> str:
        default: str = KEYS[self.model_setting].default
        return default

    @property
    def default_url(self) -> str:
        default: str = KEYS[self.url_setting].default
        return default

    @property
    def key_env(self) -> tuple[str, ...]:
        """The variables that carry the key, in the order they are read."""
        return KEYS[self.key_setting].env

    @property
    def key_env_setting(self) -> str | None:
        """The setting naming one more variable, read before :attr:`key_env`."""
        return KEY_ENV_SETTINGS.get(self.key_setting)

    @property
    def server_search(self) -> bool:
        """Does it search the web itself (no paid search API of tsuku's is needed)?"""
        return self.search != "client"

    @property
    def grounded(self) -> bool:
        """Billed per grounded prompt (and query), not per search tool use."""
        return self.search == "grounded"

    def strategy(self, model: str) -> str:
        """``server``, ``two_step`` or ``client``: how discovery searches with ``model``."""
        if self.search == "client":
            return "client"
        if self.two_step_models and re.match(self.two_step_models, model):
            return "two_step"
        return "server"

    def adapter_class(self) -> type[Provider]:
        module, _, cls = self.adapter.partition(":")
        found: type[Provider] = getattr(importlib.import_module(module), cls)
        return found

    def build(self, *, key: str, model: str, base_url: str, proxy: str | None) -> Provider:
        """The adapter, configured (every adapter takes these by keyword)."""
        args: dict[str, Any] = {"model": model, "base_url": base_url, "proxy": proxy}
        args["api_key"] = key if key or self.key_required else None
        return self.adapter_class()(**args)


SPECS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        name="claude",
        tag="anthropic",
        adapter="tsukud.llm.claude:ClaudeProvider",
        model_setting="llm.claude_model",
        url_setting="llm.anthropic_base_url",
        key_setting="secrets.anthropic_api_key",
        key_required=True,
        search="server",
        slow_import=True,
        sdk_deprecations=True,
    ),
    ProviderSpec(
        name="gemini",
        tag="gemini",
        adapter="tsukud.llm.gemini:GeminiProvider",
        model_setting="llm.gemini_model",
        url_setting="llm.gemini_base_url",
        key_setting="secrets.google_api_key",
        key_required=True,
        search="grounded",
        two_step_models=r"(models/)?gemini-[12]\.",
        search_tool="google_search",
        slow_import=True,
    ),
    ProviderSpec(
        name="local",
        tag="openai_compat",
        adapter="tsukud.llm.openai_compat:OpenAICompatProvider",
        model_setting="llm.local_model",
        url_setting="llm.openai_base_url",
        key_setting="secrets.openai_api_key",
        key_required=False,
        search="client",
        priced=False,
    ),
)

BY_NAME: Mapping[str, ProviderSpec] = {s.name: s for s in SPECS}
BY_TAG: Mapping[str, ProviderSpec] = {s.tag: s for s in SPECS}
NAMES: tuple[str, ...] = tuple(s.name for s in SPECS)


def key_variables() -> str:
    """``ANTHROPIC_API_KEY or GOOGLE_API_KEY``: the first variable of every provider
    that needs a key, for a hint (``tsukuctl doctor`` names the same: a test holds it)."""
    names = [s.key_env[0] for s in SPECS if s.key_required]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def searches_itself(name: str | None) -> bool:
    """Whether provider ``name`` searches the web itself (an unknown name: no)."""
    s = BY_NAME.get(name or "")
    return s is not None and s.server_search


def lists_deprecations(name: str | None) -> bool:
    """Whether provider ``name``'s SDK lists deprecated models (an unknown name: no):
    only then is that list, in a heavy SDK, worth importing."""
    s = BY_NAME.get(name or "")
    return s is not None and s.sdk_deprecations


def name_of_tag(tag: str) -> str:
    """The provider's name for a response's ``provider`` tag (``anthropic`` → ``claude``)."""
    s = BY_TAG.get(tag)
    return s.name if s is not None else tag
