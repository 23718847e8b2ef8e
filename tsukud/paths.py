"""Where tsuku keeps things.

Stdlib only, and plain ``os.path`` strings rather than pathlib: ``tsukuctl`` imports this
on its hot path (the command-not-found hook), where pathlib's import alone costs more
than the rest of the client. Both processes must agree on these paths without talking
to each other, so they live in exactly one place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def tsuku_home(env: Mapping[str, str] | None = None) -> str:
    env = _env(env)
    home = env.get("TSUKU_HOME")
    if home:
        return os.path.expanduser(home)
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".tsuku")


def socket_path(env: Mapping[str, str] | None = None) -> str:
    """``$TSUKU_SOCKET``, else ``$XDG_RUNTIME_DIR/tsuku/tsukud.sock``, else under TSUKU_HOME.

    A second TSUKU_HOME (tests, the demo, another profile) must also set TSUKU_SOCKET
    when XDG_RUNTIME_DIR is set; the daemon refuses to take over a socket that another
    daemon still answers on, so a mix-up is an error rather than a silent hijack.
    """
    env = _env(env)
    explicit = env.get("TSUKU_SOCKET")
    if explicit:
        return os.path.expanduser(explicit)
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "tsuku", "tsukud.sock")
    return os.path.join(tsuku_home(env), "run", "tsukud.sock")


def db_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(tsuku_home(env), "tsuku.db")


def config_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(tsuku_home(env), "config.toml")


def log_dir(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(tsuku_home(env), "logs")


def log_path(env: Mapping[str, str] | None = None) -> str:
    return os.path.join(log_dir(env), "tsukud.log")


def lock_path(env: Mapping[str, str] | None = None) -> str:
    """The single-instance lock. Next to the database, not the socket: it guards the ledger."""
    return os.path.join(tsuku_home(env), "run", "tsukud.lock")


# The shell hooks' files: the client (``tsukuctl hook``) and the daemon (which keeps the
# index current) must agree on them, and the hooks read them with no Python at all.
INDEX_NAME = "binary-index.tsv"


def share_dir(home: str) -> str:
    return os.path.join(home, "share")


def index_path(home: str) -> str:
    return os.path.join(share_dir(home), INDEX_NAME)


def hooks_dir(home: str) -> str:
    return os.path.join(share_dir(home), "hooks")
