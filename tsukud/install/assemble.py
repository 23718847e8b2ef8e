"""Assembling a tool's tree from the unpacked assets of its recipe steps.

One assembler for the installer and for recipe validation, so a validated recipe
produces the same tree the install will: a step in ``directory`` mode contributes the
whole unpacked asset (its binaries must be files inside it); any other step contributes
only its binaries, each placed at its ``dest`` (``bin/<name>`` usually) and made
executable when it sits in ``bin/`` or already was.

Every path a recipe names is relative and stays inside the tool (:func:`safe_rel`), and
every file it points at is looked up with symlinks resolved (:func:`resolve_inside`), so
an archive's symlink cannot smuggle in a file from outside it. Files are moved, not
copied, out of the extraction directory (the same filesystem): a 200 MB binary costs a
rename, not a second write; a file listed twice is copied the second time.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from pathlib import Path

from tsukud.install.errors import BinaryNotInArchive, InstallError
from tsukud.recipe import RenderedStep

LISTING_LIMIT = 30


def safe_rel(rel: str, what: str) -> str:
    """``rel`` normalised, or :class:`InstallError` if it is absolute or leaves the tool."""
    norm = os.path.normpath(rel)
    if os.path.isabs(rel) or norm in (".", "..") or norm.startswith("../") or "\x00" in rel:
        raise InstallError(f"{what} {rel!r} must be a relative path inside the tool")
    return norm


def resolve_inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` with symlinks resolved, if that is a regular file inside ``root``."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(root / rel))
    try:
        real.relative_to(real_root)
    except ValueError:
        return None
    return real if real.is_file() else None


def files(root: Path) -> tuple[list[str], list[str]]:
    """Relative (``/``-separated) paths of the files under ``root``, and of those that
    are executable: what a person needs to fix a recipe whose binary is not there."""
    found: list[str] = []
    executables: list[str] = []
    for dirpath, _dirs, names in os.walk(root):
        for n in names:
            full = os.path.join(dirpath, n)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            found.append(rel)
            try:
                if os.lstat(full).st_mode & 0o111 and os.path.isfile(full):
                    executables.append(rel)
            except OSError:
                continue
    return sorted(found), sorted(executables)


def listing(root: Path, limit: int = LISTING_LIMIT) -> str:
    """The files under ``root`` on one line, at most ``limit`` of them."""
    names = files(root)[0]
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names) - limit} more)" if len(names) > limit else "") or "(empty)"


def _not_found(where: str, reason: str, searched: Path) -> BinaryNotInArchive:
    exc = BinaryNotInArchive(f"{where}: {reason}; it has: {listing(searched)}")
    exc.reason = reason
    exc.searched = searched
    return exc


_SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX


def library_matches(unpacked: Path, patterns: tuple[str, ...], where: str) -> list[str]:
    """The paths (relative, sorted, each once) ``install_libraries``' globs match in
    ``unpacked``; :class:`InstallError` when they match nothing (tsuku's rule) or a
    match lies outside ``unpacked`` (through a symlinked directory)."""
    real_root = Path(os.path.realpath(unpacked))
    found: set[str] = set()
    for pattern in patterns:
        if os.path.isabs(pattern) or ".." in pattern:  # read-time rule, held here too
            raise InstallError(f"{where}: install_libraries pattern {pattern!r} leaves the tool")
        for match in unpacked.glob(pattern):
            if not Path(os.path.realpath(match.parent)).is_relative_to(real_root):
                raise InstallError(f"{where}: install_libraries: {match} is outside the asset")
            found.add(match.relative_to(unpacked).as_posix())
    if not found:
        raise InstallError(
            f"{where}: install_libraries: no files matched {', '.join(patterns)}; "
            f"the asset has: {listing(unpacked)}"
        )
    return sorted(found)


def install_libraries(unpacked: Path, root: Path, patterns: tuple[str, ...], where: str) -> None:
    """tsuku's ``install_libraries``: each match put at its own relative path in
    ``root``; a symlink stays a symlink (a library's version chain) when its target is
    relative and resolves inside ``root`` (an absolute one, or one leaving the tool, is
    refused, as tsuku refuses them); a file is copied with its set-id and sticky bits
    cleared; a directory is refused (tsuku copies files)."""
    real_root = os.path.realpath(root)
    for rel in library_matches(unpacked, patterns, where):
        src, dest = unpacked / rel, root / rel
        mode = os.lstat(src).st_mode
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists() or dest.is_symlink():
            dest.unlink()
        if stat.S_ISLNK(mode):
            target = os.readlink(src)
            inside = os.path.normpath(os.path.join(os.path.realpath(dest.parent), target))
            if os.path.isabs(target) or not Path(inside).is_relative_to(real_root):
                raise InstallError(
                    f"{where}: install_libraries: {rel} links outside the tool ({target})"
                )
            os.symlink(target, dest)
        elif stat.S_ISREG(mode):
            shutil.copyfile(src, dest)
            os.chmod(dest, stat.S_IMODE(mode) & ~_SPECIAL_BITS)
        else:
            raise InstallError(f"{where}: install_libraries: {rel} is not a file or a symlink")


def link_library(root: Path, final_dir: Path, library_dir: Path, where: str) -> None:
    """tsuku's ``link_dependencies``: each entry of ``library_dir/lib`` gets a symlink
    of its name in ``root/lib`` (the tool's tree, to be moved to ``final_dir``). A file
    is linked by a path relative to where the link will live
    (``../../libyaml-0.2.5/lib/libyaml.so.2``: a moved ``$TSUKU_HOME`` keeps working);
    a symlink in the library (its version chain) is copied as it is when it stays
    inside ``lib/`` (no absolute target, no ``..``, as tsuku checks). An existing entry
    of that name that is not the same link is a collision, refused."""
    source = library_dir / "lib"
    if not source.is_dir():
        raise InstallError(f"{where}: link_dependencies: {library_dir} has no lib/ directory")
    entries = sorted(os.listdir(source))
    if not entries:
        raise InstallError(f"{where}: link_dependencies: {source} is empty")
    relative = os.path.relpath(source, final_dir / "lib")
    dest_dir = root / "lib"
    dest_dir.mkdir(parents=True, exist_ok=True)
    for name in entries:
        src, dest = source / name, dest_dir / name
        if stat.S_ISLNK(os.lstat(src).st_mode):
            target = os.readlink(src)
            if os.path.isabs(target) or ".." in target:
                raise InstallError(
                    f"{where}: link_dependencies: {src} links outside its lib/ ({target})"
                )
        else:
            target = posixpath.join(relative, name)
        if dest.is_symlink() and os.readlink(dest) == target:
            continue  # already linked (tsuku: "Already linked")
        if dest.exists() or dest.is_symlink():
            raise InstallError(
                f"{where}: link_dependencies: lib/{name} already exists and is not a link "
                f"to {target}"
            )
        os.symlink(target, dest)


class TreeAssembler:
    """Builds one tool tree in ``root`` (created on first use; its parent must exist),
    one step at a time. ``binaries`` maps each binary's name to its path in the tree."""

    def __init__(self, root: Path, tool: str) -> None:
        self.root = root
        self.tool = tool
        self.binaries: dict[str, str] = {}
        self._moved: dict[Path, Path] = {}  # extracted file -> where it went

    def add(self, step: RenderedStep, unpacked: Path) -> None:
        """Take ``step``'s part of ``unpacked`` into the tree. Raises
        :class:`BinaryNotInArchive` when a binary is not a file in the asset and
        :class:`InstallError` when the recipe names a path outside the tool."""
        where = f"{self.tool}: steps[{step.index}]"
        for rel in step.chmod:  # a chmod step: executable before anything moves
            real = resolve_inside(unpacked, safe_rel(rel, f"{where}: chmod file"))
            if real is None:
                raise _not_found(
                    where, f"chmod: {rel} is not a file in {step.asset_name}", unpacked
                )
            os.chmod(real, 0o755)  # noqa: S103 - an executable for everyone, like /usr/bin
        if step.install_mode == "directory":
            self._add_directory(step, unpacked, where)
            if step.libraries:  # already in the tree: they must be there all the same
                library_matches(self.root, step.libraries, where)
        else:
            if step.libraries:  # copied before the binaries move out of the asset
                self.root.mkdir(exist_ok=True)
                install_libraries(unpacked, self.root, step.libraries, where)
            self._add_binaries(step, unpacked, where)

    def finish(self) -> dict[str, str]:
        """The tree exists (also for a recipe with no step), and its binaries."""
        self.root.mkdir(exist_ok=True)
        return self.binaries

    def _add_directory(self, step: RenderedStep, unpacked: Path, where: str) -> None:
        dests = [safe_rel(b.dest, f"{where}: binary") for b in step.binaries]
        if not self.root.exists():
            os.rename(unpacked, self.root)
        else:
            shutil.copytree(unpacked, self.root, symlinks=True, dirs_exist_ok=True)
        for dest in dests:
            real = resolve_inside(self.root, dest)
            if real is None:
                raise _not_found(where, f"{dest} is not a file in {step.asset_name}", self.root)
            os.chmod(real, 0o755)  # noqa: S103 - an executable for everyone, like /usr/bin
            self.binaries[posixpath.basename(dest)] = dest

    def _add_binaries(self, step: RenderedStep, unpacked: Path, where: str) -> None:
        # Every source is found before any is moved, so a missing one is reported
        # against the whole unpacked asset. ``files`` (outputs that are not commands,
        # ca-certificates' share/…/cacert.pem) are placed the same way, not linked.
        placed: list[tuple[Path, str, bool]] = []  # (source, dest, a command)
        entries = [(b, True) for b in step.binaries] + [(f, False) for f in step.files]
        for b, command in entries:
            src = safe_rel(b.src, f"{where}: binary src")
            dest = safe_rel(b.dest, f"{where}: binary dest")
            real = resolve_inside(unpacked, src)
            if real is None:
                strip = f" (after strip_dirs={step.strip_dirs})" if step.strip_dirs else ""
                reason = f"{b.src} is not a file in {step.asset_name}{strip}"
                raise _not_found(where, reason, unpacked)
            placed.append((real, dest, command))
        self.root.mkdir(exist_ok=True)
        for real, dest, command in placed:
            target = self.root / dest
            earlier = self._moved.get(real)
            if earlier == target:  # listed twice with the same dest: already there
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists() or target.is_symlink():
                target.unlink()
            if earlier is None:
                executable = bool(os.stat(real).st_mode & 0o111)
                os.rename(real, target)
                self._moved[real] = target
            else:  # the same file installed twice: the second one is a copy
                executable = bool(os.stat(earlier).st_mode & 0o111)
                shutil.copyfile(earlier, target)
            mode = 0o755 if dest.startswith("bin/") or executable else 0o644
            os.chmod(target, mode)
            if command:
                self.binaries[posixpath.basename(dest)] = dest
