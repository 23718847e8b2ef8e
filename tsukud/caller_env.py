"""The caller's environment that travels with each request (schema/rpc.md, "env").

A daemon keeps the environment it was started with; the user's shell moves on
(``export GITHUB_TOKEN=…``, a one-off ``TSUKU_LLM_DAILY_BUDGET=1 tsukuctl status``).
So ``tsukuctl`` sends the variables below with every request and the daemon applies
them to that request only, above the config file and its own environment. Only these
names are sent and only these are read: nothing else of the caller's environment
(``LD_PRELOAD``, ``HOME``) can reach the daemon this way. The home itself is
not a setting: it picks the daemon (``paths.socket_path``) and each request names it.

``PATH`` travels too, but as a fact about the caller, never a setting: the daemon runs
nothing by it (its own PATH finds toolchains and programs), it only asks which system
commands a new binary in ``$TSUKU_HOME/bin`` would shadow in the caller's shell
(``install/shadowing.py``).

The LLM providers' table (:data:`LLM_PROVIDERS`, one :class:`ProviderSpec` each) lives
here too, as plain data: the variables that carry a provider's key and URL travel with
each request, and this is the one module the client, the settings (``config.py``) and
``llm/providers.py`` may all read without loading anything more (``tsukuctl status``
loads it anyway; a module of its own would be one more file on the hook's hot path).
Adding a provider is its row here, its adapter module in ``llm/`` and its prices in
``llm/prices.toml`` (docs/architecture.md, "Where a new thing goes").

Stdlib only and tiny: the client builds this on every call, on the hook's hot path.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Every ``TSUKU_*`` variable is sent: the settings' variables (``config.KEYS``) are
#: named so, and a setting added there needs no change here.
PREFIX = "TSUKU_"
#: Except these: where the daemon is. The client chose its daemon by them, and names
#: its home in the request itself.
NOT_SENT = frozenset({"TSUKU_HOME", "TSUKU_SOCKET"})


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
    # Its SDK lists the models it deprecates (its adapter module's ``deprecated_models``):
    # a run or ``llm status`` on one warns, naming this provider's default.
    sdk_deprecations: bool

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
        sdk_deprecations: bool = False,
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
        sdk_deprecations=True,
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

#: And these, named by the services tsuku talks to (a test holds every setting's
#: variable to ``PREFIX`` or this list).
NAMES: tuple[str, ...] = (
    # credentials (never logged, evented or stored: redacted while the request runs)
    "GITHUB_TOKEN",
    "GH_TOKEN",
    *(e for e in LLM_KEY_ENV if not e.startswith(PREFIX)),
    "TAVILY_API_KEY",
    "BRAVE_API_KEY",
    # endpoints
    *(e for p in LLM_PROVIDERS for e in p.url.env if not e.startswith(PREFIX)),
    "DOCKER_HOST",
    "HTTPS_PROXY",
    "https_proxy",
    "HTTP_PROXY",
    "http_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
)

_NAMES = frozenset(NAMES)

#: Facts about the caller that are no setting (:func:`allowed` is false for them, so a
#: detached start keeps the daemon's own): which commands its shell finds.
FACTS = frozenset({"PATH"})

#: ``TSUKU_*`` variables tsukud reads from its own environment only (not per request):
#: a detached start keeps them, as a request could not bring them.
DAEMON_ONLY = frozenset({"TSUKU_DEBIAN_MIRROR", "TSUKU_LAUNCHD"})

#: Longest value accepted for one variable: far beyond any token, URL or number.
MAX_VALUE = 4096
#: A PATH may be longer (Nix profiles, many SDKs).
MAX_FACT_VALUE = 65536


def allowed(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a request may carry the variable ``name`` (``extra``: the key variables
    the config file names)."""
    return name in _NAMES or name in extra or (name.startswith(PREFIX) and name not in NOT_SENT)


def carried(name: str, extra: frozenset[str] = frozenset()) -> bool:
    """Whether a request carries ``name``: an allowed setting variable or a fact."""
    return name in FACTS or allowed(name, extra)


def key_env_names(config_file: str) -> frozenset[str]:
    """The variables ``config_file`` names with ``api_key_env``. The client reads them
    itself, since only it knows its shell. Read line by line, not with tomllib (whose
    import costs more than the rest of ``tsukuctl status``): every ``…api_key_env =
    "NAME"`` line counts, whatever its table, because sending more is harmless: the
    daemon takes only the names its own settings give. A file it cannot read names
    none (the daemon reports what is wrong with it)."""
    try:
        with open(config_file, "rb") as f:
            data = f.read()
    except OSError:
        return frozenset()
    if b"api_key_env" not in data:
        return frozenset()
    names: set[str] = set()
    for line in data.decode(errors="replace").splitlines():
        key, eq, value = line.partition("=")
        key = key.strip().strip("\"'")
        if not eq or "#" in key or not key.endswith("api_key_env"):
            continue
        value = value.split("#", 1)[0].strip()
        name = value[1:-1] if len(value) > 2 and value[0] == value[-1] in "\"'" else ""
        if name.isascii() and name.replace("_", "").isalnum():
            names.add(name)
    return frozenset(names)


def collect(
    environ: Mapping[str, str] | None = None, extra: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The carried variables set (non-empty) in ``environ`` (default: ours)."""
    environ = os.environ if environ is None else environ
    return {name: value for name, value in environ.items() if value and carried(name, extra)}


def daemon_environ(
    environ: Mapping[str, str] | None = None, extra: frozenset[str] = frozenset()
) -> dict[str, str]:
    """The environment to start a detached daemon with: ``environ`` (default: ours) less
    the per-request names. A daemon outlives the command that started it; a one-off
    ``TSUKU_LLM_DAILY_BUDGET=1 tsukuctl status`` or an exported token must not become
    every later request's. The starting request loses nothing: it carries them itself."""
    environ = os.environ if environ is None else environ
    return {
        name: value
        for name, value in environ.items()
        if not allowed(name, extra) or name in DAEMON_ONLY
    }


def accept(sent: Mapping[str, str], extra: frozenset[str] = frozenset()) -> dict[str, str]:
    """What the daemon takes of a request's ``env``: allowed names (``extra``: the key
    variables its config names) and facts, with values of a sane length; anything else
    is ignored (a newer client may send more)."""
    return {
        name: value
        for name, value in sent.items()
        if value
        and len(value) <= (MAX_FACT_VALUE if name in FACTS else MAX_VALUE)
        and carried(name, extra)
    }
