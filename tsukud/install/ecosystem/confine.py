"""Running an approved ecosystem install confined to the tool's own directory.

A package's install scripts run after a person said yes to the recipe, but they are
still the package's code: they get the tool's directory and a throw-away home, nothing
else of ``$TSUKU_HOME`` (its keys, its ledger, its ``bin/`` that the shell hook puts
first on PATH).

When the daemon runs as root the package manager runs as ``nobody`` (uid 65534) in a
private mount namespace (``unshare --mount``, util-linux): a tmpfs covers ``$TSUKU_HOME``
(or the highest ancestor of it that ``nobody`` could not enter anyway), the tool's
directory is bound back at its own path (venvs and wrappers carry absolute paths). The
toolchain must be one ``nobody`` can run: a rustup under /root has ``~/.cargo`` and
``RUSTUP_HOME`` bound back read-only under a tmpfs over /root; one that cannot be
(unreadable inside) is replaced by the system's on /usr/bin, else refused. The tool's
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
import shlex
import shutil
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trio

from tsukud.install.ecosystem.prefix import SYSTEM_PATH, Prefix
from tsukud.install.ecosystem.toolchain import Toolchain, ToolchainMissing, find

NOBODY = 65534
UNSHARE = "unshare"
SETPRIV = "setpriv"


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


def _highest_closed(path: Path) -> Path | None:
    """The highest ancestor of ``path`` that ``nobody`` cannot enter, if any."""
    closed = None
    for parent in path.parents:
        if parent != Path("/") and not _enterable_by_nobody(parent):
            closed = parent
    return closed


def cover_for(prefix: Path, home: Path) -> Path:
    """What the tmpfs covers: ``home``, or its highest ancestor ``nobody`` cannot
    enter (it sees nothing there anyway)."""
    return _highest_closed(home) or home


def runnable_by_nobody(program: Path, below: Path | None = None) -> bool:
    """Whether ``nobody`` can run ``program``: every directory on its real path
    enterable (only those under ``below``, when a tmpfs will cover ``below`` and the
    program be bound back), the file executable by others."""
    real = program.resolve()
    try:
        if not real.stat().st_mode & 0o001:
            return False
    except OSError:
        return False
    dirs = [d for d in real.parents if below is None or (d.is_relative_to(below) and d != below)]
    return all(_enterable_by_nobody(d) for d in dirs)


@dataclass(frozen=True)
class Toolchain4Nobody:
    """The program a confined install runs, and the directories (a rustup or pyenv
    install under /root) bound back read-only for it."""

    program: Path
    keep: tuple[Path, ...] = ()


def toolchain_for_nobody(
    chain: Toolchain,
    program: Path,
    extra: Sequence[str] = (),
    *,
    system_fallback: bool = True,
) -> Toolchain4Nobody:
    """``program`` as it is if ``nobody`` can run it; else with its install's
    directory (``~/.cargo`` of ``~/.cargo/bin/cargo``, ``tools/<toolchain>-<version>``
    of a toolchain installed from its recipe) and ``extra`` (RUSTUP_HOME) bound back
    into the namespace when everything in that directory on the program's way is
    open to others (the directories above it are the tmpfs's, made open); else, with
    ``system_fallback``, the same program on the system's PATH (never for a toolchain
    the recipe asked to install: its own program or none); :class:`ToolchainMissing`
    when none."""
    if runnable_by_nobody(program):
        return Toolchain4Nobody(program)
    candidates = dict.fromkeys((program.parent.parent, *(Path(e) for e in extra if e)))
    keep = tuple(k for k in candidates if k.is_dir() and _highest_closed(k) is not None)
    real = program.resolve()
    holder = next((k for k in keep if real.is_relative_to(k)), None)
    if holder is not None and runnable_by_nobody(program, holder.parent):
        return Toolchain4Nobody(program, keep)
    if not system_fallback:
        raise ToolchainMissing(
            f"{program} cannot be run by an unprivileged user, and installs of "
            f"{chain.ecosystem} run as nobody when the daemon runs as root",
            hint="Its tool directory must be readable by others (mode 0755); "
            "reinstall the toolchain, then run the command again.",
            program=chain.program,
            debian_package=chain.debian_package,
        )
    try:
        system = find(chain, {"PATH": SYSTEM_PATH})
    except ToolchainMissing:
        system = None
    if system is not None and runnable_by_nobody(system):
        return Toolchain4Nobody(system)
    raise ToolchainMissing(
        f"{program} cannot be run by an unprivileged user, and installs of "
        f"{chain.ecosystem} run as nobody when the daemon runs as root",
        hint=f"{chain.hint()} (Debian's package is on /usr/bin, which nobody can run.)",
        program=chain.program,
        debian_package=chain.debian_package,
    )


def script(prefix: Path, home: Path, hold: Path, keep: Sequence[Path] = ()) -> str:
    """The shell script (run as root in a new mount namespace) that covers ``home``
    (and the closed ancestors of ``keep``) with tmpfs, binds ``prefix`` back writable
    and ``keep`` read-only, each held at a mount point under ``hold`` meanwhile, then
    drops to nobody and runs its arguments."""
    q = shlex.quote
    covers: list[Path] = []
    for c in sorted(
        {cover_for(prefix, home), *(c for k in keep if (c := _highest_closed(k)))},
        key=lambda p: len(p.parts),
    ):
        if not any(c.is_relative_to(o) for o in covers):
            covers.append(c)
    binds = [
        (prefix, hold / "0", False),
        *((k, hold / str(i + 1), True) for i, k in enumerate(keep)),
    ]
    lines = ["set -e"]
    lines += [
        f"mkdir -p {q(str(h))}; mount --bind {q(str(src))} {q(str(h))}" for src, h, _ in binds
    ]
    lines += [f"mount -t tmpfs -o mode=0755,size=16m tsuku-confined {q(str(c))}" for c in covers]
    lines.append("mask=$(umask); umask 022")
    for src, h, read_only in binds:
        lines.append(f"mkdir -p {q(str(src))}; mount --bind {q(str(h))} {q(str(src))}")
        if read_only:
            lines.append(f"mount -o remount,bind,ro {q(str(src))}")
    lines += ['umask "$mask"', f"cd {q(str(prefix))}"]
    lines.append(
        f'exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups --inh-caps=-all -- "$@"'
    )
    return "\n".join(lines) + "\n"


def wrap(
    argv: Sequence[str], *, prefix: Path, home: Path, hold: Path, keep: Sequence[Path] = ()
) -> list[str]:
    """``argv`` run as nobody in a mount namespace that shows only ``prefix`` of
    ``home`` (and ``keep`` read-only); ``hold`` is an empty directory outside every
    cover."""
    body = script(prefix, home, hold, keep)
    return [UNSHARE, "--mount", "--propagation", "private", "--", "/bin/sh", "-c", body,
            "tsuku-confine", *argv]  # fmt: skip


@dataclass(frozen=True)
class Confined:
    """The confinement of one install: ``home`` covered but the prefix, ``hold`` an
    empty directory outside the covers, ``keep`` the toolchain's bound-back dirs."""

    home: Path
    hold: Path
    keep: tuple[Path, ...] = ()

    async def command(self, prefix: Prefix, argv: Sequence[str]) -> list[str]:
        # What root wrote for the package manager (its rc files) is nobody's to read.
        for d in (prefix.root, prefix.scratch):
            await trio.to_thread.run_sync(chown_tree, d, NOBODY, NOBODY)
        return wrap(argv, prefix=prefix.root, home=self.home, hold=self.hold, keep=self.keep)


def open_tree(root: Path) -> None:
    """Make ``root`` (a toolchain installed from its recipe, bound back read-only for
    a confined install) readable by others, as /usr/lib is: directories enterable and
    listable, files readable, executables executable. The daemon's umask made them
    its own only; ``$TSUKU_HOME`` itself stays closed, so only the namespace sees
    them. Links are left as they are."""

    def widen(path: str, extra: int) -> None:
        mode = os.lstat(path).st_mode
        if not stat.S_ISLNK(mode):
            os.chmod(path, stat.S_IMODE(mode) | extra)

    widen(str(root), 0o055)
    for dirpath, dirs, names in os.walk(root):
        for name in dirs:
            widen(os.path.join(dirpath, name), 0o055)
        for name in names:
            path = os.path.join(dirpath, name)
            mode = os.lstat(path).st_mode
            widen(path, 0o055 if mode & stat.S_IXUSR else 0o044)


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
