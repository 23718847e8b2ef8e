"""Builds from source (``configure_make``, ``cmake_build``): in the build container,
never on the host.

Source code fetched from the network is untrusted, and ``./configure`` and ``make`` run
whatever it says. So the daemon only downloads the source (checksummed like any
download) and unpacks it with the safe extractor; the build itself runs in a container
of the build image (:data:`~tsukud.sandbox.runtime.BUILD_IMAGE`: the Debian minbase
with gcc, make, libc6-dev, patchelf, cmake, perl and cpanminus) with the validation
limits: no network, no capabilities, no new privileges, read-only root, bounded
memory, CPU, processes and time.

Inside it the unpacked source is mounted read-only and copied into a scratch directory
(configure and make write beside the sources); ``make install`` writes into the tool's
directory *as the host will have it* (an empty host directory mounted at that very
path), so whatever the build bakes in (a data directory, an RPATH) names where the tool
will live. The build dependencies (tsuku's install-time dependencies, installed first
by ``attempt.py``, each by its own recipe) are mounted read-only at their own paths, and
the environment points at them as tsuku's ``setup_build_env`` does
(:func:`dependency_env`). The recipe's verify command then runs in a second container
over that output, mounted read-only, the dependencies beside it. Only then does the
host take the output: every entry is checked (regular files and directories, links
that stay inside the tree; no device, pipe or socket), set-id bits and group/other
write are cleared, and the tree replaces the source as the step's work directory, from
which the tool is assembled, checksummed, checked and linked like any download
(``attempt.py``).

The pure part (the script, the tree check) is separate from the shell that runs the
containers, so both are tested on their own.
"""

from __future__ import annotations

import os
import shlex
import shutil
import stat
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud.install.errors import BuildFailed
from tsukud.recipe import VerifyCheck, VerifyFailed, check_verify_output
from tsukud.recipe.build import Build, fill_rpath, rpath_dependencies
from tsukud.sandbox.runtime import BUILD_IMAGE, DEFAULT_PATH, ImageMissing, RunResult, RunSpec

if TYPE_CHECKING:
    from tsukud.sandbox.runtime import ContainerRuntime

# Where the unpacked source (read-only) and the scratch copy are mounted.
SOURCE_DIR = "/tsuku/src"
BUILD_DIR = "/tsuku/build"
# tsuku's limits for source builds (SourceBuildLimits: 15 minutes, 500 processes).
BUILD_TIMEOUT_S = 900.0
BUILD_PIDS = 512
VERIFY_TIMEOUT_S = 120.0
OUTPUT_CAP = 256 * 1024
OUTPUT_KEEP = 4000

Lock = Callable[[str | None], AbstractAsyncContextManager[Any]]


@dataclass(frozen=True)
class BuildSandbox:
    """Where builds run: the runtime (opened on first use), the container lock shared
    with validation, and the image."""

    runtime: Callable[[], Awaitable[ContainerRuntime]]
    lock: Lock
    image: str = BUILD_IMAGE
    forget: Callable[[], None] = lambda: None


# ---------------------------------------------------------------------------- pure


def build_script(build: Build, prefix: str, deps: Mapping[str, Path] | None = None) -> str:
    """The ``sh`` script the build container runs: tsuku's steps for the build's kind
    (:func:`_configure_make` or :func:`_cmake`), then each executable must be in
    ``<prefix>/bin`` and each ``set_rpath`` is applied, a part naming a build
    dependency's directory made the directory ``deps`` (name → tool directory) says it
    was installed in (``KeyError`` for one it lacks); every word quoted."""
    dirs = {name: str(path) for name, path in (deps or {}).items()}
    q = shlex.quote
    lines = [
        "set -e",
        f"mkdir -p {BUILD_DIR}/.tmp",
        f"cp -R {SOURCE_DIR}/. {BUILD_DIR}/",
        f"cd {q(f'{BUILD_DIR}/{build.source_dir}')}",
    ]
    check, steps = (_cmake if build.kind == "cmake_build" else _configure_make)(build, prefix)
    lines.append(check)
    for step in steps:
        lines += [f"echo {q(f'+ {step}')}", step]
    for exe in build.executables:
        path = f"{prefix}/bin/{exe}"
        missing = f"expected executable {exe} not found at {path}"
        lines.append(f"[ -x {q(path)} ] || {{ echo {q(missing)}; exit 4; }}")
    for binary, written in build.rpaths:  # set_rpath: tsuku's two patchelf calls
        rpath = fill_rpath(written, dirs)
        path = q(f"{prefix}/{binary}")
        lines += [
            f"echo {q(f'+ set_rpath {binary} {rpath}')}",
            f"patchelf --remove-rpath {path} || true",
            f"patchelf --force-rpath --set-rpath {q(rpath)} {path}",
        ]
    return "\n".join(lines) + "\n"


