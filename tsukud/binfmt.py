"""What an executable file is built for, read from its first bytes (ELF and Mach-O).

Validation runs Linux builds in a container, but a darwin build cannot run on this
machine and a build for another CPU may only run under emulation. What can always be
proven is what the file itself declares: an ELF header names its machine and whether it
needs a program interpreter (dynamic linking); a Mach-O header, or each slice of a
universal ("fat") binary, names its CPU type and whether it is an executable. So a
darwin archive whose binary is an x86_64 Mach-O, unpacked for darwin/arm64, is reported
as wrong without running anything.

Pure functions over bytes: :func:`inspect` reads a header (the first
:data:`HEAD_BYTES` of a file are enough for every check here except an ELF's program
headers, which :func:`inspect` reads from ``data`` when they are there) and
:func:`platform_problem` judges it against a ``(os, arch)`` in Go's spelling.
"""

from __future__ import annotations

import struct
from typing import Literal

import msgspec

__all__ = [
    "HEAD_BYTES",
    "BinaryInfo",
    "inspect",
    "is_static_elf",
    "platform_problem",
]

#: Bytes of a file :func:`inspect` needs: headers, fat-arch tables, ELF program headers.
HEAD_BYTES = 64 * 1024

Kind = Literal["elf", "macho", "script", "unknown"]

# ELF e_machine values, by Go arch name.
_ELF_MACHINES = {
    0x03: "386",
    0x28: "arm",
    0x3E: "amd64",
    0xB7: "arm64",
    0xF3: "riscv64",
    0x15: "ppc64le",  # EM_PPC64; endianness tells ppc64 from ppc64le
    0x16: "s390x",
}
_PT_INTERP = 3

# Mach-O magics (as read big-endian from the first four bytes).
_MH_MAGIC_BE = {0xFEEDFACE: (">", False), 0xFEEDFACF: (">", True)}
_MH_MAGIC_LE = {0xCEFAEDFE: ("<", False), 0xCFFAEDFE: ("<", True)}
_FAT_MAGIC = 0xCAFEBABE
_FAT_MAGIC_64 = 0xCAFEBABF
_MH_EXECUTE = 2
_CPU_ARCH_ABI64 = 0x01000000
_MACHO_CPUS = {
    7: "386",
    7 | _CPU_ARCH_ABI64: "amd64",
    12: "arm",
    12 | _CPU_ARCH_ABI64: "arm64",
    12 | 0x02000000: "arm64_32",
    18: "ppc",
    18 | _CPU_ARCH_ABI64: "ppc64",
}
# A Java class file shares 0xCAFEBABE; its "count" is a class-file version (>= 45).
_MAX_FAT_ARCHS = 30


class BinaryInfo(msgspec.Struct, frozen=True, kw_only=True):
    """What a file's header says. ``os`` is ``linux`` for ELF (other ELF OSes are not
    told apart: Linux is the only one tsuku installs ELF files for), ``darwin`` for
    Mach-O. ``archs`` lists every slice of a universal binary; ``executable`` is
    whether the file is a program (ELF ``ET_EXEC``/``ET_DYN``, Mach-O ``MH_EXECUTE``)
    rather than an object file or library. ``static`` is ``None`` when unknown."""

    kind: Kind
    os: str | None = None
    archs: tuple[str, ...] = ()
    executable: bool = False
    static: bool | None = None


