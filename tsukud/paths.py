"""Where tsuku keeps things.

Stdlib only, and plain ``os.path`` strings rather than pathlib: ``tsukuctl`` imports this
on its hot path (the command-not-found hook), where pathlib's import alone costs more
than the rest of the client. Both processes must agree on these paths without talking
to each other, so they live in exactly one place.
"""

from __future__ import annotations

import os
import stat  # already loaded by os: free
import sys

TYPE_CHECKING = False  # typing is not imported at run time (tsukuctl's start-up)
if TYPE_CHECKING:
    from collections.abc import Mapping  # collections' import: ~1 ms of the client's start


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def tsuku_home(env: Mapping[str, str] | None = None) -> str:
    env = _env(env)
    home = env.get("TSUKU_HOME")
    if home:
        return os.path.expanduser(home)
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".tsuku")


def socket_path(env: Mapping[str, str] | None = None) -> str:
    """``$TSUKU_SOCKET``; else, for a ``TSUKU_HOME`` set to a home of its own, under that
    home; else ``$XDG_RUNTIME_DIR/tsuku/tsukud.sock``, else under the default home.

    A home of its own gets its own daemon without further settings (two homes, two
    daemons side by side); ``TSUKU_HOME`` set to the default home keeps the runtime-dir
    socket that systemd and launchd units activate. A path too long for ``AF_UNIX`` is
    replaced by :func:`short_socket_path`, the same in every process that computes it.
    """
    env = _env(env)
    explicit = env.get("TSUKU_SOCKET")
    if explicit:
        return os.path.expanduser(explicit)
    home = tsuku_home(env)
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and not own_home(env):
        path = os.path.join(runtime, "tsuku", "tsukud.sock")
    else:
        path = os.path.join(home, "run", "tsukud.sock")
    if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
        return path
    return short_socket_path(home, env)


# sun_path holds 108 bytes on Linux and 104 on macOS and the BSDs, its NUL included.
MAX_SOCKET_PATH = (108 if sys.platform.startswith("linux") else 104) - 1


def too_long(path: str) -> str | None:
    """Why the kernel would refuse ``path`` as a socket address, or ``None``."""
    size = len(os.fsencode(path))
    if size <= MAX_SOCKET_PATH:
        return None
    limit = MAX_SOCKET_PATH
    return f"the socket path {path} is {size} bytes; a Unix socket path may have at most {limit}"


#: What to do about :func:`too_long` (the path only gets that long when given).
TOO_LONG_HINT = (
    "Set TSUKU_SOCKET to a shorter path, or unset it: tsuku then picks a short one for "
    "a long TSUKU_HOME by itself."
)


def own_home(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``TSUKU_HOME`` names a home other than the default one."""
    env = _env(env)
    if not env.get("TSUKU_HOME"):
        return False
    default = os.path.join(env.get("HOME") or os.path.expanduser("~"), ".tsuku")
    return os.path.abspath(tsuku_home(env)) != os.path.abspath(default)


def short_socket_path(home: str, env: Mapping[str, str] | None = None) -> str:
    """A short socket path for a home whose own is too long: ``<hash>.sock`` in a
    private directory (``$XDG_RUNTIME_DIR/tsuku``, else ``/tmp/tsuku-<uid>``), the hash
    of the home's absolute path so each home keeps its own daemon. The daemon creates
    the directory 0700 and refuses one that is not its user's alone; the client refuses
    to connect through one that is not its user's (:func:`foreign_socket_dir`)."""
    import hashlib  # only here: its import is felt on the hook's path

    env = _env(env)
    digest = hashlib.sha256(os.fsencode(os.path.abspath(home))).hexdigest()[:20]
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime:
        path = os.path.join(runtime, "tsuku", f"{digest}.sock")
        if len(os.fsencode(path)) <= MAX_SOCKET_PATH:
            return path
    return os.path.join(shared_socket_dir(), f"{digest}.sock")


def shared_socket_dir() -> str:
    """The last-resort directory for short socket paths, in the shared ``/tmp``."""
    return os.path.join("/tmp", f"tsuku-{os.getuid()}")  # noqa: S108


def foreign_socket_dir(path: str) -> str | None:
    """Why the shared directory holding ``path`` cannot be trusted (another user's, or
    open to others), or ``None``: in ``/tmp`` someone else could have created it first.
    Other directories are the user's own choice, checked by the daemon when it binds."""
    directory = os.path.dirname(path)
    if directory != shared_socket_dir():
        return None
    try:
        st = os.lstat(directory)
    except OSError:
        return None  # missing: the daemon creates it 0700
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        return f"{directory} is not a private directory of yours (uid {st.st_uid}, mode {mode:04o})"
    return None


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
