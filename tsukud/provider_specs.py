"""The LLM providers, as data: one :class:`ProviderSpec` row each (:data:`LLM_PROVIDERS`).

What the settings (``config.py``), the client (doctor, ``llm --provider``, the demo),
the caller's environment (``caller_env.py``: the variables that carry a provider's key
and URL travel with each request) and ``llm/providers.py`` (the adapters, search
strategy, fees) know of a provider is read from its row here. Adding a provider is its
row here, its adapter module in ``llm/`` and its prices in ``llm/prices.toml``
(docs/architecture.md, "Where a new thing goes").

Stdlib only, nothing imported: ``tsukuctl status`` loads this through ``caller_env``
on the shell hook's hot path, where neither ``dataclasses`` nor ``msgspec`` may load.
"""

from __future__ import annotations


class ProviderSetting:
    """One setting of a provider (its model or its URL): the dotted name, the default,
    the variables read for it in order, and what ``tsukuctl config list`` says of it."""

    __slots__ = ("default", "doc", "env", "name")

    name: str
    default: str
    env: tuple[str, ...]
    doc: str

    def __init__(self, name: str, default: str, env: tuple[str, ...], doc: str = "") -> None:
        self.name, self.default, self.env, self.doc = name, default, env, doc


class ProviderSpec:
    """One LLM provider, as data: what the settings, the client, the service, ``llm
    status``, discovery and the pipeline know of it. Plain ``__slots__`` rather than a
    dataclass or a Struct: the client loads this module, and neither ``dataclasses``
    (which imports ``re`` and ``inspect``) nor ``msgspec`` may load there."""

    __slots__ = (
        "adapter",
        "adapter_module",
        "default_model",
        "default_url",
        "key_env",
        "key_env_setting",
        "key_required",
        "key_setting",
        "model",
        "model_setting",
        "name",
        "priced",
        "sdk_deprecations",
        "search",
        "search_tool",
        "slow_import",
        "tag",
        "two_step_models",
        "url",
        "url_setting",
        "vendor",
    )

    name: str  # ``llm.provider``, ``--provider``, its breaker, the ledger's ``provider``
    tag: str  # what its responses carry as ``provider`` (llm/types.py): who produced a block
    vendor: str  # whose key and API, in words: "the Anthropic key", "deprecated by Anthropic"
    adapter: str  # "module:Class", imported when first built (llm/providers.py)
    adapter_module: str
    model: ProviderSetting  # ``llm.<x>_model``
    model_setting: str
    default_model: str
    url: ProviderSetting  # its API's base URL
    url_setting: str
    default_url: str
    key_setting: str  # the ``secrets.*`` setting holding its key
    key_env: tuple[str, ...]  # the variables that carry the key, in the order they are read
    key_env_setting: str | None  # ``llm.<name>.api_key_env``: one more, read before those
    key_required: bool  # False: a key is sent only when one is set (a local server)
    # Discovery's web search: "server" (the provider searches inside the request that
    # extracts), "grounded" (Google Search grounding: server-side, billed per grounded
    # prompt, and two successive requests for ``two_step_models``), "client" (tsuku's
    # own search tool).
    search: str
    two_step_models: str | None  # a regular expression: models that cannot ground and call
    # tools at once
    priced: bool  # False: self-hosted, no per-token price
    slow_import: bool  # its SDK takes seconds to import: import off the event loop
    search_tool: str  # the ledger's name for the searches it ran itself (``tool.called``)
    # The SDK module whose ``DEPRECATED_MODELS`` lists the models it deprecates (read
    # from its file alone, ``llm/pricing.py``: importing the SDK takes seconds; its
    # adapter module's ``deprecated_models`` when that file is gone): a run or ``llm
    # status`` on one warns, naming this provider's default. ``None``: no such list.
    sdk_deprecations: str | None

    def __init__(
        self,
        *,
        name: str,
        tag: str,
        vendor: str,
        adapter: str,
        model: ProviderSetting,
        url: ProviderSetting,
        key_setting: str,
        key_env: tuple[str, ...],
        key_env_setting: str | None = None,
        key_required: bool = True,
        search: str = "client",
        two_step_models: str | None = None,
        priced: bool = True,
        slow_import: bool = False,
        search_tool: str = "web_search",
        sdk_deprecations: str | None = None,
    ) -> None:
        self.name, self.tag, self.vendor, self.adapter = name, tag, vendor, adapter
        self.model, self.url = model, url
        # Read everywhere by these names (the spec's settings and defaults):
        self.model_setting, self.default_model = model.name, model.default
        self.url_setting, self.default_url = url.name, url.default
        self.adapter_module = adapter.partition(":")[0]
        self.key_setting, self.key_env, self.key_env_setting = key_setting, key_env, key_env_setting
        self.key_required, self.search, self.two_step_models = key_required, search, two_step_models
        self.priced, self.slow_import, self.search_tool = priced, slow_import, search_tool
        self.sdk_deprecations = sdk_deprecations

    def __repr__(self) -> str:
        return f"ProviderSpec({self.name!r})"

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
        if self.two_step_models:
            import re  # not at import: the client loads this module and never asks

            if re.match(self.two_step_models, model):
                return "two_step"
        return "server"


