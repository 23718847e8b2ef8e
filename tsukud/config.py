"""Settings: flags → environment → ``$TSUKU_HOME/config.toml`` → defaults.

One table of known keys (``KEYS``) drives parsing, precedence, ``tsukuctl config`` and
redaction, so a new setting is one line here. The config file may hold API keys, so a
file that others can read is refused outright rather than silently used: the fix is one
``chmod`` and we say which.
"""

from __future__ import annotations

import os
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tsukud import paths
from tsukud.errors import ConfigError, UsageError
from tsukud.fsutil import write_atomic

_MISSING = object()


@dataclass(frozen=True)
class Key:
    name: str  # dotted: "llm.daily_budget" is [llm] daily_budget
    kind: type  # float, int, str, bool
    default: Any
    env: tuple[str, ...] = ()
    secret: bool = False
    doc: str = ""
    minimum: float | None = None


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key(
            "llm.daily_budget",
            float,
            5.0,
            ("TSUKU_LLM_DAILY_BUDGET",),
            doc="USD the LLM may spend per UTC day",
            minimum=0,
        ),
        Key(
            "llm.confirm_threshold",
            float,
            0.50,
            ("TSUKU_LLM_CONFIRM_THRESHOLD",),
            doc="runs estimated above this many USD need a yes",
            minimum=0,
        ),
        Key(
            "llm.hourly_limit",
            int,
            10,
            ("TSUKU_LLM_HOURLY_LIMIT",),
            doc="recipe generations per rolling hour",
            minimum=0,
        ),
        Key(
            "llm.provider",
            str,
            "",
            ("TSUKU_LLM_PROVIDER",),
            doc="providers to try first, e.g. 'claude' or 'gemini,claude'; the others follow",
        ),
        Key(
            "llm.only_provider",
            bool,
            False,
            ("TSUKU_LLM_ONLY_PROVIDER",),
            doc="use only llm.provider's providers (or --provider's), never fail over to others",
        ),
        Key(
            "llm.claude.api_key_env",
            str,
            "",
            doc="environment variable holding the Anthropic key (before ANTHROPIC_API_KEY)",
        ),
        Key(
            "llm.gemini.api_key_env",
            str,
            "",
            doc="environment variable holding the Gemini key (before GOOGLE_API_KEY)",
        ),
        Key("llm.anthropic_base_url", str, "https://api.anthropic.com", ("ANTHROPIC_BASE_URL",)),
        Key(
            "llm.gemini_base_url",
            str,
            "https://generativelanguage.googleapis.com",
            ("TSUKU_GEMINI_BASE_URL",),
        ),
        Key(
            "llm.openai_base_url",
            str,
            "",
            ("TSUKU_OPENAI_BASE_URL",),
            doc="local OpenAI-compatible server, e.g. http://127.0.0.1:11434",
        ),
        Key("llm.claude_model", str, "claude-sonnet-5-5", ("TSUKU_CLAUDE_MODEL",)),
        Key("llm.gemini_model", str, "gemini-3.8-flash", ("TSUKU_GEMINI_MODEL",)),
        Key(
            "llm.local_model",
            str,
            "llama3.2",
            ("TSUKU_LOCAL_MODEL",),
            doc="model name on the local OpenAI-compatible server",
        ),
        Key(
            "llm.prices_file",
            str,
            "",
            ("TSUKU_LLM_PRICES_FILE",),
            doc="extra price rows (prices.toml format) taking precedence",
        ),
        Key(
            "llm.record_dir",
            str,
            "",
            ("TSUKU_LLM_RECORD_DIR",),
            doc="record every LLM request/response pair here",
        ),
        Key(
            "llm.replay_dir",
            str,
            "",
            ("TSUKU_LLM_REPLAY_DIR",),
            doc="serve LLM calls from recordings here (no network, no keys)",
        ),
        Key("breaker.failure_threshold", int, 3, ("TSUKU_BREAKER_FAILURES",), minimum=1),
        Key("breaker.reset_seconds", float, 60.0, ("TSUKU_BREAKER_RESET_SECONDS",), minimum=0),
        Key("sandbox.max_concurrent", int, 1, ("TSUKU_SANDBOX_MAX_CONCURRENT",), minimum=1),
        Key("sandbox.image", str, "tsuku/validate-debian:local", ("TSUKU_SANDBOX_IMAGE",)),
        Key("github.api_url", str, "https://api.github.com", ("TSUKU_GITHUB_API_URL",)),
        Key("github.url", str, "https://github.com", ("TSUKU_GITHUB_URL",)),
        Key("registry.url", str, "", ("TSUKU_REGISTRY_URL",)),
        Key(
            "registry.manifest_url",
            str,
            "",
            ("TSUKU_MANIFEST_URL",),
            doc="recipes.json listing the registry's recipes (default: tsuku's)",
        ),
        Key(
            "install.max_download_mb",
            int,
            2048,
            ("TSUKU_MAX_DOWNLOAD_MB",),
            minimum=1,
            doc="largest asset a download may be",
        ),
        Key(
            "discover.timeout_s",
            float,
            15.0,
            ("TSUKU_DISCOVER_TIMEOUT",),
            minimum=0.1,
            doc="time limit of one discovery (registry, ecosystems, web search, verification)",
        ),
        Key(
            "discover.ecosystem_timeout_s",
            float,
            3.0,
            ("TSUKU_DISCOVER_ECOSYSTEM_TIMEOUT",),
            minimum=0.1,
            doc="shared deadline of the parallel ecosystem probes",
        ),
        Key(
            "discover.max_searches",
            int,
            3,
            ("TSUKU_DISCOVER_MAX_SEARCHES",),
            minimum=1,
            doc="web searches one discovery may make (Claude's max_uses; local models)",
        ),
        Key(
            "discover.search_provider",
            str,
            "",
            ("TSUKU_SEARCH_PROVIDER",),
            doc="ddg, tavily or brave for local models (default: tavily/brave if keyed, else ddg)",
        ),
        Key(
            "discover.search_backoff_s",
            float,
            1.0,
            ("TSUKU_SEARCH_BACKOFF",),
            minimum=0,
            doc="first retry delay when a search provider rate-limits (doubles per retry)",
        ),
        Key(
            "discover.tavily_search_usd",
            float,
            0.008,
            ("TSUKU_TAVILY_SEARCH_USD",),
            minimum=0,
            doc="price of one Tavily search (basic: 1 credit), charged to the budget",
        ),
        Key(
            "discover.brave_search_usd",
            float,
            0.005,
            ("TSUKU_BRAVE_SEARCH_USD",),
            minimum=0,
            doc="price of one Brave Search API query, charged to the budget",
        ),
        Key("discover.crates_url", str, "https://crates.io", ("TSUKU_CRATES_URL",)),
        Key("discover.npm_url", str, "https://registry.npmjs.org", ("TSUKU_NPM_URL",)),
        Key(
            "discover.npm_downloads_url",
            str,
            "https://api.npmjs.org",
            ("TSUKU_NPM_DOWNLOADS_URL",),
        ),
        Key("discover.pypi_url", str, "https://pypi.org", ("TSUKU_PYPI_URL",)),
        Key("discover.rubygems_url", str, "https://rubygems.org", ("TSUKU_RUBYGEMS_URL",)),
        Key("discover.goproxy_url", str, "https://proxy.golang.org", ("TSUKU_GOPROXY_URL",)),
        Key("discover.ddg_url", str, "https://html.duckduckgo.com/html/", ("TSUKU_DDG_URL",)),
        Key("discover.tavily_url", str, "https://api.tavily.com/search", ("TSUKU_TAVILY_URL",)),
        Key(
            "discover.brave_url",
            str,
            "https://api.search.brave.com/res/v1/web/search",
            ("TSUKU_BRAVE_URL",),
        ),
        Key("log.level", str, "info", ("TSUKU_LOG_LEVEL",)),
        Key("log.max_bytes", int, 10 * 1024 * 1024, (), minimum=4096),
        Key("log.backups", int, 5, (), minimum=0),
        Key("secrets.anthropic_api_key", str, "", ("ANTHROPIC_API_KEY",), secret=True),
        Key("secrets.google_api_key", str, "", ("GOOGLE_API_KEY", "GEMINI_API_KEY"), secret=True),
        Key("secrets.openai_api_key", str, "", ("TSUKU_OPENAI_API_KEY",), secret=True),
        Key("secrets.github_token", str, "", ("GITHUB_TOKEN", "GH_TOKEN"), secret=True),
        Key("secrets.tavily_api_key", str, "", ("TAVILY_API_KEY",), secret=True),
        Key("secrets.brave_api_key", str, "", ("BRAVE_API_KEY",), secret=True),
    )
}


