"""The pure rules of ``install/shadowing.py``: what counts as the system's PATH, which
names are guarded, and what a tool's binaries would shadow."""

from __future__ import annotations

from pathlib import Path

from tsukud.install.shadowing import is_guarded, shadowing, system_dirs


def _exe(d: Path, name: str) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text("#!/bin/sh\n")
    (d / name).chmod(0o755)


def test_tsukus_own_bin_and_relative_entries_are_not_the_system(tmp_path: Path) -> None:
    own, sysbin = tmp_path / "home" / "bin", tmp_path / "sys"
    _exe(own, "git")
    _exe(sysbin, "make")
    link = tmp_path / "bin-link"
    link.symlink_to(own)  # tsuku's bin under another spelling is still tsuku's
    dirs = system_dirs(f"{own}:{link}:.:relative/bin::{sysbin}:{sysbin}", own)
    assert dirs == [str(sysbin)]
    found = shadowing("foo", ["foo", "git", "make"], dirs)
    assert found.shadows == {"make": str(sysbin / "make")} and found.guarded == ()


def test_guarded_names_whatever_the_path(tmp_path: Path) -> None:
    for name in ("sudo", "SU", "doas", "ssh-agent", "gpg", "git-credential-store", "pinentry-tty"):
        assert is_guarded(name), name
    for name in ("git", "age", "kubectl", "sg", "gh"):
        assert not is_guarded(name), name
    found = shadowing("foo", ["foo", "sudo", "ssh"], [])
    assert found.guarded == ("ssh", "sudo") and bool(found)
    assert not shadowing("sudo", ["sudo"], [])  # the command's own recipe


def test_the_tools_own_name_and_accepted_names_are_not_asked_again(tmp_path: Path) -> None:
    sysbin = tmp_path / "sys"
    for name in ("foo", "git", "make"):
        _exe(sysbin, name)
    (sysbin / "notexec").write_text("")
    found = shadowing("FOO", ["foo", "git", "make", "notexec"], [str(sysbin)], accepted=["git"])
    assert found.shadows == {"make": str(sysbin / "make")}
    assert shadowing("foo", ["sudo"], [], accepted=["sudo"]).guarded == ("sudo",)
