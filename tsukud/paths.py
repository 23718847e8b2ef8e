"""Where tsuku keeps things.

Stdlib only (imported by ``tsukuctl`` on its hot path). Both processes must agree on
these paths without talking to each other, so they live in exactly one place.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def tsuku_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    home = env.get("TSUKU_HOME")
    if home:
        return Path(home).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".tsuku"


def socket_path(env: Mapping[str, str] | None = None) -> Path:
    """``$TSUKU_SOCKET``, else ``$XDG_RUNTIME_DIR/tsuku/tsukud.sock``, else under TSUKU_HOME.

    A second TSUKU_HOME (tests, the demo, another profile) must also set TSUKU_SOCKET
    when XDG_RUNTIME_DIR is set; the daemon refuses to take over a socket that another
    daemon still answers on, so a mix-up is an error rather than a silent hijack.
    """
    env = os.environ if env is None else env
    explicit = env.get("TSUKU_SOCKET")
    if explicit:
        return Path(explicit).expanduser()
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "tsuku" / "tsukud.sock"
    return tsuku_home(env) / "run" / "tsukud.sock"


def db_path(env: Mapping[str, str] | None = None) -> Path:
    return tsuku_home(env) / "tsuku.db"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    return tsuku_home(env) / "config.toml"


def log_dir(env: Mapping[str, str] | None = None) -> Path:
    return tsuku_home(env) / "logs"


def log_path(env: Mapping[str, str] | None = None) -> Path:
    return log_dir(env) / "tsukud.log"


def lock_path(env: Mapping[str, str] | None = None) -> Path:
    """The single-instance lock. Next to the database, not the socket: it guards the ledger."""
    return tsuku_home(env) / "run" / "tsukud.lock"
