"""Owner-only TSUKU_HOME: nothing the daemon writes is readable by another local user.

The ledger records which repositories a user builds recipes for, what they spend and
which tools they install; SQLite creates ``tsuku.db-wal`` and ``-shm`` with the mode the
process umask allows, so a 0022 umask left them 0644 in a 0755 home and another user
could read the WAL. :func:`make_home_private` sets the umask to 077 for the daemon's
life (every file and directory it creates from then on, SQLite's included, is
owner-only), makes the home 0700 and takes the group and other bits off whatever an
older version or a looser umask left inside. It runs once, early in start-up, before
the log, the lock or the ledger are opened.
"""

from __future__ import annotations

import os
import stat

PRIVATE_UMASK = 0o077
_LOOSE = stat.S_IRWXG | stat.S_IRWXO


def _tighten(path: str) -> bool:
    """Drop group/other bits of ``path`` (never through a symlink); whether it changed.
    A file owned by someone else (EPERM) is left as it is."""
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode) or not st.st_mode & _LOOSE:
            return False
        os.chmod(path, stat.S_IMODE(st.st_mode) & ~_LOOSE)
    except OSError:
        return False
    return True


def make_home_private(home: str, *, leave: str | None = None) -> int:
    """Umask 077 from now on, ``home`` 0700 and everything in it owner-only; returns how
    many existing entries were tightened. ``leave``: the person's own config file, whose
    mode they set (an editor's 0644): its keys are not used until they fix it, and the
    error says so (``config.exposed``); changing it behind their back would hide that
    the keys in it were readable, and make a fresh start behave unlike a running daemon."""
    os.umask(PRIVATE_UMASK)
    os.makedirs(home, mode=0o700, exist_ok=True)
    leave = os.path.abspath(leave) if leave else None
    tightened = int(_tighten(home))
    for dirpath, dirnames, filenames in os.walk(home):  # symlinked dirs are not entered
        for name in (*dirnames, *filenames):
            path = os.path.join(dirpath, name)
            if os.path.abspath(path) != leave:
                tightened += _tighten(path)
    return tightened