#: The LLM providers, in the service's default order.
LLM_PROVIDERS: tuple[ProviderSpec, ...] = (
    ProviderSpec(
        name="claude",
        tag="anthropic",
        vendor="Anthropic",
        adapter="tsukud.llm.claude:ClaudeProvider",
        model=ProviderSetting("llm.claude_model", "claude-sonnet-5-5", ("TSUKU_CLAUDE_MODEL",)),
        url=ProviderSetting(
            "llm.anthropic_base_url", "https://api.anthropic.com", ("ANTHROPIC_BASE_URL",)
        ),
        key_setting="secrets.anthropic_api_key",
        key_env=("ANTHROPIC_API_KEY",),
        key_env_setting="llm.claude.api_key_env",
        search="server",
        slow_import=True,
        sdk_deprecations="anthropic._data.deprecated_models",
    ),
    ProviderSpec(
        name="gemini",
        tag="gemini",
        vendor="Gemini",
        adapter="tsukud.llm.gemini:GeminiProvider",
        model=ProviderSetting("llm.gemini_model", "gemini-3.8-flash", ("TSUKU_GEMINI_MODEL",)),
        url=ProviderSetting(
            "llm.gemini_base_url",
            "https://generativelanguage.googleapis.com",
            ("TSUKU_GEMINI_BASE_URL",),
        ),
        key_setting="secrets.google_api_key",
        key_env=("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        key_env_setting="llm.gemini.api_key_env",
        search="grounded",
        two_step_models=r"(models/)?gemini-[12]\.",
        search_tool="google_search",
        slow_import=True,
    ),
    ProviderSpec(
        name="local",
        tag="openai_compat",
        vendor="OpenAI-compatible",
        adapter="tsukud.llm.openai_compat:OpenAICompatProvider",
        model=ProviderSetting(
            "llm.local_model",
            "llama3.2",
            ("TSUKU_LOCAL_MODEL",),
            "model name on the local OpenAI-compatible server",
        ),
        url=ProviderSetting(
            "llm.openai_base_url",
            "",
            ("TSUKU_OPENAI_BASE_URL",),
            "local OpenAI-compatible server, e.g. http://127.0.0.1:11434",
        ),
        key_setting="secrets.openai_api_key",
        key_env=("TSUKU_OPENAI_API_KEY",),
        key_required=False,
        priced=False,
    ),
)

#: The variables that carry the providers' keys, each provider's in order.
LLM_KEY_ENV: tuple[str, ...] = tuple(e for p in LLM_PROVIDERS for e in p.key_env)
