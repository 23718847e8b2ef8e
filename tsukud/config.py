"""Settings: flags → environment → ``$TSUKU_HOME/config.toml`` → defaults.

One table of known keys (``KEYS``) drives parsing, precedence, ``tsukuctl config`` and
redaction, so a new setting is one line here. The config file may hold API keys, so a
file that others can read is refused outright rather than silently used: the fix is one
``chmod`` and we say which.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tsukud import paths
from tsukud.errors import ConfigError, UsageError
from tsukud.fsutil import write_atomic
from tsukud.provider_specs import LLM_PROVIDERS, ProviderSpec
from tsukud.registries.ecosystems import URL_SETTINGS

_MISSING = object()
GiB = 1024**3

#: What one validation container may take: its hard memory limit and its CPU ceiling.
#: The sandbox applies them (``sandbox/runtime.py``'s ``RunSpec``) and the default of
#: ``sandbox.max_concurrent`` is derived from them, so they are written here once.
CONTAINER_MEMORY_BYTES = 2 * GiB
CONTAINER_CPUS = 2


def host_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, else the machine's)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def host_memory_bytes() -> int | None:
    """Physical memory, or None when the system does not say."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        return None


def derive_max_concurrent(cpus: int, memory_bytes: int | None) -> tuple[int, str]:
    """How many validation containers may run at once, and why, when no one said.

    ``max(1, min(cpus, memory // 2 GiB))``. Memory is the hard bound: a container is
    killed when it passes its 2 GiB, so no more run than the memory holds at their
    limit. CPUs bound them at one container per CPU, not per two: the 2-CPU limit is a
    ceiling, not a reservation, and a validation spends much of its time waiting
    (starting the container, downloading, extracting, the tool's ``--version``), so
    on 2 cores two validations overlap where one would leave a core idle, and the
    kernel shares the cores when both are busy. Never fewer than one.
    """
    by_memory = cpus if memory_bytes is None else memory_bytes // CONTAINER_MEMORY_BYTES
    value = max(1, min(cpus, by_memory))
    memory = "memory unknown" if memory_bytes is None else f"{memory_bytes / GiB:.1f} GiB memory"
    return value, f"derived ({cpus} CPUs, {memory})"


def _key_env_doc(p: ProviderSpec) -> str:
    """What ``llm.<name>.api_key_env`` is, in ``config list``'s words."""
    return f"environment variable holding the {p.vendor} key (before {p.key_env[0]})"


# Examples in the docs of settings that name providers, from the providers' table:
# ``'a' or 'b,a'`` (the first two, in the service's order) and the
# providers whose own search tool ``discover.max_searches`` bounds (``max_uses``).
_NAMES = [p.name for p in LLM_PROVIDERS]
_EXAMPLE_ORDER = f"'{_NAMES[0]}' or '{','.join(reversed(_NAMES[:2]))}'"
_MAX_USES = ", ".join(
    f"{p.name.capitalize()}'s max_uses" for p in LLM_PROVIDERS if p.search == "server"
)