def _elf(data: bytes) -> BinaryInfo:
    if len(data) < 52:
        return BinaryInfo(kind="unknown")
    is64 = data[4] == 2
    endian = "<" if data[5] == 1 else ">"
    e_type, e_machine = struct.unpack_from(endian + "HH", data, 16)
    arch = _ELF_MACHINES.get(e_machine, f"elf-machine-{e_machine:#x}")
    if e_machine == 0x15 and endian == ">":
        arch = "ppc64"
    if is64:
        if len(data) < 64:
            return BinaryInfo(kind="elf", os="linux", archs=(arch,))
        (phoff,) = struct.unpack_from(endian + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(endian + "HH", data, 0x36)
    else:
        (phoff,) = struct.unpack_from(endian + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(endian + "HH", data, 0x2A)
    static: bool | None = None
    end = phoff + phentsize * phnum
    if phentsize >= 4 and end <= len(data):
        static = True
        for i in range(phnum):
            (p_type,) = struct.unpack_from(endian + "I", data, phoff + i * phentsize)
            if p_type == _PT_INTERP:
                static = False
                break
    return BinaryInfo(
        kind="elf", os="linux", archs=(arch,), executable=e_type in (2, 3), static=static
    )


def _macho_cpu(cputype: int) -> str:
    return _MACHO_CPUS.get(cputype, f"mach-o-cpu-{cputype:#x}")


def _thin_macho(data: bytes, offset: int) -> tuple[str, bool] | None:
    """(arch, is an executable) of the Mach-O header at ``offset``, or ``None``."""
    if len(data) < offset + 16:
        return None
    (magic,) = struct.unpack_from(">I", data, offset)
    if magic in _MH_MAGIC_BE:
        endian = _MH_MAGIC_BE[magic][0]
    elif magic in _MH_MAGIC_LE:
        endian = _MH_MAGIC_LE[magic][0]
    else:
        return None
    cputype, _subtype, filetype = struct.unpack_from(endian + "iiI", data, offset + 4)
    return _macho_cpu(cputype & 0xFFFFFFFF), filetype == _MH_EXECUTE


def _fat(data: bytes, wide: bool) -> BinaryInfo:
    (count,) = struct.unpack_from(">I", data, 4)
    if count == 0 or count > _MAX_FAT_ARCHS:
        return BinaryInfo(kind="unknown")  # most likely a Java class file
    size = 32 if wide else 20
    archs: list[str] = []
    executable = True
    for i in range(count):
        at = 8 + i * size
        if len(data) < at + size:
            return BinaryInfo(kind="unknown")
        if wide:
            cputype, _sub, offset = struct.unpack_from(">iiQ", data, at)
        else:
            cputype, _sub, offset = struct.unpack_from(">iiI", data, at)
        archs.append(_macho_cpu(cputype & 0xFFFFFFFF))
        slice_ = _thin_macho(data, offset)
        # A slice beyond the bytes we were given is judged by its table entry alone.
        if slice_ is not None:
            executable = executable and slice_[1]
            if slice_[0] != archs[-1]:
                return BinaryInfo(kind="unknown")  # the table lies about its slices
    return BinaryInfo(kind="macho", os="darwin", archs=tuple(archs), executable=executable)


def inspect(data: bytes) -> BinaryInfo:
    """Read what ``data`` (a file's first bytes, :data:`HEAD_BYTES` are enough) is."""
    if data[:4] == b"\x7fELF":
        return _elf(data)
    if len(data) >= 8:
        (magic,) = struct.unpack_from(">I", data, 0)
        if magic in (_FAT_MAGIC, _FAT_MAGIC_64):
            return _fat(data, magic == _FAT_MAGIC_64)
        thin = _thin_macho(data, 0)
        if thin is not None:
            return BinaryInfo(kind="macho", os="darwin", archs=(thin[0],), executable=thin[1])
    if data[:2] == b"#!":
        return BinaryInfo(kind="script", executable=True)
    return BinaryInfo(kind="unknown")


def is_static_elf(data: bytes) -> bool:
    """Whether ``data`` starts an ELF program without a program interpreter."""
    info = inspect(data)
    return info.kind == "elf" and info.static is True


def platform_problem(
    info: BinaryInfo, os: str, arch: str, *, mode: int | None = None
) -> str | None:
    """Why a file described by ``info`` (file mode ``mode``) is not a program for
    ``os``/``arch``, or ``None`` when it is. A script is accepted anywhere (its
    interpreter is the host's); a universal binary needs a slice for ``arch``."""
    if mode is not None and not mode & 0o111:
        return "is not executable (no x permission bit)"
    if info.kind == "script":
        return None
    if info.kind == "unknown":
        return f"is neither an ELF nor a Mach-O executable, so it cannot run on {os}/{arch}"
    if info.os != os:
        what = "an ELF (Linux)" if info.kind == "elf" else "a Mach-O (macOS)"
        return f"is {what} binary, not a {os} one"
    if arch not in info.archs:
        built = "/".join(info.archs) or "an unknown CPU"
        fat = "a universal binary for " if len(info.archs) > 1 else "built for "
        return f"is {fat}{built}, not {arch}"
    if not info.executable:
        return "is a library or object file, not an executable"
    return None
