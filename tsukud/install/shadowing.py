"""Which of a tool's binaries would shadow a command the system already has.

``$TSUKU_HOME/bin`` comes first on PATH once the shell hook is installed, so a link
there named ``sudo`` or ``git`` runs instead of the system's: an archive's ``sudo``
asking for the password is the attack. Two rules, decided here without I/O beyond
looking at the PATH directories:

* a **guarded** name (one that handles credentials or privileges: ``sudo``, ``ssh``,
  ``gpg``, ``git-credential-*``, ``pinentry*`` …) is installed only by the recipe for
  that command (recipe name == binary name); for any other recipe it is refused, with
  ``--yes`` or a person's yes alike;
* any other binary whose name is not the tool's own and that names a command on the
  caller's PATH (less ``$TSUKU_HOME/bin``, where tsuku's own links live) **shadows**
  it: a person must say yes to a question naming the command it shadows, and ``--yes``
  never answers it.

The installer (``attempt.py``) applies both to every install path (release archives,
URL downloads, Homebrew bottles, ecosystem packages' executables) at the one point
before anything is linked; create's static checks refuse guarded names in a recipe a
generator proposes (``create/static_checks.py``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import msgspec

#: Commands that ask for a password, hold keys or grant privileges: a look-alike is a
#: credential thief. Matched case-insensitively, with the prefixes below.
GUARDED = frozenset(
    {
        "sudo",
        "sudoedit",
        "su",
        "doas",
        "run0",
        "pkexec",
        "ssh",
        "ssh-agent",
        "ssh-add",
        "ssh-keygen",
        "gpg",
        "gpg2",
        "gpg-agent",
        "passwd",
        "login",
        "chsh",
        "chfn",
        "chpasswd",
        "newgrp",
        "keychain",
        "security",
        "secret-tool",
        "tsukuctl",
        "tsukud",
    }
)
GUARDED_PREFIXES = ("git-credential-", "pinentry", "ssh-askpass")


class Shadowing(msgspec.Struct, frozen=True, kw_only=True):
    """What linking a tool's binaries would shadow: guarded names (never for another
    tool) and the system commands (name → the path it would hide)."""

    guarded: tuple[str, ...] = ()
    shadows: dict[str, str] = msgspec.field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.guarded or self.shadows)


def is_guarded(name: str) -> bool:
    """Whether ``name`` is a command that guards credentials or privileges."""
    low = name.lower()
    return low in GUARDED or low.startswith(GUARDED_PREFIXES)


def system_dirs(path: str, tsuku_bin: Path) -> list[str]:
    """The directories of ``path`` (a PATH value) where a command is found, less
    ``tsuku_bin`` (tsuku's own links are not the system's) and relative entries (they
    depend on the directory a shell happens to be in)."""
    try:
        own = os.path.realpath(tsuku_bin)
    except OSError:
        own = str(tsuku_bin)
    dirs: list[str] = []
    for entry in path.split(os.pathsep):
        if not entry or not os.path.isabs(entry):
            continue
        if os.path.realpath(entry) == own or entry in dirs:
            continue
        dirs.append(entry)
    return dirs


def find_command(name: str, dirs: Sequence[str]) -> str | None:
    """Where a shell would find ``name`` in ``dirs``: the first executable file."""
    for d in dirs:
        candidate = os.path.join(d, name)
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def shadowing(
    tool: str, binaries: Iterable[str], dirs: Sequence[str], *, accepted: Iterable[str] = ()
) -> Shadowing:
    """What ``tool``'s ``binaries`` would shadow on a PATH of ``dirs``.

    ``accepted``: names this tool already links (an upgrade or reinstall: the person
    accepted them when it was installed); they are not asked about again, though a
    guarded one is still refused.
    """
    own = tool.lower()
    known = set(accepted)
    guarded: list[str] = []
    shadows: dict[str, str] = {}
    for name in sorted(set(binaries)):
        if name.lower() == own:
            continue
        if is_guarded(name):
            guarded.append(name)
            continue
        if name in known:
            continue
        found = find_command(name, dirs)
        if found is not None:
            shadows[name] = found
    return Shadowing(guarded=tuple(guarded), shadows=shadows)
