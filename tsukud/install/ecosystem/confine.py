"""Running an approved ecosystem install confined to the tool's own directory.

A package's install scripts run after a person said yes to the recipe, but they are
still the package's code: they get the tool's directory and a throw-away home, nothing
else of ``$TSUKU_HOME`` (its keys, its ledger, its ``bin/`` that the shell hook puts
first on PATH).

When the daemon runs as root the package manager runs as ``nobody`` (uid 65534) in a
private mount namespace (``unshare --mount``, util-linux): a tmpfs covers ``$TSUKU_HOME``
(or the highest ancestor of it that ``nobody`` could not enter anyway), the tool's
directory is bound back at its own path (venvs and wrappers carry absolute paths). The
toolchain must be one ``nobody`` can run (a pyenv or rustup under /root is not: the
system's on /usr/bin is taken instead, else the install is refused). The tool's
directory belongs to ``nobody`` while it runs and is given back to the daemon's user
after. Anything the scripts write outside
the tool's directory and the scratch directory lands on the tmpfs and is gone when the
namespace ends, or is refused by the file system.

A daemon that is not root cannot change users; its package manager runs with the
throw-away home, and the installer removes what appeared in ``bin/`` that it did not
put there (``stray_entries``).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from tsukud.install.ecosystem.prefix import SYSTEM_PATH, Prefix
from tsukud.install.ecosystem.toolchain import Toolchain, ToolchainMissing, find

NOBODY = 65534
UNSHARE = "unshare"
SETPRIV = "setpriv"

# $1 prefix, $2 a mount point for the prefix while the cover goes on, $3 the cover,
# then the command.
_SCRIPT = r"""
set -e
prefix=$1; hold=$2; cover=$3; shift 3
mount --bind "$prefix" "$hold"
mount -t tmpfs -o mode=0755,size=16m tsuku-confined "$cover"
mask=$(umask); umask 022
mkdir -p "$prefix"
mount --bind "$hold" "$prefix"
umask "$mask"
cd "$prefix"
exec setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all -- "$@"
"""


def available() -> bool:
    """Whether installs are confined here: root, with util-linux's tools."""
    return (
        hasattr(os, "geteuid")
        and os.geteuid() == 0
        and shutil.which(UNSHARE) is not None
        and shutil.which(SETPRIV) is not None
    )


def _enterable_by_nobody(path: Path) -> bool:
    try:
        st = path.stat()
    except OSError:
        return False
    return bool(st.st_mode & 0o001) or st.st_uid == NOBODY


def cover_for(prefix: Path, home: Path) -> Path:
    """What the tmpfs covers: ``home``, or its highest ancestor ``nobody`` cannot
    enter (it sees nothing there anyway)."""
    cover = home
    for parent in home.parents:
        if parent == Path("/"):
            break
        if not _enterable_by_nobody(parent):
            cover = parent
    return cover


def runnable_by_nobody(program: Path) -> bool:
    """Whether ``nobody`` can run ``program``: every directory on its real path
    enterable, the file executable by others (a toolchain under /root is not)."""
    real = program.resolve()
    try:
        if not real.stat().st_mode & 0o001:
            return False
    except OSError:
        return False
    return all(_enterable_by_nobody(d) for d in real.parents)


def toolchain_for_nobody(chain: Toolchain, program: Path) -> Path:
    """``program`` if ``nobody`` can run it, else the same program on the system's
    PATH; :class:`ToolchainMissing` when neither."""
    if runnable_by_nobody(program):
        return program
    try:
        system = find(chain, {"PATH": SYSTEM_PATH})
    except ToolchainMissing:
        system = None
    if system is not None and runnable_by_nobody(system):
        return system
    raise ToolchainMissing(
        f"{program} cannot be run by an unprivileged user, and installs of "
        f"{chain.ecosystem} run as nobody when the daemon runs as root",
        hint=f"{chain.hint()} (Debian's package is on /usr/bin, which nobody can run.)",
        program=chain.program,
        debian_package=chain.debian_package,
    )


def wrap(argv: Sequence[str], *, prefix: Path, home: Path, hold: Path) -> list[str]:
    """``argv`` run as nobody in a mount namespace that shows only ``prefix`` of
    ``home``; ``hold`` is an empty mount point outside the cover."""
    cover = cover_for(prefix, home)
    return [
        UNSHARE,
        "--mount",
        "--propagation",
        "private",
        "--",
        "/bin/sh",
        "-c",
        _SCRIPT,
        "tsuku-confine",
        str(prefix),
        str(hold),
        str(cover),
        *argv,
    ]


@dataclass(frozen=True)
class Confined:
    """The confinement of one install: ``home`` covered but the prefix, ``hold`` an
    empty directory outside the cover."""

    home: Path
    hold: Path

    async def command(self, prefix: Prefix, argv: Sequence[str]) -> list[str]:
        # What root wrote for the package manager (npmrc, gemrc) is nobody's to read.
        for d in (prefix.root, prefix.scratch):
            await trio.to_thread.run_sync(chown_tree, d, NOBODY, NOBODY)
        return wrap(argv, prefix=prefix.root, home=self.home, hold=self.hold)


def chown_tree(root: Path, uid: int, gid: int) -> None:
    """Hand ``root`` and everything in it (links themselves, never their targets) to
    ``uid``:``gid``."""
    os.lchown(root, uid, gid)
    for dirpath, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def stray_entries(bin_dir: Path, before: set[str], tools: Path) -> list[Path]:
    """What appeared in ``bin/`` during an install that the installer does not make:
    anything but a link into ``tools/``."""
    if not bin_dir.is_dir():
        return []
    out: list[Path] = []
    for entry in bin_dir.iterdir():
        if entry.name in before:
            continue
        if entry.is_symlink():
            target = Path(os.path.normpath(bin_dir / os.readlink(entry)))
            if target.is_relative_to(tools):
                continue
        out.append(entry)
    return out