# Names the design used, read as the setting they mean (shown as the setting's source).
ALIASES: dict[str, str] = {"llm.require_confirmation": "llm.confirm_threshold"}

# A secret read first from the environment variable another setting names.
KEY_ENV_SETTINGS: dict[str, str] = {
    "secrets.anthropic_api_key": "llm.claude.api_key_env",
    "secrets.google_api_key": "llm.gemini.api_key_env",
}


def key(name: str) -> Key:
    try:
        return KEYS[ALIASES.get(name, name)]
    except KeyError:
        raise UsageError(
            f"unknown setting {name!r}",
            hint="`tsukuctl config list` shows every setting.",
        ) from None


# Far beyond any real setting, and small enough that money in micro-dollars, byte counts
# and seconds stay exact integers and finite floats wherever they are used.
MAX_NUMBER = 10**15


def _shown_raw(raw: Any) -> str:
    try:
        text = repr(raw)
    except ValueError:  # an int too long for str()
        return f"a {type(raw).__name__} too large to show"
    return text if len(text) <= 60 else text[:57] + "..."


def coerce(k: Key, raw: Any, origin: str) -> Any:
    """Turn a raw value (TOML value or env/argv string) into the key's type."""
    try:
        if k.kind is bool:
            if isinstance(raw, bool):
                value: Any = raw
            elif str(raw).lower() in ("1", "true", "yes", "on"):
                value = True
            elif str(raw).lower() in ("0", "false", "no", "off", ""):
                value = False
            else:
                raise ValueError(raw)
        elif k.kind is int:
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError(raw)
            value = int(raw)
            if abs(value) > MAX_NUMBER:
                raise ValueError(raw)
        elif k.kind is float:
            if isinstance(raw, bool):
                raise ValueError(raw)
            value = float(raw)
            if not abs(value) <= MAX_NUMBER:  # also NaN and ±inf
                raise ValueError(raw)
        else:
            if not isinstance(raw, str):
                raise ValueError(raw)
            value = raw
    except (TypeError, ValueError, OverflowError):
        shown = "(hidden)" if k.secret else _shown_raw(raw)
        raise ConfigError(
            f"{origin}: {k.name} must be {k.kind.__name__}"
            + (f" of at most {MAX_NUMBER:.0e} in size" if k.kind in (int, float) else "")
            + f", got {shown}",
            hint=f"Fix it with `tsukuctl config set {k.name} <value>`.",
        ) from None
    if k.minimum is not None and value < k.minimum:
        raise ConfigError(
            f"{origin}: {k.name} must be at least {k.minimum}, got {value}",
            hint=f"Fix it with `tsukuctl config set {k.name} <value>`.",
        )
    return value


