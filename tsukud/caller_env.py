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

The variables that carry an LLM provider's key and URL come from its row in
``provider_specs.py``, so adding a provider needs no change here.

Stdlib only and tiny: the client builds this on every call, on the hook's hot path.
"""

from __future__ import annotations

import os

from tsukud.provider_specs import LLM_KEY_ENV, LLM_PROVIDERS

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping

#: Every ``TSUKU_*`` variable is sent: the settings' variables (``config.KEYS``) are
#: named so, and a setting added there needs no change here.
PREFIX = "TSUKU_"
#: Except these: where the daemon is. The client chose its daemon by them, and names
#: its home in the request itself.
NOT_SENT = frozenset({"TSUKU_HOME", "TSUKU_SOCKET"})


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
