"""``install/build.py`` against the real build container: a build that fails, a verify
that fails against the output, and a ``make install`` that leaves a link out of the
tool are refused with the stage and the build's own words; a set-uid bit the build set
does not reach the host. Each case is one or two short container runs (no daemon)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import msgspec
import pytest
import trio

from tests.integration.source_build.conftest import MAKEFILE, VERSION, sources
from tsukud.install.build import BuildSandbox, build_in_container
from tsukud.install.errors import BuildFailed
from tsukud.recipe import VerifyCheck
from tsukud.recipe.build import Build
from tsukud.sandbox.runtime import ContainerRuntime, ImageMissing

BUILD = Build(
    index=3,
    source_dir=f"hello-src-{VERSION}",
    args=("--greeting=hi",),
    executables=("hello",),
)
VERIFY = VerifyCheck(command="hello", patterns=(f"hi {VERSION}",))


def _unpacked(root: Path, makefile: bytes = MAKEFILE) -> Path:
    src = root / "src"
    for name, (data, mode) in sources(root / "marker", makefile).items():
        path = src / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    return src


async def _build(
    runtime: ContainerRuntime,
    image: str,
    tmp_path: Path,
    build: Build = BUILD,
    *,
    makefile: bytes = MAKEFILE,
    checks: tuple[VerifyCheck, ...] = (VERIFY,),
    also: dict[str, bytes] | None = None,
    deps: dict[str, Path] | None = None,
) -> Path:
    async def rt() -> ContainerRuntime:
        return runtime

    lock = trio.Lock()

    def hold(_session: str | None) -> trio.Lock:
        return lock

    source = _unpacked(tmp_path, makefile)
    for name, data in (also or {}).items():
        (source / f"hello-src-{VERSION}" / name).write_bytes(data)
    scratch, prefix = tmp_path / "scratch", tmp_path / "home" / "tools" / "hello-src-1.0.0"
    scratch.mkdir()
    prefix.mkdir(parents=True)
    sandbox = BuildSandbox(runtime=rt, lock=hold, image=image)
    await build_in_container(
        sandbox,
        build,
        tool="hello-src",
        source=source,
        scratch=scratch,
        prefix=prefix,
        checks=checks,
        session="test",
        deps=deps,
    )
    return prefix


async def test_the_output_is_proven_and_tamed(
    runtime: ContainerRuntime, build_image: str, tmp_path: Path
) -> None:
    setuid = MAKEFILE + b"\tchmod 4777 $(PREFIX)/bin/hello\n"
    # set_rpath runs in the container after the build; readelf there shows it, the
    # part naming a build dependency (tsuku's curl spelling) made its tool directory.
    written = "$ORIGIN/../lib:{libs_dir}/libgreet-{deps.libgreet.version}/lib"
    with_rpath = msgspec.structs.replace(BUILD, rpaths=(("bin/hello", written),))
    home = tmp_path / "home" / "tools" / "hello-src-1.0.0"
    libgreet = tmp_path / "home" / "tools" / "libgreet-2.1"
    (libgreet / "lib").mkdir(parents=True)
    rpath = VerifyCheck(
        command=f"readelf -d {home}/bin/hello",
        patterns=(f"Library rpath: [$ORIGIN/../lib:{libgreet}/lib]",),
    )
    prefix = await _build(
        runtime,
        build_image,
        tmp_path,
        with_rpath,
        makefile=setuid,
        checks=(VERIFY, rpath),
        deps={"libgreet": libgreet},
    )
    assert prefix == home
    hello = prefix / "bin" / "hello"
    mode = stat.S_IMODE(hello.stat().st_mode)
    assert mode == 0o755, oct(mode)  # no set-uid, no world write
    assert os.access(hello, os.X_OK)
    assert not (tmp_path / "marker").exists()  # configure ran in the container only


async def test_a_failing_configure_is_refused_with_its_output(
    runtime: ContainerRuntime, build_image: str, tmp_path: Path
) -> None:
    bad = Build(index=3, source_dir=BUILD.source_dir, args=("--nope",))
    with pytest.raises(BuildFailed, match="configure: unknown option --nope") as caught:
        await _build(runtime, build_image, tmp_path, bad)
    assert caught.value.data["stage"] == "build"
    assert "exited with 1 in the build container" in caught.value.message


async def test_a_verify_that_fails_in_the_container_is_refused(
    runtime: ContainerRuntime, build_image: str, tmp_path: Path
) -> None:
    wrong = VerifyCheck(command="hello", patterns=("version 9.9.9",))
    with pytest.raises(BuildFailed, match=r"Missing: version 9\.9\.9") as caught:
        await _build(runtime, build_image, tmp_path, checks=(wrong,))
    assert caught.value.data["stage"] == "verify"


async def test_a_link_out_of_the_tool_is_refused(
    runtime: ContainerRuntime, build_image: str, tmp_path: Path
) -> None:
    leak = MAKEFILE + b"\tln -s /etc/shadow $(PREFIX)/bin/shadow\n"
    with pytest.raises(BuildFailed, match=r"bin/shadow links outside the tool") as caught:
        await _build(runtime, build_image, tmp_path, makefile=leak)
    assert caught.value.data["stage"] == "output"


async def test_without_the_build_image_nothing_falls_back_to_the_host(
    runtime: ContainerRuntime, build_image: str, tmp_path: Path
) -> None:
    with pytest.raises(ImageMissing, match="builds from source run only there") as caught:
        await _build(runtime, "tsuku/no-such-build-image:local", tmp_path)
    assert "tsukuctl sandbox prepare --build" in (caught.value.hint or "")
    assert not (tmp_path / "marker").exists()


CMAKELISTS = b"""cmake_minimum_required(VERSION 3.10)
project(hello C)
add_executable(hello hello.c)
target_compile_definitions(hello PRIVATE "GREETING=\\"from-cmake\\"" "VERSION=\\"${V}\\"")
install(TARGETS hello DESTINATION bin)
"""


async def test_a_cmake_build_runs_in_the_container_too(
    runtime: ContainerRuntime, build_image: str, tmp_path: Path
) -> None:
    cmake = Build(
        index=3,
        source_dir=BUILD.source_dir,
        kind="cmake_build",
        args=(f"-DV={VERSION}",),
        executables=("hello",),
    )
    check = VerifyCheck(command="hello", patterns=(f"from-cmake {VERSION}",))
    prefix = await _build(
        runtime, build_image, tmp_path, cmake, checks=(check,), also={"CMakeLists.txt": CMAKELISTS}
    )
    assert (prefix / "bin" / "hello").is_file()
    assert not (tmp_path / "marker").exists()  # its configure was never run at all