@dataclass(frozen=True)
class Key:
    name: str  # dotted: "llm.daily_budget" is [llm] daily_budget
    kind: type  # float, int, str, bool
    default: Any
    env: tuple[str, ...] = ()
    secret: bool = False
    doc: str = ""
    minimum: float | None = None
    # A default that depends on the machine: (value, source) computed when the settings
    # are resolved and shown with that source; ``default`` stays the documented floor.
    derive: Callable[[], tuple[Any, str]] | None = None

    def default_setting(self) -> tuple[Any, str]:
        """The default value and its source: ``default``, or the derivation's."""
        return self.derive() if self.derive is not None else (self.default, "default")


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
            doc=f"providers to try first, e.g. {_EXAMPLE_ORDER}; the others follow",
        ),
        Key(
            "llm.only_provider",
            bool,
            False,
            ("TSUKU_LLM_ONLY_PROVIDER",),
            doc="use only llm.provider's providers (or --provider's), never fail over to others",
        ),
        # The LLM providers' settings: one row each in provider_specs.LLM_PROVIDERS (which the
        # client, carrying their key variables, reads too).
        *(
            Key(p.key_env_setting, str, "", doc=_key_env_doc(p))
            for p in LLM_PROVIDERS
            if p.key_env_setting is not None
        ),
        *(Key(p.url.name, str, p.url.default, p.url.env, doc=p.url.doc) for p in LLM_PROVIDERS),
        *(
            Key(p.model.name, str, p.model.default, p.model.env, doc=p.model.doc)
            for p in LLM_PROVIDERS
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
        Key(
            "batch.lease_seconds",
            float,
            120.0,
            ("TSUKU_BATCH_LEASE_SECONDS",),
            minimum=1,
            doc="how long a batch job's lease holds without a renewal (read at daemon start)",
        ),
        Key(
            "policy.hold_lease_seconds",
            float,
            300.0,
            ("TSUKU_POLICY_HOLD_LEASE_SECONDS",),
            minimum=1,
            doc="on a shared ledger: how long a daemon silent (killed, paused, cut off) keeps "
            "its budget holds before another daemon settles them at their worst case",
        ),
        Key(
            "rpc.idle_timeout_seconds",
            float,
            300.0,
            ("TSUKU_RPC_IDLE_TIMEOUT",),
            minimum=0,
            doc="close a client connection idle this long with nothing running (0: never)",
        ),
        Key(
            "events.summary_timeout_seconds",
            float,
            5.0,
            ("TSUKU_EVENTS_SUMMARY_TIMEOUT",),
            minimum=0,
            doc="interrupt an events summary that has held a ledger reader this long, so a "
            "summary the rollups cannot answer never holds one for long (0: never)",
        ),
        Key(
            "ledger.url",
            str,
            "",
            ("TSUKU_LEDGER_URL",),
            secret=True,  # it may carry the role's password
            doc="a shared ledger in PostgreSQL, postgresql://ROLE:PASSWORD@HOST/DB "
            "(empty: SQLite in TSUKU_HOME); read at daemon start",
        ),
        Key(
            "ledger.anchor_seconds",
            float,
            600.0,
            ("TSUKU_LEDGER_ANCHOR_SECONDS",),
            minimum=0,
            doc="a shared ledger: record every daemon's chain head this often, and at a "
            "clean stop (0: only at stop)",
        ),
        Key(
            "sandbox.max_concurrent",
            int,
            1,
            ("TSUKU_SANDBOX_MAX_CONCURRENT",),
            minimum=1,
            doc="container validations at once (default: derived from CPUs and memory)",
            derive=lambda: derive_max_concurrent(host_cpus(), host_memory_bytes()),
        ),
        Key("sandbox.image", str, "tsuku/validate-debian:local", ("TSUKU_SANDBOX_IMAGE",)),
        Key(
            "sandbox.docker_host",
            str,
            "",
            ("DOCKER_HOST",),
            doc="container runtime endpoint (default: the usual Docker and Podman sockets)",
        ),
        Key(
            "net.https_proxy",
            str,
            "",
            ("https_proxy", "HTTPS_PROXY"),
            doc="proxy for https requests, http://HOST:PORT (tsukud/net/proxy.py)",
        ),
        Key("net.http_proxy", str, "", ("http_proxy", "HTTP_PROXY"), doc="proxy for http requests"),
        Key(
            "net.all_proxy",
            str,
            "",
            ("all_proxy", "ALL_PROXY"),
            doc="proxy for requests the two above do not cover",
        ),
        Key(
            "net.no_proxy",
            str,
            "",
            ("no_proxy", "NO_PROXY"),
            doc="hosts that go direct: names (and their subdomains), IPs, CIDRs, *",
        ),
        Key(
            "net.per_host_concurrency",
            int,
            8,
            ("TSUKU_NET_PER_HOST_CONCURRENCY",),
            minimum=1,
            doc="requests in flight to one host at once",
        ),
        Key(
            "net.per_host_interval_ms",
            int,
            0,
            ("TSUKU_NET_PER_HOST_INTERVAL_MS",),
            minimum=0,
            doc="least time between the starts of two requests to one host (0: none)",
        ),
        Key("github.api_url", str, "https://api.github.com", ("TSUKU_GITHUB_API_URL",)),
        Key("github.url", str, "https://github.com", ("TSUKU_GITHUB_URL",)),
        Key("registry.url", str, "", ("TSUKU_REGISTRY_URL",)),
        Key(
            "homebrew.api_url",
            str,
            "https://formulae.brew.sh",
            ("TSUKU_HOMEBREW_API_URL",),
            doc="the Homebrew formulae JSON API (versions of homebrew recipes)",
        ),
        Key(
            "homebrew.registry_url",
            str,
            "https://ghcr.io",
            ("TSUKU_HOMEBREW_REGISTRY_URL",),
            doc="the registry serving Homebrew bottles (token, index, manifests, blobs)",
        ),
        Key(
            "cpan.mirror_url",
            str,
            "https://www.cpan.org",
            ("TSUKU_CPAN_MIRROR_URL",),
            doc="the CPAN mirror cpan_install steps fetch distributions from (its "
            "modules/02packages.details.txt.gz and authors/id/)",
        ),
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
            "render.chromium",
            str,
            "",
            ("TSUKU_CHROMIUM",),
            doc="browser engine that decides a page's visible text (default: chromium, "
            "chromium-browser or google-chrome on PATH)",
        ),
        Key(
            "render.timeout_s",
            float,
            20.0,
            ("TSUKU_RENDER_TIMEOUT",),
            minimum=0.5,
            doc="longest one page's rendering may take before the HTML stripper stands in",
        ),
        Key(
            "discover.timeout_s",
            float,
            90.0,
            ("TSUKU_DISCOVER_TIMEOUT",),
            minimum=0.1,
            doc="machine-time limit of one discovery, all stages (waiting for you not counted)",
        ),
        Key(
            "discover.registry_timeout_s",
            float,
            5.0,
            ("TSUKU_DISCOVER_REGISTRY_TIMEOUT",),
            minimum=0.1,
            doc="time limit of discovery's registry stage (recipe and discovery entry)",
        ),
        Key(
            "discover.llm_timeout_s",
            float,
            60.0,
            ("TSUKU_DISCOVER_LLM_TIMEOUT",),
            minimum=0.1,
            doc="machine-time limit of discovery's web search with an LLM (5 turns)",
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
            doc=f"web searches one discovery may make ({_MAX_USES}; local models)",
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
        # The ecosystems' registries (and a second URL some have: download counts, an index): one
        # record each in registries/ecosystems.py, which discovery and install read too.
        *(Key(u.key, str, u.default, (u.env,), doc=u.doc) for u in URL_SETTINGS),
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
        *(Key(p.key_setting, str, "", p.key_env, secret=True) for p in LLM_PROVIDERS),
        Key("secrets.github_token", str, "", ("GITHUB_TOKEN", "GH_TOKEN"), secret=True),
        Key("secrets.tavily_api_key", str, "", ("TAVILY_API_KEY",), secret=True),
        Key("secrets.brave_api_key", str, "", ("BRAVE_API_KEY",), secret=True),
    )
}