def check_file_mode(path: Path) -> None:
    st = path.stat()
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(
            f"{path} is readable by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
            "it may hold API keys, so tsuku refuses to use it",
            hint=f"Fix it with: chmod 600 {path}",
        )


def read_file(path: Path) -> dict[str, Any]:
    """The config file flattened to dotted keys; missing file → {}."""
    try:
        check_file_mode(path)
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        doc = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not valid TOML: {e}", hint=f"Fix or remove {path}.") from None
    flat: dict[str, Any] = {}
    for section, body in doc.items():
        if not isinstance(body, dict):
            raise ConfigError(
                f"{path}: top-level key {section!r} must be a table like [llm]",
                hint="See docs/config.md.",
            )
        _flatten(section, body, flat)
    aliased: dict[str, str] = {}
    for alias, name in ALIASES.items():
        if alias in flat:
            value = flat.pop(alias)
            if name not in flat:  # the setting's own name wins
                flat[name] = value
                aliased[name] = alias
    unknown = sorted(set(flat) - set(KEYS))
    if unknown:
        raise ConfigError(
            f"{path}: unknown setting(s) {', '.join(unknown)}",
            hint="`tsukuctl config list` shows every setting.",
        )
    if aliased:
        flat[_ALIASED] = aliased
    return flat


