"""The filesystem side of one install: put the new tree in place, point the links at
it, and either commit or put everything back.

Each change is recorded as it is made (the directory moved in, a same-version copy
moved aside, each link with its previous target), so :meth:`InstallTransaction.rollback`
undoes exactly what happened, in reverse, whatever step failed. Once the install's
``install.completed`` is recorded the transaction is committed and nothing is undone;
what it replaced is then deleted.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tsukud import log
from tsukud.install import layout


class InstallTransaction:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.final_dir: Path | None = None  # the new tree, once moved into place
        self.moved_aside: Path | None = None  # a same-version copy moved out of the way
        self.links_done: list[tuple[Path, str | None]] = []  # (link, previous target)

    def move_into_place(self, root: Path, final_dir: Path) -> None:
        """Rename the assembled ``root`` to ``final_dir``; a copy already there (a
        same-version reinstall) is moved aside until commit."""
        if final_dir.exists() or final_dir.is_symlink():
            aside = layout.aside_path(final_dir)
            os.replace(final_dir, aside)
            self.moved_aside = aside
        os.chmod(root, 0o755)  # noqa: S103 - readable tool tree, like /usr/lib
        os.replace(root, final_dir)
        self.final_dir = final_dir

    def claim(self, final_dir: Path) -> None:
        """Make ``final_dir`` an empty directory the install builds in place (an
        ecosystem's package manager: venvs and wrappers carry absolute paths); a copy
        already there is moved aside until commit, as in :meth:`move_into_place`."""
        if final_dir.exists() or final_dir.is_symlink():
            aside = layout.aside_path(final_dir)
            os.replace(final_dir, aside)
            self.moved_aside = aside
        final_dir.mkdir(mode=0o755)
        self.final_dir = final_dir

    def switch_links(self, binaries: Mapping[str, Mapping[str, str]], final_dir: Path) -> None:
        """Point ``bin/<name>`` at each binary in ``final_dir``."""
        bins = layout.bin_dir(self.home)
        bins.mkdir(parents=True, exist_ok=True)
        for bin_name, info in sorted(binaries.items()):
            link = bins / bin_name
            previous = os.readlink(link) if link.is_symlink() else None
            if link.exists() and not link.is_symlink():
                link.unlink()  # only reached with --force (the caller checked conflicts)
            layout.replace_symlink(link, final_dir / info["path"])
            self.links_done.append((link, previous))

    def remove_stale_links(
        self, previous: Mapping[str, Any], binaries: Mapping[str, Mapping[str, str]]
    ) -> None:
        """Remove the links of the replaced version's binaries the new one lacks."""
        old_dir = Path(str(previous.get("install_dir", "")))
        for bin_name in previous.get("binaries") or {}:
            if bin_name in binaries:
                continue
            link = layout.bin_dir(self.home) / bin_name
            if link.is_symlink() and Path(os.readlink(link)).is_relative_to(old_dir):
                target = os.readlink(link)
                link.unlink()
                self.links_done.append((link, target))

    def commit(self) -> Path | None:
        """The install is recorded: nothing may be undone any more. Returns the new
        tree's directory."""
        final_dir, self.final_dir = self.final_dir, None
        self.links_done = []
        return final_dir

    def clean_up(self, final_dir: Path | None, replaced: Path | None) -> None:
        """After commit: delete the copy moved aside and ``replaced`` (the previous
        version's directory), unless that is the new tree itself."""
        if self.moved_aside is not None:
            layout.discard(self.moved_aside)
            self.moved_aside = None
        if replaced is not None and replaced != final_dir:
            layout.discard(replaced)

    def rollback(self) -> None:
        """Undo links and directories of an install that did not commit. Synchronous:
        it runs even when the request was cancelled."""
        for link, previous in reversed(self.links_done):
            try:
                if previous is None:
                    link.unlink(missing_ok=True)
                else:
                    layout.replace_symlink(link, Path(previous))
            except OSError as exc:
                log.get().warning("install.rollback_link_failed", link=str(link), error=str(exc))
        self.links_done = []
        if self.final_dir is not None:
            shutil.rmtree(self.final_dir, ignore_errors=True)
            self.final_dir = None
        if self.moved_aside is not None:
            target = self.moved_aside.with_name(layout.original_name(self.moved_aside.name))
            try:
                os.replace(self.moved_aside, target)
            except OSError as exc:
                log.get().warning("install.rollback_restore_failed", error=str(exc))
            self.moved_aside = None