#: The variables that hold secrets: redacted wherever a request carries them.
SECRET_ENV: frozenset[str] = frozenset(e for k in KEYS.values() if k.secret for e in k.env)

# Names the design used, read as the setting they mean (shown as the setting's source).
ALIASES: dict[str, str] = {"llm.require_confirmation": "llm.confirm_threshold"}

# A secret read first from the environment variable another setting names.
KEY_ENV_SETTINGS: dict[str, str] = {
    p.key_setting: p.key_env_setting for p in LLM_PROVIDERS if p.key_env_setting is not None
}


def key(name: str) -> Key:
    try:
        return KEYS[ALIASES.get(name, name)]
    except KeyError:
        import difflib

        near = difflib.get_close_matches(name, [*KEYS, *ALIASES], n=1)
        raise UsageError(
            f"unknown setting {name!r}" + (f" (did you mean {near[0]}?)" if near else ""),
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


def kind_of(k: Key) -> tuple[str, str, str]:
    """What a value of ``k`` is, in words a user knows, examples of it, and one value to
    show in a command (``config set``'s messages; the daemon's too)."""
    if k.kind is bool:
        return "true or false", "(or yes/no, on/off, 1/0)", "true"
    if k.kind is int:
        return "a whole number", "(e.g. 10)", "10"
    if k.kind is float:
        if "USD" in k.doc or k.name.endswith("_usd") or k.name == "llm.daily_budget":
            return "a number of dollars", "(e.g. 5 or 2.50)", "2.50"
        if "seconds" in k.name or k.name.endswith("_timeout_s"):
            return "a number of seconds", "(e.g. 30 or 2.5)", "30"
        return "a number", "(e.g. 3 or 2.5)", "3"
    if k.name.endswith("_url"):
        return "a URL in quotes", '(e.g. "https://example.com")', "https://example.com"
    if k.name.endswith(("_dir", "_file")):
        return "a path in quotes", '(e.g. "~/tsuku/files")', "~/tsuku/files"
    return "text in quotes", '(e.g. "value")', "value"


def _too_large(k: Key, raw: Any) -> str:
    """A number past ``MAX_NUMBER`` is refused for its size, not its type: say so."""
    if k.kind not in (int, float) or isinstance(raw, bool):
        return ""
    try:
        number = float(raw)
    except (TypeError, ValueError, OverflowError):
        return ""
    return f" of at most {MAX_NUMBER:.0e}" if abs(number) > MAX_NUMBER else ""


def _where(origin: str) -> str:
    """The value's origin before a message; none for the value a command was just given."""
    return "" if origin == "value" else f"{origin}: "


def _fix(k: Key, origin: str) -> str:
    """The fix for a bad value, where it came from: the command, the variable, the file."""
    what, _, example = kind_of(k)
    if origin == "value":
        return f"Give {what}, e.g. `tsukuctl config set {k.name} {example}`."
    if origin.startswith("$"):
        return f"Set {origin} to {what} (e.g. {example}), or unset it."
    if origin == "flag":
        return f"Pass {what} (e.g. {example})."
    return (
        f"Edit it with `tsukuctl config edit`, or run `tsukuctl config set {k.name} "
        f"{example}` (or `tsukuctl config unset {k.name}` for the default)."
    )


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
        what, examples, _ = kind_of(k)
        raise ConfigError(
            f"{_where(origin)}{k.name} must be {what}{_too_large(k, raw)} {examples}, got {shown}",
            hint=_fix(k, origin),
        ) from None
    if k.minimum is not None and value < k.minimum:
        what, examples, _ = kind_of(k)
        raise ConfigError(
            f"{_where(origin)}{k.name} must be {what} of at least {k.minimum:g} {examples}, "
            f"got {value}",
            hint=_fix(k, origin),
        )
    return value


def file_stamp(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when the file does (inode, size, mtime, mode): one ``stat`` per
    request tells the daemon whether to read the file again. The mode is part of it
    because a ``chmod 600`` (the fix for a file others can read) changes nothing else."""
    try:
        st = os.stat(path)  # not Path.stat: this runs before every request
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def changed_settings(old: Config, new: Config) -> list[Setting]:
    """The settings of ``new`` whose value or source differs from ``old``'s."""
    before = {s.key.name: (s.value, s.source) for s in old.settings()}
    return [s for s in new.settings() if before.get(s.key.name) != (s.value, s.source)]


def check_file_mode(path: Path) -> None:
    """Refuse a file other users may change: it says where tsuku downloads from and
    which keys it sends, so another user could redirect it. One they can only read
    (an editor's 0644) is :func:`exposed`'s business: its keys are not used."""
    st = path.stat()
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"{path} is writable by other users (mode {stat.S_IMODE(st.st_mode):04o}); "
            "another user could change where tsuku downloads from, so tsuku refuses to use it",
            hint=f"Fix it with: chmod 600 {path}",
        )


def exposed(path: Path, mode: int, values: Mapping[str, Any]) -> Problem | None:
    """A file other users can read (an editor's default 0644): the keys it holds are
    not used until it is private, so a command that needs one stops with the fix;
    every other setting is read as usual (``list``, ``status``, an install work).
    A file without keys is only named, for the same fix."""
    if not mode & (stat.S_IRWXG | stat.S_IRWXO):
        return None
    held = tuple(sorted(n for n in values if KEYS[n].secret))
    what = "the keys in it are not used" if held else "keep it private before adding keys"
    return Problem(
        ConfigError(
            f"{path} is readable by other users (mode {stat.S_IMODE(mode):04o}); {what}",
            hint=f"Fix it with: chmod 600 {path}",
        ),
        held,
    )


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the config file, as the one error the user sees (where, what,
    the fix), and the settings it spoils: a command reading one of those fails with that
    error; every other command works, so the user can still run ``tsukuctl config``."""

    error: ConfigError
    spoils: tuple[str, ...] = ()  # setting names; EVERY_FILE_SETTING for an unreadable file


EVERY_FILE_SETTING = "*"


def _line_of(text: str, dotted: str) -> int | None:
    """The line of ``text`` that sets ``dotted`` (``[llm]`` + ``daily_budget = …`` or
    ``llm.daily_budget = …``), found by reading headers and keys; None if not found."""
    import re

    table = ""
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        header = re.match(r"\[\[?([^\]]*)\]", line)
        if header:
            table = re.sub(r"[\s\"']", "", header.group(1))
            continue
        assign = re.match(r"([A-Za-z0-9_.\-\"' ]+?)\s*=", line)
        if assign:
            name = re.sub(r"[\s\"']", "", assign.group(1))
            if (f"{table}.{name}" if table else name) == dotted:
                return n
    return None


def _at(path: Path, line: int | None) -> str:
    return f"{path}, line {line}" if line else str(path)


def _meant(name: str) -> str | None:
    """The setting a mistyped name most likely meant (``daily_budjet`` → daily_budget)."""
    import difflib

    close = difflib.get_close_matches(name, list(KEYS), n=1, cutoff=0.8)
    return close[0] if close else None


#: Syntax errors read past, one line (or table) each, before the file counts as unreadable.
MAX_SYNTAX_ERRORS = 10


def _unparsable(
    path: Path, line: int | None, reason: str, problems: list[Problem] | None = None
) -> FileSettings:
    """A file no setting can be read from: one problem, spoiling every file setting."""
    error = ConfigError(
        f"{_at(path, line)}: the file cannot be read at all: {reason}",
        hint="Edit it with `tsukuctl config edit`; until then no setting is read from the file.",
    )
    return FileSettings({}, {}, [*(problems or []), Problem(error, (EVERY_FILE_SETTING,))])


def _skip_bad_line(text: str, n: int) -> tuple[str, Callable[[str, str], Problem]] | None:
    """A TOML syntax error at line ``n`` spoils only what that line sets: the line
    blanked (a table header: the table, up to the next header), and the problem to
    report, with the key and a fix. None when the line sets nothing we can name (the
    file is then unreadable as a whole). Lines keep their numbers."""
    import re

    lines = text.split("\n")
    if not 0 < n <= len(lines):
        return None
    table, drop = "", [n - 1]
    for raw in lines[: n - 1]:
        header = re.match(r"\s*\[\[?([^\]]*)\]", raw)
        if header:
            table = re.sub(r"[\s\"']", "", header.group(1))
    bad = lines[n - 1].strip()
    assign = re.match(r"([A-Za-z0-9_.\-\"' ]+?)\s*=", bad)
    if bad.startswith("["):
        named = re.match(r"\[+\s*([A-Za-z0-9_.\-]+)", bad)
        if named is None:
            return None
        table = named.group(1)
        drop += [i for i in range(n, len(lines)) if not lines[i].lstrip().startswith("[")]
        nxt = next((i for i in range(n, len(lines)) if lines[i].lstrip().startswith("[")), None)
        drop = [i for i in drop if nxt is None or i < nxt]
        spoils = tuple(k for k in KEYS if k.startswith(table + "."))

        def header_problem(where: str, reason: str) -> Problem:
            return Problem(
                ConfigError(
                    f"{where}: the table header {bad!r} is not valid TOML ({reason})",
                    hint="Edit it with `tsukuctl config edit` (a header reads like [llm]); "
                    "until then nothing under it is read from the file.",
                ),
                spoils,
            )

        problem = header_problem
    elif assign is not None:
        leaf = re.sub(r"[\s\"']", "", assign.group(1))
        dotted = f"{table}.{leaf}" if table else leaf
        name = ALIASES.get(dotted, dotted)
        meant = name if name in KEYS else _meant(dotted)

        def key_problem(where: str, reason: str) -> Problem:
            fix = "Edit it with `tsukuctl config edit`"
            if meant is not None:
                what, _, example = kind_of(KEYS[meant])
                shown = example if KEYS[meant].kind in (int, float, bool) else f'"{example}"'
                fix += f": {meant} takes {what}, e.g. `{leaf} = {shown}`"
            return Problem(
                ConfigError(
                    f"{where}: {dotted} is not valid TOML ({reason})",
                    hint=f"{fix}. Until then {dotted} is not read from the file.",
                ),
                (meant,) if meant else (),
            )

        problem = key_problem
    else:
        return None
    for i in drop:
        lines[i] = ""
    return "\n".join(lines), problem


@dataclass
class FileSettings:
    values: dict[str, Any]  # known settings the file sets, already coerced
    aliased: dict[str, str]  # setting → the alias the file used for it
    problems: list[Problem]


def read_file(path: Path) -> FileSettings:
    """The config file flattened to dotted keys (a missing file sets nothing), with what
    is wrong in it. Only a file others can change raises; the keys of one they can
    read are left out, as spoiled (:func:`exposed`)."""
    try:
        check_file_mode(path)
        mode = path.stat().st_mode
        data = path.read_bytes()
    except FileNotFoundError:
        return FileSettings({}, {}, [])
    read = parse_file(data, path)
    problem = exposed(path, mode, read.values)
    if problem is not None:
        for name in problem.spoils:
            del read.values[name]
        read.problems.append(problem)
    return read


def parse_file(data: bytes, path: Path) -> FileSettings:
    """:func:`read_file` for bytes already read (``tsukuctl config edit`` checks the
    edited copy before it replaces the file); ``path`` names the file in messages."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        return _unparsable(path, None, f"not UTF-8 text: {e}")
    import tomllib  # here: a daemon without a config file never imports it (issue 32)

    problems: list[Problem] = []
    readable = text
    for _ in range(MAX_SYNTAX_ERRORS):
        try:
            doc = tomllib.loads(readable)
            break
        except tomllib.TOMLDecodeError as e:
            import re

            found = re.search(r"at line (\d+)", str(e))
            reason = re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(e))
            n = int(found.group(1)) if found else None
            skipped = _skip_bad_line(readable, n) if n else None
            if skipped is None:
                return _unparsable(path, n, f"not valid TOML ({reason})", problems)
            readable, problem = skipped
            problems.append(problem(_at(path, n), reason))
    else:
        return _unparsable(path, None, "not valid TOML (too many errors)")
    flat: dict[str, Any] = {}
    for section, body in doc.items():
        if not isinstance(body, dict):
            meant = _meant(section)
            problems.append(
                Problem(
                    ConfigError(
                        f"{_at(path, _line_of(text, section))}: top-level key {section!r} "
                        "must be a table like [llm]",
                        hint="Move it under its table with `tsukuctl config edit`"
                        + (f" (did you mean {meant}?)." if meant else ".")
                        + " docs/config.md lists the settings.",
                    ),
                    (meant,) if meant else (),
                )
            )
            continue
        _flatten(section, body, flat)
    aliased: dict[str, str] = {}
    for alias, name in ALIASES.items():
        if alias in flat:
            value = flat.pop(alias)
            if name not in flat:  # the setting's own name wins
                flat[name] = value
                aliased[name] = alias
    for name in sorted(set(flat) - set(KEYS)):
        flat.pop(name)
        meant = _meant(name)
        fix = f"`tsukuctl config unset {name}`"
        problems.append(
            Problem(
                ConfigError(
                    f"{_at(path, _line_of(text, name))}: unknown setting {name!r}"
                    + (f"; did you mean {meant}?" if meant else ""),
                    hint=(
                        f"Rename it with `tsukuctl config edit`, or {fix} and "
                        f"`tsukuctl config set {meant} <value>`."
                        if meant
                        else f"Remove it with {fix}; `tsukuctl config list` shows every setting."
                    ),
                ),
                # A typo of a setting the file does not set spoils that setting: using
                # its default instead of what the user meant could spend their money.
                (meant,) if meant and meant not in flat else (),
            )
        )
    for name in sorted(flat):
        as_written = aliased.get(name, name)
        where = _at(path, _line_of(text, as_written))
        if as_written != name:  # the design's name: say which setting it is read as
            where += f" ({as_written} is read as {name})"
        try:
            flat[name] = coerce(KEYS[name], flat[name], where)
        except ConfigError as e:
            flat.pop(name)
            problems.append(Problem(e, (name,)))
    return FileSettings(flat, aliased, problems)