def missing_dependencies(build: Build, deps: Mapping[str, Path]) -> list[str]:
    """The build dependencies a ``set_rpath`` of ``build`` names that ``deps`` (what
    was installed for it) lacks, each once: such a build is refused before it runs."""
    named = [n for _, rpath in build.rpaths for n in rpath_dependencies(rpath)]
    return [n for n in dict.fromkeys(named) if n not in deps]


def _words(*words: str) -> str:
    return " ".join(shlex.quote(w) for w in words)


def _configure_make(build: Build, prefix: str) -> tuple[str, list[str]]:
    """The check that there is a ``configure``; ``./configure --prefix=<prefix>
    [args]``, then ``make [target]`` per target."""
    missing = shlex.quote(f"configure script not found at {build.source_dir}/configure")
    return f"[ -f ./configure ] || {{ echo {missing}; exit 3; }}", [
        _words("./configure", f"--prefix={prefix}", *build.args),
        *("make" if t == "" else _words("make", t) for t in build.make_targets),
    ]


def _cmake(build: Build, prefix: str) -> tuple[str, list[str]]:
    """The check that there is a ``CMakeLists.txt``; tsuku's three cmake calls, the
    build directory beside the sources."""
    missing = shlex.quote(f"CMakeLists.txt not found at {build.source_dir}/CMakeLists.txt")
    out = f"{BUILD_DIR}/.cmake-build"
    return f"[ -f ./CMakeLists.txt ] || {{ echo {missing}; exit 3; }}", [
        _words(
            "cmake",
            "-S",
            ".",
            "-B",
            out,
            f"-DCMAKE_INSTALL_PREFIX={prefix}",
            f"-DCMAKE_BUILD_TYPE={build.build_type}",
            *build.args,
        ),
        _words("cmake", "--build", out, "--config", build.build_type),
        _words("cmake", "--install", out),
    ]


def dependency_env(deps: Sequence[Path]) -> dict[str, str]:
    """What tsuku's ``setup_build_env`` (``buildAutotoolsEnv``) tells a build about its
    build dependencies, each a tool directory mounted read-only at its own path:
    ``PKG_CONFIG_PATH`` (their ``lib/pkgconfig``), ``CPPFLAGS`` (``-I`` their
    ``include``), ``LDFLAGS`` (``-L`` their ``lib``), each only for a directory that
    exists, as tsuku checks; their ``bin/`` first on ``PATH`` and ``CMAKE_PREFIX_PATH``
    (tsuku's guide names both). Empty without dependencies."""
    pkg_config: list[str] = []
    cppflags: list[str] = []
    ldflags: list[str] = []
    bins: list[str] = []
    for dep in deps:
        if (dep / "lib" / "pkgconfig").is_dir():
            pkg_config.append(str(dep / "lib" / "pkgconfig"))
        if (dep / "include").is_dir():
            cppflags.append(f"-I{dep / 'include'}")
        if (dep / "lib").is_dir():
            ldflags.append(f"-L{dep / 'lib'}")
        if (dep / "bin").is_dir():
            bins.append(str(dep / "bin"))
    env: dict[str, str] = {}
    if pkg_config:
        env["PKG_CONFIG_PATH"] = ":".join(pkg_config)
    if cppflags:
        env["CPPFLAGS"] = " ".join(cppflags)
    if ldflags:
        env["LDFLAGS"] = " ".join(ldflags)
    if bins:
        env["PATH"] = ":".join([*bins, DEFAULT_PATH])
    if deps:
        env["CMAKE_PREFIX_PATH"] = ":".join(str(d) for d in deps)
    return env


def build_env(deps: Sequence[Path] = ()) -> dict[str, str]:
    """The build's environment: tsuku's ``SOURCE_DATE_EPOCH=0`` for reproducible
    output, temporary files in the scratch directory (``/tmp`` is small and noexec),
    and the build dependencies as :func:`dependency_env` points at them."""
    return {
        "PATH": DEFAULT_PATH,
        "HOME": f"{BUILD_DIR}/.tmp",
        "TMPDIR": f"{BUILD_DIR}/.tmp",
        "SOURCE_DATE_EPOCH": "0",
        **dependency_env(deps),
    }


