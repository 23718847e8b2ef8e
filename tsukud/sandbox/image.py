"""The offline validation image: a busybox rootfs imported into the container runtime.

Machines that cannot pull from a registry (CI, these workplaces) still need an image to
validate recipes in. The host's statically linked busybox (Debian ``busybox-static``) is
enough for static binaries and shell scripts: :func:`build_busybox_rootfs` turns it into
a rootfs tarball (``/bin`` applet symlinks, ``/tmp``, ``/etc/passwd`` with ``nobody``
65534), and :func:`import_image` hands that to the runtime as ``docker import`` does.
``bash scripts/dev setup`` does the same with the docker CLI; a future
``tsukuctl sandbox prepare`` calls :func:`prepare_busybox_image`.

Building the tarball is pure apart from reading the busybox binary and asking it for its
applet list; the tarball is deterministic (fixed mtimes, owners and order).
"""

from __future__ import annotations

import io
import shutil
import struct
import subprocess
import tarfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from tsukud.sandbox.runtime import DEFAULT_IMAGE, DEFAULT_PATH

if TYPE_CHECKING:
    from tsukud.sandbox.runtime import ContainerRuntime

__all__ = [
    "BUSYBOX_CANDIDATES",
    "build_busybox_rootfs",
    "find_busybox",
    "import_image",
    "is_static_elf",
    "prepare_busybox_image",
]

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
        ident = f.read(64)
        if len(ident) < 52 or ident[:4] != b"\x7fELF":
            return False
        is64 = ident[4] == 2
        endian = "<" if ident[5] == 1 else ">"
        if is64:
            (phoff,) = struct.unpack_from(endian + "Q", ident, 0x20)
            phentsize, phnum = struct.unpack_from(endian + "HH", ident, 0x36)
        else:
            (phoff,) = struct.unpack_from(endian + "I", ident, 0x1C)
            phentsize, phnum = struct.unpack_from(endian + "HH", ident, 0x2A)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    for i in range(phnum):
        entry = table[i * phentsize : (i + 1) * phentsize]
        if len(entry) < 4:
            return False
        (p_type,) = struct.unpack_from(endian + "I", entry, 0)
        if p_type == 3:  # PT_INTERP: dynamically linked
            return False
    return True


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


async def import_image(runtime: ContainerRuntime, tar_bytes: bytes, name: str) -> None:
    """Import a rootfs tarball as image ``name`` (``docker import``), PATH set."""
    await runtime.import_rootfs(tar_bytes, name, changes=[f"ENV PATH={DEFAULT_PATH}"])


async def prepare_busybox_image(
    runtime: ContainerRuntime,
    name: str = DEFAULT_IMAGE,
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