_ALIASED = "\0aliased"  # read_file's note of settings read under an alias


def _flatten(prefix: str, table: Mapping[str, Any], flat: dict[str, Any]) -> None:
    """``[llm.x] api_key_env`` → ``llm.x.api_key_env``; a table that is not
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
    source: str  # "flag", "caller:NAME" (a request's), "env:NAME" (tsukud's), "file", "default"

    def shown(self) -> dict[str, Any]:
        """As ``tsukuctl config`` and the RPC show it: a secret only as (set)/(not set)."""
        value: Any = self.value
        if self.key.secret:
            value = "(set)" if self.value else "(not set)"
        return {
            "key": self.key.name,
            "value": value,
            "source": self.source,
            "secret": self.key.secret,
            "doc": self.key.doc,
        }


class Config:
    """Resolved settings. Immutable: a change produces a new Config."""

    def __init__(
        self,
        settings: Mapping[str, Setting],
        path: Path,
        problems: tuple[Problem, ...] = (),
        broken: Mapping[str, ConfigError] | None = None,
    ) -> None:
        self._settings = dict(settings)
        self.path = path
        self.problems = problems  # what is wrong in the file, each once
        self._broken = dict(broken or {})  # setting → the error reading it raises

    def __getitem__(self, name: str) -> Any:
        return self.setting(name).value

    def setting(self, name: str) -> Setting:
        """The setting; a setting the file spoils raises the file's error about it."""
        name = key(name).name
        if name in self._broken:
            raise self._broken[name]
        return self._settings[name]

    def value_or_default(self, name: str) -> Any:
        """The value, or the default when the file spoils it: for start-up settings
        (the log's) that must not keep the daemon, and so every command, from starting."""
        name = key(name).name
        if name in self._broken:
            return KEYS[name].default_setting()[0]
        return self._settings[name].value

    def settings(self) -> list[Setting]:
        """Every setting; a spoiled one shows its default with source ``file (invalid)``."""
        return [self._settings[n] for n in sorted(self._settings)]

    def secret_values(self) -> list[str]:
        return [s.value for s in self._settings.values() if s.key.secret and s.value]

    def key_env_names(self) -> frozenset[str]:
        """The variables ``api_key_env`` settings name: a request may carry them."""
        return frozenset(v for n in KEY_ENV_SETTINGS.values() if (v := self._settings[n].value))

    def with_caller_env(self, caller_env: Mapping[str, str]) -> Config:
        """These settings with a request's caller environment on top: above the
        daemon's environment, the file and the defaults, below flags (source
        ``caller:NAME``)."""
        settings = dict(self._settings)
        broken = dict(self._broken)
        for name, s in settings.items():
            envs = s.key.env
            named_by = KEY_ENV_SETTINGS.get(name)
            if named_by is not None and settings[named_by].value:
                envs = (settings[named_by].value, *envs)  # as in resolve: named one first
            env_name = next((e for e in envs if caller_env.get(e)), None)
            if env_name is None or s.source == "flag":
                continue
            broken.pop(name, None)  # above the file: its error about this one no longer counts
            try:
                value = coerce(s.key, caller_env[env_name], f"your ${env_name}")
            except ConfigError as e:
                # Like a spoiled file value: an error for what reads it, not for all.
                hint = f"Fix or unset {env_name} in your shell."
                broken[name] = ConfigError(e.message, hint=hint)
                continue
            settings[name] = Setting(s.key, value, f"caller:{env_name}")
        return Config(settings, self.path, self.problems, broken)