def dependency_mounts(deps: Sequence[Path]) -> tuple[tuple[Path, str, bool], ...]:
    """Each build dependency's tool directory at its own path, read-only: the build
    (untrusted code) reads their headers and libraries and can change none of them."""
    return tuple((dep, str(dep), True) for dep in deps)


def build_spec(
    image: str,
    build: Build,
    source: Path,
    scratch: Path,
    prefix: Path,
    labels: dict[str, str],
    deps: Mapping[str, Path] | None = None,
) -> RunSpec:
    """The build's container: the validation contract's isolation (no network, no
    capabilities, read-only root: :class:`RunSpec`'s defaults, left as they are), the
    source read-only, the scratch copy and the tool's directory (at its host path)
    writable, the build dependencies read-only at theirs (:func:`dependency_mounts`),
    as the daemon's uid so what it writes stays the daemon's to move."""
    where = str(prefix)
    dirs = list((deps or {}).values())
    return isolated_build(
        image,
        build_script(build, where, deps),
        (
            (source, SOURCE_DIR, True),
            (scratch, BUILD_DIR, False),
            (prefix, where, False),
            *dependency_mounts(dirs),
        ),
        build_env(dirs),
        labels,
    )


def isolated_build(
    image: str,
    script: str,
    mounts: tuple[tuple[Path, str, bool], ...],
    env: dict[str, str],
    labels: dict[str, str],
) -> RunSpec:
    """A build container (a source build's, cpanm's): ``script`` run by ``/bin/sh`` in
    ``BUILD_DIR`` as the daemon's uid, with the build's limits, and :class:`RunSpec`'s
    isolation defaults (no network, no capabilities, read-only root) left as they are."""
    return RunSpec(
        image=image,
        command=["/bin/sh", "-c", script],
        mounts=mounts,
        env=env,
        workdir=BUILD_DIR,
        user=f"{os.getuid()}:{os.getgid()}",
        timeout_s=BUILD_TIMEOUT_S,
        pids_limit=BUILD_PIDS,
        labels=labels,
        output_cap=OUTPUT_CAP,
    )


def check_output_tree(root: Path) -> list[str]:
    """What in the build's output cannot be installed as it is (paths relative to
    ``root``): anything but regular files, directories and links that resolve inside
    the tree. Empty when all of it can."""
    problems: list[str] = []
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                target = os.readlink(path)
                resolved = (path.parent / target).resolve()
                if os.path.isabs(target) or not resolved.is_relative_to(real_root):
                    problems.append(f"{rel} links outside the tool ({target})")
            elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                problems.append(f"{rel} is not a file or directory")
    return sorted(problems)


def tame_modes(root: Path) -> None:
    """Clear set-id and sticky bits and group/other write on everything the build
    wrote: the container's root could set them, and the host must not inherit a
    set-uid program from a build."""
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                continue
            os.chmod(path, stat.S_IMODE(mode) & 0o755)


def tail(text: str, keep: int = OUTPUT_KEEP) -> str:
    text = text.strip()
    return text if len(text) <= keep else "…" + text[-keep:]


# ---------------------------------------------------------------------------- shell


async def build_or_fail(
    sandbox: BuildSandbox, spec: RunSpec, session: str | None, *, tool: str, what: str
) -> RunResult:
    """:func:`run_build`, and :class:`BuildFailed` naming ``what`` ran (the build of a
    source tree, cpanm's install of a distribution) when it did not succeed."""
    res = await run_build(sandbox, spec, session)
    if not res.ok:
        why = "timed out" if res.timed_out else f"exited with {res.exit_code}"
        raise BuildFailed(
            f"{tool}: {what} {why} in the build container\nOutput: {tail(res.text)}",
            tool=tool,
            stage="build",
        )
    return res


async def run_build(sandbox: BuildSandbox, spec: RunSpec, session: str | None) -> RunResult:
    """``spec`` run in the build container under the shared container lock; a missing
    build image is :class:`ImageMissing` with how to build it."""
    rt = await sandbox.runtime()
    try:
        async with sandbox.lock(session):
            return await rt.run(spec)
    except ImageMissing as exc:  # the build image, not the validation one: its own hint
        raise ImageMissing(
            f"the build image {spec.image!r} is not present in the container runtime; "
            "builds from source run only there, never on this machine",
            hint="Build it with `tsukuctl sandbox prepare --build` (debootstrap "
            "--variant=minbase --include=gcc,make,libc6-dev,patchelf,cmake,perl,cpanminus "
            "from Debian's packages, imported; no registry needed). Nothing was installed.",
        ) from exc