_ALIASED = "\0aliased"  # read_file's note of settings read under an alias


def _flatten(prefix: str, table: Mapping[str, Any], flat: dict[str, Any]) -> None:
    """``[llm.claude] api_key_env`` → ``llm.claude.api_key_env``; a table that is not
    a known setting's prefix stays a (refused) value."""
    for name, value in table.items():
        dotted = f"{prefix}.{name}"
        if isinstance(value, dict) and any(k.startswith(dotted + ".") for k in KEYS):
            _flatten(dotted, value, flat)
        else:
            flat[dotted] = value


@dataclass(frozen=True)
class Setting:
    key: Key
    value: Any
    source: str  # "flag", "env:NAME", "file", "default"


class Config:
    """Resolved settings. Immutable: a change produces a new Config."""

    def __init__(self, settings: Mapping[str, Setting], path: Path) -> None:
        self._settings = dict(settings)
        self.path = path

    def __getitem__(self, name: str) -> Any:
        return self._settings[key(name).name].value

    def setting(self, name: str) -> Setting:
        return self._settings[key(name).name]

    def settings(self) -> list[Setting]:
        return [self._settings[n] for n in sorted(self._settings)]

    def secret_values(self) -> list[str]:
        return [s.value for s in self._settings.values() if s.key.secret and s.value]


def resolve(
    *,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Config:
    env = os.environ if env is None else env
    path = Path(paths.config_path(env)) if path is None else path
    file_values = read_file(path)
    aliased: dict[str, str] = file_values.pop(_ALIASED, {})
    flags = flags or {}
    out: dict[str, Setting] = {}
    for name, k in KEYS.items():
        if name in flags and flags[name] is not None:
            out[name] = Setting(k, coerce(k, flags[name], "flag"), "flag")
            continue
        envs = k.env
        named_by = KEY_ENV_SETTINGS.get(name)
        if named_by is not None and out[named_by].value:
            envs = (out[named_by].value, *envs)
        env_name = next((e for e in envs if env.get(e)), None)
        if env_name is not None:
            out[name] = Setting(k, coerce(k, env[env_name], f"${env_name}"), f"env:{env_name}")
        elif name in file_values:
            source = f"file (as {aliased[name]})" if name in aliased else "file"
            out[name] = Setting(k, coerce(k, file_values[name], str(path)), source)
        else:
            out[name] = Setting(k, k.default, "default")
    return Config(out, path)


def write_value(path: Path, name: str, raw: Any) -> Any:
    """Set one key in the config file, atomically, keeping the file 0600."""
    import tomli_w

    k = key(name)
    value = None if raw is None else coerce(k, raw, "value")
    flat = read_file(path)
    flat.pop(_ALIASED, None)  # written back under the setting's own name
    if value is None:
        flat.pop(name, None)
    else:
        flat[name] = value
    doc: dict[str, Any] = {}
    for dotted in sorted(flat):
        *tables, leaf = dotted.split(".")
        table = doc
        for t in tables:
            table = table.setdefault(t, {})
        table[leaf] = flat[dotted]
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, tomli_w.dumps(doc), mode=0o600)  # may hold API keys
    return value