INVALID = "file (invalid)"


def resolve(
    *,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    path: Path | None = None,
) -> Config:
    env = os.environ if env is None else env
    path = Path(paths.config_path(env)) if path is None else path
    read = read_file(path)
    file_values, aliased = read.values, read.aliased
    spoiled: dict[str, ConfigError] = {}
    for problem in read.problems:
        for name in problem.spoils:
            spoiled.setdefault(name, problem.error)
    unreadable = spoiled.get(EVERY_FILE_SETTING)
    broken: dict[str, ConfigError] = {}
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
        elif name in spoiled or unreadable is not None:
            out[name] = Setting(k, k.default_setting()[0], INVALID)
            broken[name] = spoiled.get(name) or unreadable  # type: ignore[assignment]
        else:
            out[name] = Setting(k, *k.default_setting())
    return Config(out, path, tuple(read.problems), broken)


def write_value(path: Path, name: str, raw: Any) -> Any:
    """Set one key in the config file (``None``: remove it), atomically, keeping the
    file 0600 and every comment and blank line the user wrote (tomlkit). The value is
    checked by the rules the daemon reads it with (:func:`coerce`) before anything is
    written. Removing takes any name, an unknown one too: that is how a typo is fixed."""
    if raw is None:
        names = [name, *(a for a, n in ALIASES.items() if n == name)]
        known = name in KEYS or name in ALIASES
        if not (_edit(path, lambda doc: [_remove(doc, n) for n in names]) or known):
            raise UsageError(
                f"{name!r} is neither a setting nor in {path}",
                hint="`tsukuctl config list` shows every setting.",
            )
        return None
    k = key(name)
    value = coerce(k, raw, "value")

    def put(doc: Any) -> None:
        for alias in (a for a, n in ALIASES.items() if n == k.name):
            _remove(doc, alias)  # written back under the setting's own name
        *tables, leaf = k.name.split(".")
        table = doc
        for t in tables:
            if t not in table:
                import tomlkit

                table.add(t, tomlkit.table())
            table = table[t]
        table[leaf] = value

    _edit(path, put)
    return value


