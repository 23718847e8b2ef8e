"""The pure part of builds from source (``install/build.py``): the script the build
container runs, the container it runs in, and what the host accepts of its output."""

from __future__ import annotations

import os
import shlex
import stat
from pathlib import Path

from tests.unit.container_isolation import isolated_mounts
from tsukud.install.build import (
    BUILD_DIR,
    SOURCE_DIR,
    build_script,
    build_spec,
    check_output_tree,
    dependency_env,
    missing_dependencies,
    tame_modes,
)
from tsukud.recipe.build import Build
from tsukud.sandbox.runtime import DEFAULT_PATH

BUILD = Build(
    index=2,
    source_dir="my tool-1.0",
    args=("--with-x=a b", "--enable-y"),
    make_targets=("", "install"),
    executables=("tool",),
    rpaths=(("lib/libt.so", "$ORIGIN"),),
)
PREFIX = "/home/me/.tsuku/tools/tool-1.0"


def test_the_script_is_tsukus_configure_make_with_every_word_quoted() -> None:
    lines = build_script(BUILD, PREFIX).splitlines()
    assert lines[0] == "set -e"
    assert f"cp -R {SOURCE_DIR}/. {BUILD_DIR}/" in lines
    assert f"cd '{BUILD_DIR}/my tool-1.0'" in lines
    configure = f"./configure --prefix={PREFIX} '--with-x=a b' --enable-y"
    assert configure in lines
    assert lines.index(configure) < lines.index("make") < lines.index("make install")
    check = next(line for line in lines if line.startswith("[ -x "))
    assert shlex.split(check)[:4] == ["[", "-x", f"{PREFIX}/bin/tool", "]"]
    # set_rpath: tsuku's two patchelf calls, after the build, the rpath quoted.
    set_rpath = f"patchelf --force-rpath --set-rpath '$ORIGIN' {PREFIX}/lib/libt.so"
    assert lines.index(set_rpath) > lines.index(check)
    assert f"patchelf --remove-rpath {PREFIX}/lib/libt.so || true" in lines


def test_a_cmake_build_is_tsukus_three_cmake_calls() -> None:
    cmake = Build(index=2, source_dir="n", kind="cmake_build", args=("-DA=a b",))
    lines = build_script(cmake, PREFIX).splitlines()
    out = f"{BUILD_DIR}/.cmake-build"
    calls = [
        f"cmake -S . -B {out} -DCMAKE_INSTALL_PREFIX={PREFIX} -DCMAKE_BUILD_TYPE=Release '-DA=a b'",
        f"cmake --build {out} --config Release",
        f"cmake --install {out}",
    ]
    assert [line for line in lines if line.startswith("cmake ")] == calls
    assert not any(line.startswith(("./configure", "make")) for line in lines)


def test_the_build_container_keeps_the_validation_isolation(tmp_path: Path) -> None:
    src, scratch, prefix = tmp_path / "src", tmp_path / "b", tmp_path / "tools" / "t-1"
    spec = build_spec("img", BUILD, src, scratch, prefix, {"k": "v"})
    config, mounts = spec.container_config(), isolated_mounts(spec)
    assert mounts == {
        (str(src), SOURCE_DIR): True,  # the downloaded source is never written
        (str(scratch), BUILD_DIR): False,
        (str(prefix), str(prefix)): False,  # the tool's directory at its own path
    }
    assert config["Cmd"][:2] == ["/bin/sh", "-c"] and "./configure" in config["Cmd"][2]
    assert "SOURCE_DATE_EPOCH=0" in config["Env"]


