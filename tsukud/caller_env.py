"""The caller's environment that travels with each request (schema/rpc.md, "env").

A daemon keeps the environment it was started with; the user's shell moves on
(``export GITHUB_TOKEN=…``, a one-off ``TSUKU_LLM_DAILY_BUDGET=1 tsukuctl status``).
So ``tsukuctl`` sends the variables below with every request and the daemon applies
them to that request only, above the config file and its own environment. Only these
names are sent and only these are read: nothing else of the caller's environment
(``PATH``, ``LD_PRELOAD``, ``HOME``) can reach the daemon this way. The home itself is
not a setting: it picks the daemon (``paths.socket_path``) and each request names it.

Stdlib only and tiny: the client builds this on every call, on the hook's hot path.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Every variable a request may carry. Each setting's variables (``config.KEYS``; a
#: test holds the two together), the credentials and endpoints of the services tsuku
#: talks to, the container runtime and the proxies.
ALLOWLIST: tuple[str, ...] = (
    # settings
    "TSUKU_LLM_DAILY_BUDGET",
    "TSUKU_LLM_CONFIRM_THRESHOLD",
    "TSUKU_LLM_HOURLY_LIMIT",
    "TSUKU_LLM_PROVIDER",
    "TSUKU_LLM_ONLY_PROVIDER",
    "TSUKU_CLAUDE_MODEL",
    "TSUKU_GEMINI_MODEL",
    "TSUKU_LOCAL_MODEL",
    "TSUKU_LLM_PRICES_FILE",
    "TSUKU_LLM_RECORD_DIR",
    "TSUKU_LLM_REPLAY_DIR",
    "TSUKU_BREAKER_FAILURES",
    "TSUKU_BREAKER_RESET_SECONDS",
    "TSUKU_SANDBOX_MAX_CONCURRENT",
    "TSUKU_SANDBOX_IMAGE",
    "TSUKU_MAX_DOWNLOAD_MB",
    "TSUKU_DISCOVER_TIMEOUT",
    "TSUKU_DISCOVER_ECOSYSTEM_TIMEOUT",
    "TSUKU_DISCOVER_MAX_SEARCHES",
    "TSUKU_SEARCH_PROVIDER",
    "TSUKU_SEARCH_BACKOFF",
    "TSUKU_TAVILY_SEARCH_USD",
    "TSUKU_BRAVE_SEARCH_USD",
    "TSUKU_LOG_LEVEL",
    # endpoints
    "TSUKU_GITHUB_API_URL",
    "TSUKU_GITHUB_URL",
    "TSUKU_REGISTRY_URL",
    "TSUKU_MANIFEST_URL",
    "ANTHROPIC_BASE_URL",
    "TSUKU_GEMINI_BASE_URL",
    "TSUKU_OPENAI_BASE_URL",
    "TSUKU_CRATES_URL",
    "TSUKU_NPM_URL",
    "TSUKU_NPM_DOWNLOADS_URL",
    "TSUKU_PYPI_URL",
    "TSUKU_RUBYGEMS_URL",
    "TSUKU_GOPROXY_URL",
    "TSUKU_DDG_URL",
    "TSUKU_TAVILY_URL",
    "TSUKU_BRAVE_URL",
    # credentials (never logged, evented or stored: redacted while the request runs)
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "TSUKU_OPENAI_API_KEY",
    "TAVILY_API_KEY",
    "BRAVE_API_KEY",
    # the container runtime and the network
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

_ALLOWED = frozenset(ALLOWLIST)

#: Longest value accepted for one variable: far beyond any token, URL or number.
MAX_VALUE = 4096


def collect(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allowlisted variables set (non-empty) in ``environ`` (default: ours)."""
    environ = os.environ if environ is None else environ
    return {name: value for name in ALLOWLIST if (value := environ.get(name))}


def accept(sent: Mapping[str, str]) -> dict[str, str]:
    """What the daemon takes of a request's ``env``: allowlisted names with values of a
    sane length; anything else is ignored (a newer client may send more)."""
    return {
        name: value
        for name, value in sent.items()
        if name in _ALLOWED and value and len(value) <= MAX_VALUE
    }