def _remove(doc: Any, dotted: str) -> bool:
    """Remove one key; a table left with neither keys nor comments goes too."""
    *tables, leaf = dotted.split(".")
    chain = [doc]
    for t in tables:
        if not isinstance(chain[-1], dict) or t not in chain[-1]:
            return False
        chain.append(chain[-1][t])
    if not isinstance(chain[-1], dict) or leaf not in chain[-1]:
        return False
    del chain[-1][leaf]
    for parent, name, table in reversed(list(zip(chain[:-1], tables, chain[1:], strict=True))):
        body = getattr(getattr(table, "value", None), "body", None)
        if len(table) or body is None or any(k is None and v.as_string().strip() for k, v in body):
            break
        del parent[name]
    return True


def _edit(path: Path, change: Any) -> Any:
    """Apply ``change`` to the file's tomlkit document and write it back (0600)."""
    import tomlkit
    from tomlkit.exceptions import ParseError

    try:
        check_file_mode(path)
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    try:
        doc = tomlkit.parse(text)
    except ParseError as e:
        raise ConfigError(
            f"{_at(path, e.line)}: not valid TOML, so it cannot be edited safely: {e}",
            hint="Fix it with `tsukuctl config edit`.",
        ) from None
    result = change(doc)
    new = tomlkit.dumps(doc)
    if new != text:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(path, new, mode=0o600)  # may hold API keys
    return any(result) if isinstance(result, list) else result
