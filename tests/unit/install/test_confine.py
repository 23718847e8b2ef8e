"""What an ecosystem install may leave and where its scripts may run (issue 33, item
9): the pure parts of ``install/ecosystem/confine.py`` and of choosing a PyPI wheel."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tsukud.install.ecosystem import cargo, confine, toolchain
from tsukud.registries import pypi


def test_only_links_into_tools_are_the_installers_in_bin(tmp_path: Path) -> None:
    """What an install script wrote into bin/ (a file, a directory, a link to
    elsewhere) is stray; a link into tools/ (the installer's, maybe another install
    running beside this one) and what was there before are not."""
    home = tmp_path / "home"
    bin_dir, tools = home / "bin", home / "tools"
    (tools / "ok-1.0" / "bin").mkdir(parents=True)
    bin_dir.mkdir()
    (bin_dir / "old").write_text("kept: there before")
    before = {"old"}
    (bin_dir / "ok").symlink_to(tools / "ok-1.0" / "bin" / "ok")
    (bin_dir / "rt3-persist").write_text("#!/bin/sh\necho pwned\n")
    (bin_dir / "sudo").symlink_to("/tmp/elsewhere/sudo")
    (bin_dir / "adir").mkdir()
    (bin_dir / "sneaky").symlink_to("../tools/../../outside")
    strays = sorted(p.name for p in confine.stray_entries(bin_dir, before, tools))
    assert strays == ["adir", "rt3-persist", "sneaky", "sudo"]
    assert confine.stray_entries(tmp_path / "absent", set(), tools) == []


def test_the_cover_is_the_home_or_the_highest_ancestor_nobody_cannot_enter() -> None:
    base = Path(tempfile.mkdtemp())  # in /tmp, which anyone enters (pytest's is 0700)
    try:
        top = base / "private"
        home = top / "open" / "home"
        home.mkdir(parents=True)
        os.chmod(base, 0o755)
        os.chmod(top, 0o700)
        os.chmod(top / "open", 0o755)
        prefix = home / "tools" / "x-1"
        assert confine.cover_for(prefix, home) == top
        os.chmod(top, 0o755)
        assert confine.cover_for(prefix, home) == home
    finally:
        shutil.rmtree(base)


def test_the_wrapped_command_drops_to_nobody_in_its_own_mount_namespace(tmp_path: Path) -> None:
    argv = confine.wrap(
        ["npm", "install", "x"], prefix=tmp_path / "p", home=tmp_path, hold=tmp_path / "h"
    )
    assert argv[:4] == ["unshare", "--mount", "--propagation", "private"]
    assert argv[-3:] == ["npm", "install", "x"]
    script = argv[argv.index("-c") + 1]
    assert "--reuid=65534" in script and "--clear-groups" in script
    assert "mount -t tmpfs" in script


def test_a_windows_only_wheel_fits_no_linux_host() -> None:
    fits = pypi.wheel_fits
    assert fits("x-1.0-py3-none-any.whl", "linux", "amd64")
    assert fits(
        "x-1.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl", "linux", "amd64"
    )
    assert not fits("x-1.0-py3-none-win_amd64.whl", "linux", "amd64")
    assert not fits("x-1.0-cp311-cp311-manylinux_2_17_aarch64.whl", "linux", "amd64")
    assert fits("x-1.0-cp311-cp311-macosx_11_0_universal2.whl", "darwin", "arm64")
    assert not fits("x-1.0-cp311-cp311-macosx_11_0_universal2.whl", "linux", "arm64")
    assert not fits("garbage.whl", "linux", "amd64")


def test_console_scripts_are_read_from_a_static_pyproject_only() -> None:
    static = '[project]\nname = "x"\n\n[project.scripts]\nfmtp = "m:f"\n"bad name" = "m:g"\n'
    assert pypi.pyproject_scripts(static) == ["fmtp"]
    dynamic = '[project]\nname = "x"\ndynamic = ["scripts"]\n'
    assert pypi.pyproject_scripts(dynamic) is None
    assert pypi.pyproject_scripts("[project]\nname = 'x'\n") is None
    assert pypi.pyproject_scripts("not = [toml") is None


def test_a_toolchain_under_a_closed_directory_is_bound_back_for_nobody() -> None:
    """A rustup under /root (0700): ``~/.cargo`` and RUSTUP_HOME are kept (bound back
    read-only under the tmpfs that covers /root); the script covers both homes."""
    base = Path(tempfile.mkdtemp())
    try:
        os.chmod(base, 0o755)
        root = base / "root"
        cargo_bin = root / ".cargo" / "bin"
        cargo_bin.mkdir(parents=True)
        (root / ".rustup").mkdir()
        os.chmod(root, 0o700)
        for d in (root / ".cargo", cargo_bin, root / ".rustup"):
            os.chmod(d, 0o755)
        program = cargo_bin / "cargo"
        program.write_text("#!/bin/sh\n")
        os.chmod(program, 0o755)
        chosen = confine.toolchain_for_nobody(cargo.TOOLCHAIN, program, [str(root / ".rustup")])
        assert chosen.program == program
        assert chosen.keep == (root / ".cargo", root / ".rustup")
        home = base / "home"
        home.mkdir(mode=0o700)
        text = confine.script(home / "tools" / "x-1", home, base / "hold", chosen.keep)
        assert f"tsuku-confined {home}\n" in text and f"tsuku-confined {root}\n" in text
        assert f"mount -o remount,bind,ro {root / '.rustup'}" in text
        os.chmod(cargo_bin, 0o700)  # not readable below the cover: the system's instead
        try:
            other = confine.toolchain_for_nobody(cargo.TOOLCHAIN, program).program
        except toolchain.ToolchainMissing:
            other = None  # no cargo on the system's PATH either
        assert other != program
    finally:
        shutil.rmtree(base)


def test_a_toolchain_installed_from_its_recipe_is_opened_and_never_swapped() -> None:
    """A toolchain installed into ``$TSUKU_HOME/tools`` (0700 directories above it, as
    the daemon's umask makes them): once its tree is opened it is bound back for
    nobody; closed, it is refused, never replaced by the system's program of the same
    name (the recipe asked for its own)."""
    base = Path(tempfile.mkdtemp())
    try:
        os.chmod(base, 0o755)
        home = base / "home"
        chain_dir = home / "tools" / "nodejs-1.0.0"
        (chain_dir / "bin").mkdir(parents=True)
        for d in (home, home / "tools", chain_dir, chain_dir / "bin"):
            os.chmod(d, 0o700)
        program = chain_dir / "bin" / "cargo"
        program.write_text("#!/bin/sh\n")
        os.chmod(program, 0o700)
        try:
            confine.toolchain_for_nobody(cargo.TOOLCHAIN, program, system_fallback=False)
            raise AssertionError("a closed toolchain was accepted")
        except toolchain.ToolchainMissing as exc:
            assert str(program) in exc.message and "reinstall the toolchain" in (exc.hint or "")
        confine.open_tree(chain_dir)
        assert os.stat(chain_dir / "bin").st_mode & 0o005 == 0o005
        assert os.stat(program).st_mode & 0o005 == 0o005
        assert os.stat(home / "tools").st_mode & 0o077 == 0  # $TSUKU_HOME stays closed
        chosen = confine.toolchain_for_nobody(cargo.TOOLCHAIN, program, system_fallback=False)
        assert chosen == confine.Toolchain4Nobody(program, (chain_dir,))
    finally:
        shutil.rmtree(base)