def test_only_files_directories_and_links_inside_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "tool").write_text("x")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "libt.so.1").write_text("x")
    os.symlink("libt.so.1", tmp_path / "lib" / "libt.so")  # inside: fine
    os.symlink("../lib", tmp_path / "bin" / "lib")  # inside: fine
    assert check_output_tree(tmp_path) == []
    os.symlink("/etc/shadow", tmp_path / "bin" / "shadow")
    os.symlink("../../../etc", tmp_path / "lib" / "etc")
    os.mkfifo(tmp_path / "bin" / "pipe")
    assert check_output_tree(tmp_path) == [
        "bin/pipe is not a file or directory",
        "bin/shadow links outside the tool (/etc/shadow)",
        "lib/etc links outside the tool (../../../etc)",
    ]


def test_set_id_bits_and_foreign_write_are_cleared(tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir()
    tool.write_text("x")
    tool.chmod(0o6777)
    (tmp_path / "share").mkdir(mode=0o777)
    (tmp_path / "share").chmod(0o1777)
    os.symlink("tool", tmp_path / "bin" / "alias")
    tame_modes(tmp_path)
    assert stat.S_IMODE(tool.stat().st_mode) == 0o755
    assert stat.S_IMODE((tmp_path / "share").stat().st_mode) == 0o755
    assert os.readlink(tmp_path / "bin" / "alias") == "tool"


def test_build_dependencies_are_mounted_read_only_at_their_own_paths(tmp_path: Path) -> None:
    src, scratch, prefix = tmp_path / "src", tmp_path / "b", tmp_path / "tools" / "t-1"
    lib = tmp_path / "tools" / "libgreet-2.1"
    (lib / "lib" / "pkgconfig").mkdir(parents=True)
    (lib / "include").mkdir()
    bare = tmp_path / "tools" / "data-1"  # neither headers nor libraries
    bare.mkdir()
    spec = build_spec("img", BUILD, src, scratch, prefix, {}, {"libgreet": lib, "data": bare})
    host = spec.container_config()["HostConfig"]
    mounts = {(m["Source"], m["Target"]): m["ReadOnly"] for m in host["Mounts"]}
    # Untrusted build code reads its dependencies and can change none of them.
    assert mounts[(str(lib), str(lib))] is True
    assert mounts[(str(bare), str(bare))] is True
    env = dict(e.split("=", 1) for e in spec.container_config()["Env"])
    # tsuku's setup_build_env: only what exists is pointed at.
    assert env["PKG_CONFIG_PATH"] == f"{lib}/lib/pkgconfig"
    assert env["CPPFLAGS"] == f"-I{lib}/include"
    assert env["LDFLAGS"] == f"-L{lib}/lib"
    assert env["CMAKE_PREFIX_PATH"] == f"{lib}:{bare}"
    assert env["PATH"] == DEFAULT_PATH  # no dependency has a bin/
    (lib / "bin").mkdir()
    assert dependency_env([lib])["PATH"] == f"{lib}/bin:{DEFAULT_PATH}"
    assert dependency_env([]) == {}


def test_an_rpath_part_naming_a_dependency_becomes_where_it_was_installed(
    tmp_path: Path,
) -> None:
    """tsuku's curl: ``{libs_dir}/openssl-{deps.openssl.version}/lib`` is openssl's
    library directory; here openssl's tool directory, installed before the build."""
    written = "$ORIGIN/../lib:{libs_dir}/libgreet-{deps.libgreet.version}/lib"
    build = Build(index=2, source_dir="g", executables=("g",), rpaths=(("bin/g", written),))
    lib = tmp_path / "tools" / "libgreet-2.1"
    lines = build_script(build, PREFIX, {"libgreet": lib}).splitlines()
    filled = f"$ORIGIN/../lib:{lib}/lib"
    assert f"patchelf --force-rpath --set-rpath {shlex.quote(filled)} {PREFIX}/bin/g" in lines
    assert missing_dependencies(build, {"libgreet": lib}) == []
    # Not installed for this build: refused before anything runs, never guessed.
    assert missing_dependencies(build, {}) == ["libgreet"]
    assert missing_dependencies(build, {"zlib": lib}) == ["libgreet"]
    assert missing_dependencies(BUILD, {}) == []  # $ORIGIN only: nothing to install