async def build_in_container(
    sandbox: BuildSandbox,
    build: Build,
    *,
    tool: str,
    source: Path,
    scratch: Path,
    prefix: Path,
    checks: Sequence[VerifyCheck],
    session: str | None,
    deps: Mapping[str, Path] | None = None,
) -> RunResult:
    """Build ``source`` (the unpacked download) in the build container into ``prefix``
    (an empty host directory, mounted at the same path) against ``deps`` (the build
    dependencies' tool directories by recipe name, read-only), then run ``checks`` (the recipe's
    verify, ``{install_dir}`` = ``prefix``) in a second container over the output, the
    dependencies mounted there too; check and tame the output tree. Raises
    :class:`BuildFailed` saying which stage failed with the end of its output; returns
    the build's run."""
    where = str(prefix)
    labels = {"dev.tsuku.session": session or "", "dev.tsuku.build": tool}
    missing = missing_dependencies(build, deps or {})
    if missing:
        raise BuildFailed(
            f"{tool}: set_rpath names the directory of {', '.join(missing)}, which this "
            "build has not installed",
            hint="Install the recipe's build dependencies first (an install does that "
            "itself; validation installs nothing).",
            tool=tool,
            stage="build",
        )
    spec = build_spec(sandbox.image, build, source, scratch, prefix, labels, deps)
    res = await build_or_fail(
        sandbox, spec, session, tool=tool, what=f"the build of {build.source_dir}"
    )
    await accept_output(prefix, tool)
    await verify_in_container(
        sandbox,
        checks,
        tool=tool,
        output=prefix,
        where=where,
        deps=list((deps or {}).values()),
        labels=labels,
        session=session,
    )
    return res


async def accept_output(output: Path, tool: str) -> None:
    """What a build wrote, checked (:func:`check_output_tree`: :class:`BuildFailed` at
    stage ``output`` for anything the host must not take) and tamed (:func:`tame_modes`)."""
    problems = await trio.to_thread.run_sync(check_output_tree, output)
    if problems:
        raise BuildFailed(
            f"{tool}: the build's output cannot be installed: " + "; ".join(problems[:5]),
            tool=tool,
            stage="output",
        )
    await trio.to_thread.run_sync(tame_modes, output)


async def verify_in_container(
    sandbox: BuildSandbox,
    checks: Sequence[VerifyCheck],
    *,
    tool: str,
    output: Path,
    where: str,
    deps: Sequence[Path] = (),
    labels: dict[str, str],
    session: str | None,
) -> None:
    """Each of ``checks`` (the recipe's verify) run in a container of the build image
    over ``output``, mounted read-only at ``where`` (the path the commands name), its
    ``bin/`` first on PATH, the build dependencies beside it; the first that fails is
    :class:`BuildFailed` (stage ``verify``)."""
    uid = f"{os.getuid()}:{os.getgid()}"
    for check in checks:
        verify = RunSpec(
            image=sandbox.image,
            command=["/bin/sh", "-c", check.command],
            mounts=((output, where, True), *dependency_mounts(deps)),
            env={"PATH": f"{where}/bin:{DEFAULT_PATH}", "HOME": "/tmp"},  # noqa: S108
            workdir="/tmp",  # noqa: S108
            user=uid,
            timeout_s=VERIFY_TIMEOUT_S,
            labels=labels,
            output_cap=OUTPUT_CAP,
        )
        ran = await run_build(sandbox, verify, session)
        try:
            check_verify_output(check, 137 if ran.timed_out else ran.exit_code, ran.text)
        except VerifyFailed as exc:
            raise BuildFailed(
                f"{tool}: the verify command failed in the build container against the "
                f"build: {exc.message}",
                tool=tool,
                stage="verify",
            ) from None


def replace_with_output(work: Path, prefix: Path) -> None:
    """The build's output becomes the step's work directory (the source is dropped):
    what ``install_binaries`` names (``bin/<tool>``) is in it."""
    shutil.rmtree(work)
    prefix.rename(work)
