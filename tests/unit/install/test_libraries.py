"""``install_libraries`` and ``link_dependencies`` as tsuku means them: library files
copied into the tool with their symlink chains, and a dependency's ``lib/`` linked into
the tool's by relative links; what would reach outside the tool is refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec
import pytest

from tests.unit.install.test_assemble import step, unpacked
from tsukud.install.assemble import TreeAssembler, install_libraries, link_library
from tsukud.install.errors import InstallError


def _library_asset(tmp_path: Path) -> Path:
    x = unpacked(tmp_path, {"lib/libyaml.so.2.0.9": b"ELF", "include/yaml.h": b"", "bin/t": b""})
    os.symlink("libyaml.so.2.0.9", x / "lib" / "libyaml.so.2")
    os.symlink("libyaml.so.2", x / "lib" / "libyaml.so")
    return x


def test_library_files_keep_their_symlink_chain(tmp_path: Path) -> None:
    x = _library_asset(tmp_path)
    (x / "lib" / "libyaml.so.2.0.9").chmod(0o4755)  # set-uid, which must not survive
    root = tmp_path / "root"
    tree = TreeAssembler(root, "libyaml")
    tree.add(msgspec.structs.replace(step(("bin/t", "bin/t")), libraries=("lib/*.so*",)), x)
    lib = root / "lib"
    assert sorted(os.listdir(lib)) == ["libyaml.so", "libyaml.so.2", "libyaml.so.2.0.9"]
    assert os.readlink(lib / "libyaml.so.2") == "libyaml.so.2.0.9"
    assert os.readlink(lib / "libyaml.so") == "libyaml.so.2"
    mode = stat.S_IMODE((lib / "libyaml.so.2.0.9").stat().st_mode)
    assert mode == 0o755
    assert not (root / "include").exists()  # only what the patterns name
    assert tree.finish() == {"t": "bin/t"}


@pytest.mark.parametrize(
    ("link", "why"),
    [("/etc/passwd", "links outside the tool"), ("../../../etc/passwd", "links outside")],
)
def test_a_library_link_out_of_the_tool_is_refused(tmp_path: Path, link: str, why: str) -> None:
    x = _library_asset(tmp_path)
    os.symlink(link, x / "lib" / "libevil.so")
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(InstallError, match=why):
        install_libraries(x, root, ("lib/*.so*",), "t: steps[1]")


def test_patterns_that_match_nothing_fail_as_in_tsuku(tmp_path: Path) -> None:
    x = _library_asset(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    with pytest.raises(InstallError, match=r"no files matched lib/\*\.dylib; the asset has"):
        install_libraries(x, root, ("lib/*.dylib",), "t: steps[1]")
    with pytest.raises(InstallError, match="is not a file or a symlink"):
        install_libraries(x, root, ("include",), "t: steps[1]")


def test_a_dependency_is_linked_relative_to_where_the_tool_will_live(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    dep = tools / "libyaml-0.2.5"
    (dep / "lib").mkdir(parents=True)
    (dep / "lib" / "libyaml.so.2.0.9").write_bytes(b"ELF")
    os.symlink("libyaml.so.2.0.9", dep / "lib" / "libyaml.so.2")
    root, final = tools / ".staging-ruby", tools / "ruby-3.4.0"
    link_library(root, final, dep, "ruby: steps[3]")
    lib = root / "lib"
    assert os.readlink(lib / "libyaml.so.2.0.9") == "../../libyaml-0.2.5/lib/libyaml.so.2.0.9"
    assert os.readlink(lib / "libyaml.so.2") == "libyaml.so.2.0.9"  # the chain, as it is
    link_library(root, final, dep, "ruby: steps[3]")  # already linked: nothing to do
    os.rename(root, final)
    assert (final / "lib" / "libyaml.so.2").read_bytes() == b"ELF"


def test_a_dependency_link_that_would_collide_or_escape_is_refused(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    dep = tools / "libz-1"
    (dep / "lib").mkdir(parents=True)
    (dep / "lib" / "libz.so").write_bytes(b"ELF")
    root, final = tools / ".staging-t", tools / "t-1"
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libz.so").write_bytes(b"mine")
    with pytest.raises(InstallError, match="already exists and is not a link"):
        link_library(root, final, dep, "t: steps[2]")
    (root / "lib" / "libz.so").unlink()
    os.symlink("../../../../etc/passwd", dep / "lib" / "libevil.so")
    with pytest.raises(InstallError, match="links outside its lib/"):
        link_library(root, final, dep, "t: steps[2]")
    with pytest.raises(InstallError, match="has no lib/ directory"):
        link_library(root, final, tools / "nothing-1", "t: steps[2]")
