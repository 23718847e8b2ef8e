"""The offline validation images, built on this machine and imported into the runtime.

Machines that cannot pull from a registry (CI, these workplaces) still need an image to
validate recipes in. Two are built here, neither from a registry:

- **Debian minbase** (the default, :func:`prepare_debian_image`): ``debootstrap
  --variant=minbase`` from Debian's package mirror (which CI reaches), trimmed of docs
  and apt caches, streamed to the runtime as ``docker import`` does. It has glibc, so
  the glibc-linked builds most projects publish (Rust ``-gnu``, C tools) run in it;
  busybox cannot run them. debootstrap needs root.
- **build** (:func:`prepare_build_image`): the same minbase with gcc, make, libc6-dev,
  cmake and patchelf, where a recipe's ``configure_make`` or ``cmake_build`` builds
  from source (never on the host: ``install/build.py``).
- **busybox** (the static fallback, :func:`prepare_busybox_image`): the host's statically
  linked busybox (Debian ``busybox-static``) alone, enough for static binaries and
  shell scripts. :func:`build_busybox_rootfs` turns it into a deterministic rootfs
  tarball (fixed mtimes, owners and order).

Foreign-architecture Linux builds (arm64 on an amd64 host) run in the same image when
the host kernel has a qemu-user binfmt handler registered with the ``F`` (fix binary)
flag, as Debian's ``qemu-user-static`` does: the kernel opens the emulator at
registration, so it works inside containers of an imported image without
``--platform``. ``bash scripts/dev setup`` builds both images with the docker CLI.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from tsukud import binfmt
from tsukud.errors import SandboxError
from tsukud.progress import Say
from tsukud.sandbox.runtime import BUILD_IMAGE, BUSYBOX_IMAGE, DEBIAN_IMAGE, DEFAULT_PATH

if TYPE_CHECKING:
    from tsukud.sandbox.runtime import ContainerRuntime

__all__ = [
    "BUSYBOX_CANDIDATES",
    "DEBIAN_MIRROR",
    "PrepareFailed",
    "build_busybox_rootfs",
    "debootstrap_command",
    "find_busybox",
    "import_image",
    "is_static_elf",
    "prepare_build_image",
    "prepare_busybox_image",
    "prepare_debian_image",
]

#: What the build image adds to minbase: a C compiler, make, the C library's headers,
#: patchelf for set_rpath and cmake for cmake_build (scripts/dev ``setup_build_image``
#: installs the same).
BUILD_PACKAGES = ("gcc", "make", "libc6-dev", "patchelf", "cmake", "perl", "cpanminus")

#: Debian's package mirror; ``TSUKU_DEBIAN_MIRROR`` names another (a local one, a proxy).
DEBIAN_MIRROR = "http://deb.debian.org/debian"
DEFAULT_SUITE = "bookworm"

#: Parts of a minbase rootfs a verify command never needs (about a third of its size).
_TRIM = (
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "var/cache/debconf",
)


class PrepareFailed(SandboxError):
    """The validation image could not be built here (no debootstrap, not root, no mirror)."""

    code = "sandbox_prepare_failed"


#: Where busybox-static puts its binary on Debian (and /bin on merged-/usr systems).
BUSYBOX_CANDIDATES = (Path("/usr/bin/busybox"), Path("/bin/busybox"))

#: Fixed mtime of every tar member, so the same busybox always gives the same tarball.
_MTIME = 1_700_000_000

_PASSWD = (
    "root:x:0:0:root:/root:/bin/sh\n"  # noqa: S105 - /etc/passwd, not a password
    "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
)
_GROUP = "root:x:0:\nnogroup:x:65534:\n"

# Applets a verify command is likely to use, for a busybox that cannot list its own.
_FALLBACK_APPLETS = (
    *("sh", "ash", "cat", "cp", "echo", "env", "false", "grep", "head", "id", "ln", "ls"),
    *("mkdir", "mv", "printf", "pwd", "readlink", "rm", "sed", "sleep", "sort", "tail"),
    *("tar", "test", "touch", "tr", "true", "uname", "wc", "which"),
)


def is_static_elf(path: Path) -> bool:
    """Whether ``path`` is an ELF executable without a program interpreter (static)."""
    with path.open("rb") as f:
        return binfmt.is_static_elf(f.read(binfmt.HEAD_BYTES))


def find_busybox() -> Path | None:
    """A statically linked busybox on this host, or ``None``."""
    candidates = list(BUSYBOX_CANDIDATES)
    found = shutil.which("busybox")
    if found:
        candidates.insert(0, Path(found))
    for candidate in candidates:
        try:
            if candidate.is_file() and is_static_elf(candidate):
                return candidate
        except OSError:
            continue
    return None


def _list_applets(busybox: Path) -> list[str]:
    try:
        proc = subprocess.run([str(busybox), "--list"], capture_output=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return list(_FALLBACK_APPLETS)
    names = [line.strip() for line in proc.stdout.decode(errors="replace").splitlines()]
    return [n for n in names if n and "/" not in n] or list(_FALLBACK_APPLETS)


def _dir(name: str, mode: int = 0o755) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    info.mtime = _MTIME
    return info


def _file(name: str, size: int, mode: int = 0o644) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size = size
    info.mode = mode
    info.mtime = _MTIME
    return info


def _symlink(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    info.mode = 0o777
    info.mtime = _MTIME
    return info


def build_busybox_rootfs(busybox: Path, applets: Sequence[str] | None = None) -> bytes:
    """A rootfs tarball (uncompressed tar bytes) around a static ``busybox``.

    Layout: ``/bin/busybox`` with one symlink per applet in ``/bin`` (``applets``, or
    what ``busybox --list`` prints), ``/usr/bin/env`` (for ``#!/usr/bin/env`` scripts),
    ``/tmp`` (1777), ``/etc/passwd`` and ``/etc/group`` with root and nobody/nogroup
    (65534), and empty ``/root``, ``/dev``, ``/proc``, ``/sys``, ``/work``.
    """
    data = busybox.read_bytes()
    names = sorted(set(_list_applets(busybox) if applets is None else applets) - {"busybox"})
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(_dir("."))
        for d in ("bin", "dev", "etc", "proc", "sys", "usr", "usr/bin", "work"):
            tar.addfile(_dir(d))
        tar.addfile(_dir("root", 0o700))
        tar.addfile(_dir("tmp", 0o1777))
        tar.addfile(_file("bin/busybox", len(data), 0o755), io.BytesIO(data))
        for name in names:
            tar.addfile(_symlink(f"bin/{name}", "busybox"))
        if "env" not in names:
            tar.addfile(_symlink("bin/env", "busybox"))
        tar.addfile(_symlink("usr/bin/env", "../../bin/busybox"))
        for path, text in (("etc/passwd", _PASSWD), ("etc/group", _GROUP)):
            raw = text.encode()
            tar.addfile(_file(path, len(raw)), io.BytesIO(raw))
    return buf.getvalue()


async def import_image(runtime: ContainerRuntime, tar: bytes | Path, name: str) -> None:
    """Import a rootfs tarball (bytes or a tar file) as image ``name`` (``docker
    import``), PATH set."""
    await runtime.import_rootfs(tar, name, changes=[f"ENV PATH={DEFAULT_PATH}"])


async def prepare_busybox_image(
    runtime: ContainerRuntime,
    name: str = BUSYBOX_IMAGE,
    *,
    busybox: Path | None = None,
    force: bool = False,
) -> bool:
    """Make sure image ``name`` exists, importing it from the host's busybox if not.

    Returns whether an import happened. Raises ``FileNotFoundError`` when no static
    busybox is found (install Debian's ``busybox-static``).
    """
    if not force and await runtime.image_exists(name):
        return False
    path = busybox if busybox is not None else await trio.to_thread.run_sync(find_busybox)
    if path is None:
        raise FileNotFoundError(
            "no statically linked busybox found (looked in PATH and "
            + ", ".join(str(p) for p in BUSYBOX_CANDIDATES)
            + "); install it with `apt-get install busybox-static`"
        )
    tar_bytes = await trio.to_thread.run_sync(build_busybox_rootfs, path)
    await import_image(runtime, tar_bytes, name)
    return True


# --------------------------------------------------------------------------- Debian


def host_suite(os_release: str) -> str:
    """The Debian suite to build: the host's own when it is Debian, else bookworm."""
    fields = dict(line.split("=", 1) for line in os_release.splitlines() if "=" in line)
    if fields.get("ID", "").strip('"') == "debian":
        codename = fields.get("VERSION_CODENAME", "").strip('"')
        if codename:
            return codename
    return DEFAULT_SUITE


def debootstrap_command(
    debootstrap: str, root: Path, suite: str, mirror: str, include: Sequence[str] = ()
) -> list[str]:
    """The debootstrap argv for a minbase rootfs in ``root`` (with ``include``'s
    packages and what they depend on)."""
    extra = [f"--include={','.join(include)}"] if include else []
    return [debootstrap, "--variant=minbase", *extra, suite, str(root), mirror]


def _find_debootstrap() -> str | None:
    for candidate in (shutil.which("debootstrap"), "/usr/sbin/debootstrap"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def _trim_and_pack(root: Path, tarball: Path) -> None:
    for rel in _TRIM:
        target = root / rel
        if target.is_dir():
            for entry in target.iterdir():
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
    subprocess.run(
        ["tar", "--numeric-owner", "-C", str(root), "-cf", str(tarball), "."],
        check=True,
        capture_output=True,
        timeout=600,
    )


async def prepare_debian_image(
    runtime: ContainerRuntime,
    name: str = DEBIAN_IMAGE,
    *,
    force: bool = False,
    progress: Say | None = None,
    mirror: str | None = None,
    suite: str | None = None,
    workdir: Path | None = None,
    include: Sequence[str] = (),
) -> bool:
    """Make sure image ``name`` exists, building a Debian minbase rootfs with
    debootstrap (plus ``include``'s packages) and importing it if not. Returns whether
    an import happened.

    ``progress`` hears each debootstrap stage (``I: Retrieving ...``, ``I: Extracting
    ...``) and the import. Raises :class:`PrepareFailed` when debootstrap is missing,
    this process is not root, or debootstrap fails (its last lines say why).
    """
    if not force and await runtime.image_exists(name):
        return False

    async def say(message: str) -> None:
        if progress is not None:
            await progress(message)

    debootstrap = _find_debootstrap()
    if debootstrap is None:
        raise PrepareFailed("debootstrap is not installed (apt-get install debootstrap)")
    if os.geteuid() != 0:
        raise PrepareFailed(
            f"debootstrap needs root to build the {name} rootfs; this daemon runs as "
            f"uid {os.geteuid()}"
        )
    mirror = mirror or os.environ.get("TSUKU_DEBIAN_MIRROR") or DEBIAN_MIRROR
    if suite is None:
        try:
            text = await trio.to_thread.run_sync(Path("/etc/os-release").read_text)
            suite = host_suite(text)
        except OSError:
            suite = DEFAULT_SUITE
    tmp = Path(tempfile.mkdtemp(prefix="tsuku-rootfs-", dir=workdir))
    try:
        root = tmp / "root"
        argv = debootstrap_command(debootstrap, root, suite, mirror, include)
        await say(f"debootstrap {' '.join(argv[1:-2])} from {mirror}")
        tail: list[str] = []
        proc = await trio.lowlevel.open_process(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            assert proc.stdout is not None
            pending = b""
            async for chunk in proc.stdout:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for raw in lines:
                    line = raw.decode(errors="replace").strip()
                    if not line:
                        continue
                    tail = [*tail[-19:], line]
                    if line.startswith("I: "):  # one per stage and per package
                        await say(line.removeprefix("I: "))
            await proc.wait()
        finally:
            if proc.returncode is None:  # cancelled: debootstrap must not outlive us
                proc.kill()
                with trio.CancelScope(shield=True):
                    await proc.wait()
        if proc.returncode != 0:
            raise PrepareFailed(
                f"debootstrap exited with {proc.returncode}: " + " | ".join(tail[-5:])
            )
        await say("packing the rootfs")
        tarball = tmp / "rootfs.tar"
        await trio.to_thread.run_sync(_trim_and_pack, root, tarball)
        await say(f"importing {name} ({tarball.stat().st_size // (1024 * 1024)} MiB)")
        await import_image(runtime, tarball, name)
        return True
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(lambda: shutil.rmtree(tmp, ignore_errors=True))


async def prepare_build_image(
    runtime: ContainerRuntime,
    name: str = BUILD_IMAGE,
    *,
    force: bool = False,
    progress: Say | None = None,
    workdir: Path | None = None,
) -> bool:
    """Make sure the build image exists: the Debian minbase with a C toolchain
    (:data:`BUILD_PACKAGES`), where builds from source run (``install/build.py``)."""
    return await prepare_debian_image(
        runtime, name, force=force, progress=progress, workdir=workdir, include=BUILD_PACKAGES
    )
