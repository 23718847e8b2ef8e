"""The install transaction on a real tree: whatever it changed (tool directory, a copy
moved aside, links switched or removed) a rollback puts back, and a commit keeps."""

from __future__ import annotations

import os
from pathlib import Path

from tsukud.install import layout
from tsukud.install.transaction import InstallTransaction


def installed_tool(home: Path, dirname: str, **bins: str) -> Path:
    """``tools/<dirname>`` with ``bin/<name>`` files holding ``content``, linked from
    ``bin/``, as a finished install leaves them."""
    d = home / "tools" / dirname
    (d / "bin").mkdir(parents=True)
    (home / "bin").mkdir(exist_ok=True)
    for name, content in bins.items():
        (d / "bin" / name).write_text(content)
        os.symlink(d / "bin" / name, home / "bin" / name)
    return d


def new_tree(home: Path, **bins: str) -> tuple[Path, dict[str, dict[str, str]]]:
    root = home / "tools" / ".staging-t-x" / "root"
    (root / "bin").mkdir(parents=True)
    for name, content in bins.items():
        (root / "bin" / name).write_text(content)
    return root, {name: {"path": f"bin/{name}", "sha256": "0" * 64} for name in bins}


def record(d: Path, *bins: str) -> dict[str, object]:
    return {"install_dir": str(d), "binaries": {b: {"path": f"bin/{b}"} for b in bins}}


def links(home: Path) -> dict[str, str]:
    return {p.name: os.readlink(p) for p in sorted((home / "bin").iterdir())}


def tools(home: Path) -> list[str]:
    """Entries of ``tools/`` but the staging directory and ``.trash-*`` (those are being
    deleted in the background)."""
    skip = (layout.STAGING_PREFIX, layout.TRASH_PREFIX)
    return sorted(p.name for p in (home / "tools").iterdir() if not p.name.startswith(skip))


def test_rollback_after_links_switched_restores_the_previous_version(tmp_path: Path) -> None:
    home = tmp_path
    old = installed_tool(home, "t-1.0", t="old t", t_helper="old helper")
    before = links(home)
    root, binaries = new_tree(home, t="new t", t_new="new only")
    tx = InstallTransaction(home)
    final = layout.tool_dir(home, "t", "2.0")
    tx.move_into_place(root, final)
    tx.switch_links(binaries, final)
    tx.remove_stale_links(record(old, "t", "t_helper"), binaries)
    assert links(home) == {"t": str(final / "bin/t"), "t_new": str(final / "bin/t_new")}
    assert tools(home) == ["t-1.0", "t-2.0"]

    tx.rollback()  # e.g. recording install.completed failed

    assert links(home) == before
    assert tools(home) == ["t-1.0"]
    assert (home / "bin" / "t").read_text() == "old t"
    assert (home / "bin" / "t_helper").read_text() == "old helper"
    assert tx.final_dir is None and tx.links_done == []
    tx.rollback()  # nothing left to undo: a second rollback changes nothing
    assert links(home) == before and tools(home) == ["t-1.0"]


def same_version_reinstall(home: Path) -> tuple[Path, InstallTransaction]:
    """``t-1.0`` installed, and a new copy of it moved in and linked (``--force``)."""
    old = installed_tool(home, "t-1.0", t="old t")
    root, binaries = new_tree(home, t="reinstalled t")
    tx = InstallTransaction(home)
    tx.move_into_place(root, old)
    tx.switch_links(binaries, old)
    return old, tx


def test_a_failed_same_version_reinstall_puts_the_old_copy_back(tmp_path: Path) -> None:
    home = tmp_path
    old, tx = same_version_reinstall(home)
    aside = tx.moved_aside
    assert aside is not None and aside.name.startswith(".old-t-1.0.")
    assert (old / "bin" / "t").read_text() == "reinstalled t"

    tx.rollback()  # e.g. the verify command failed

    assert (old / "bin" / "t").read_text() == "old t"
    assert not aside.exists() and tools(home) == ["t-1.0"]
    assert links(home) == {"t": str(old / "bin/t")}


def test_a_regular_file_taken_over_by_force_is_removed_again(tmp_path: Path) -> None:
    home = tmp_path
    (home / "bin").mkdir()
    (home / "bin" / "t").write_text("someone else's file")
    root, binaries = new_tree(home, t="t")
    tx = InstallTransaction(home)
    final = layout.tool_dir(home, "t", "1.0")
    tx.move_into_place(root, final)
    tx.switch_links(binaries, final)
    assert (home / "bin" / "t").is_symlink()
    tx.rollback()
    # The file was not ours to keep a copy of (only --force replaces it): no link stays.
    assert not (home / "bin" / "t").exists() and not (home / "bin" / "t").is_symlink()
    assert tools(home) == []


def test_commit_keeps_the_install_and_deletes_what_it_replaced(tmp_path: Path) -> None:
    home = tmp_path
    old = installed_tool(home, "t-1.0", t="old t", t_helper="helper")
    root, binaries = new_tree(home, t="new t")
    tx = InstallTransaction(home)
    final = layout.tool_dir(home, "t", "2.0")
    tx.move_into_place(root, final)
    tx.switch_links(binaries, final)
    tx.remove_stale_links(record(old, "t", "t_helper"), binaries)
    assert tx.commit() == final
    tx.rollback()  # after commit there is nothing to undo
    assert links(home) == {"t": str(final / "bin/t")}
    tx.clean_up(final, old)
    assert tools(home) == ["t-2.0"]  # the old version went to the trash
    assert (home / "bin" / "t").read_text() == "new t"


def test_commit_of_a_same_version_reinstall_drops_the_copy_moved_aside(tmp_path: Path) -> None:
    home = tmp_path
    old, tx = same_version_reinstall(home)
    aside = tx.moved_aside
    final = tx.commit()
    tx.clean_up(final, old)  # the previous directory is the new one: kept
    assert tools(home) == ["t-1.0"] and tx.moved_aside is None
    assert aside is not None and not aside.exists()
    assert (old / "bin" / "t").read_text() == "reinstalled t"
