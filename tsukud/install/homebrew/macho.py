"""Relocating a macOS bottle's Mach-O files: what ``install_name_tool`` and an ad-hoc
``codesign`` do at pour time, in pure Python so it runs (and is tested) on Linux.

A bottle's dylibs and executables name their libraries by placeholder paths in their
load commands: ``LC_ID_DYLIB`` (a dylib's own install name), ``LC_LOAD_DYLIB`` and its
weak / re-export / lazy / upward variants, and ``LC_RPATH``. Each string becomes the
relocated path: a dylib's id the absolute path it now has (ids are what a linker
copies into its clients; brew writes them absolute too), and a dependency or run path
an ``@loader_path``-relative one, as the ELF side writes ``$ORIGIN``-relative RPATHs,
so the tools keep working wherever ``TSUKU_HOME`` is moved.

**Where the bytes go.** Load commands sit right after the header, and the first
section's contents start at some later file offset; the gap is the header padding
(brew links with ``-headerpad_max_install_names`` for exactly this). A rewritten
command may grow into that padding, as ``install_name_tool`` does; one that does not
fit is a :class:`RelocationFailed` naming the file, and the file is left untouched
(every change is made on a copy in memory and written back by rename). Nothing outside
the header and load commands changes, except the code signature's page hashes.

**Code signatures.** On Apple silicon the kernel kills a binary whose signature does
not match its pages, and a header edit changes the first page. A bottle's binaries
carry an ad-hoc (often linker-made) signature: an embedded SuperBlob (magic
``0xfade0cc0``, big-endian like all its fields) whose CodeDirectory (``0xfade0c02``)
lists one hash per ``2**pageSize`` bytes of the file up to ``codeLimit``
(``hashType`` 1 SHA-1, 2 SHA-256, 3 SHA-256 truncated to 20 bytes, 4 SHA-384; the
hashes start at ``hashOffset``). Relocation recomputes those code-page hashes, in every
CodeDirectory (SHA-1 and SHA-256 alternates alike), so the ad-hoc signature is valid
again: what ``codesign --sign - --force`` would leave, without its tool. A signature
made with a real identity (a CMS blob with content) cannot be kept valid by anyone but
its owner; such a file is refused rather than installed for the kernel to kill.

Thin 32- and 64-bit little-endian files and universal (fat) files, each slice on its
own, are handled. The layout of these structures is Apple's ``<mach-o/loader.h>``,
``<mach-o/fat.h>`` and the code-signing blob formats (``cs_blobs.h``).
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Callable
from pathlib import Path

from tsukud.install.homebrew.errors import RelocationFailed

MH_MAGIC = 0xFEEDFACE
MH_MAGIC_64 = 0xFEEDFACF
FAT_MAGIC = 0xCAFEBABE
FAT_MAGIC_64 = 0xCAFEBABF

LC_REQ_DYLD = 0x80000000
LC_SEGMENT = 0x1
LC_SEGMENT_64 = 0x19
LC_LOAD_DYLIB = 0xC
LC_ID_DYLIB = 0xD
LC_LAZY_LOAD_DYLIB = 0x20
LC_LOAD_WEAK_DYLIB = 0x18 | LC_REQ_DYLD
LC_REEXPORT_DYLIB = 0x1F | LC_REQ_DYLD
LC_LOAD_UPWARD_DYLIB = 0x23 | LC_REQ_DYLD
LC_RPATH = 0x1C | LC_REQ_DYLD
LC_CODE_SIGNATURE = 0x1D
DYLIB_LOADS = frozenset(
    {LC_LOAD_DYLIB, LC_LAZY_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB, LC_LOAD_UPWARD_DYLIB}
)

CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
CSMAGIC_CODEDIRECTORY = 0xFADE0C02
CSMAGIC_BLOBWRAPPER = 0xFADE0B01  # the CMS signature of a real identity
CS_HASHES: dict[int, tuple[Callable[[bytes], bytes], int]] = {
    1: (lambda b: hashlib.sha1(b, usedforsecurity=False).digest(), 20),
    2: (lambda b: hashlib.sha256(b).digest(), 32),
    3: (lambda b: hashlib.sha256(b).digest()[:20], 20),
    4: (lambda b: hashlib.sha384(b).digest(), 48),
}

#: A string in a load command → its replacement (None: leave it), given the command.
Rewrite = Callable[[int, str], str | None]


def is_macho(head: bytes) -> bool:
    """Thin little-endian Mach-O, or a fat file (whose next word, unlike a Java class
    file's version, is a small architecture count)."""
    if len(head) < 8:
        return False
    (le,) = struct.unpack_from("<I", head)
    if le in (MH_MAGIC, MH_MAGIC_64):
        return True
    magic, count = struct.unpack_from(">II", head)
    return magic in (FAT_MAGIC, FAT_MAGIC_64) and 0 < count < 32


def relocate_file(path: Path, rewrite: Rewrite) -> bool:
    """Rewrite ``path``'s load-command strings with ``rewrite``; True if it changed.
    Atomic: on any error the file is as it was."""
    data = path.read_bytes()
    new = relocate_bytes(data, rewrite, name=path.name)
    if new == data:
        return False
    tmp = path.with_name(f".{path.name}.tsuku-reloc")
    tmp.write_bytes(new)
    os.chmod(tmp, path.stat().st_mode & 0o7777)
    os.replace(tmp, path)
    return True


def relocate_bytes(data: bytes, rewrite: Rewrite, *, name: str = "file") -> bytes:
    """The whole file (thin or fat) with every slice relocated."""
    if len(data) < 8:
        raise RelocationFailed(f"{name}: too short to be a Mach-O file")
    magic = struct.unpack_from(">I", data)[0]
    if magic not in (FAT_MAGIC, FAT_MAGIC_64):
        return bytes(_relocate_slice(bytearray(data), rewrite, name))
    wide = magic == FAT_MAGIC_64
    (count,) = struct.unpack_from(">I", data, 4)
    entry = ">iiQQII" if wide else ">iiIII"
    out = bytearray(data)
    at = 8
    for _ in range(count):
        if at + struct.calcsize(entry) > len(data):
            raise RelocationFailed(f"{name}: truncated universal header")
        fields = struct.unpack_from(entry, data, at)
        offset, size = fields[2], fields[3]
        at += struct.calcsize(entry)
        if offset + size > len(data) or size < 28:
            raise RelocationFailed(f"{name}: a slice lies outside the file")
        slice_ = _relocate_slice(bytearray(data[offset : offset + size]), rewrite, name)
        out[offset : offset + size] = slice_
    return bytes(out)


def _relocate_slice(data: bytearray, rewrite: Rewrite, name: str) -> bytearray:
    if len(data) < 28:
        raise RelocationFailed(f"{name}: truncated Mach-O header")
    (magic,) = struct.unpack_from("<I", data)
    if magic not in (MH_MAGIC, MH_MAGIC_64):
        raise RelocationFailed(f"{name}: not a little-endian Mach-O file (magic {magic:#x})")
    wide = magic == MH_MAGIC_64
    header = 32 if wide else 28
    align = 8 if wide else 4
    ncmds, sizeofcmds = struct.unpack_from("<II", data, 16)
    if header + sizeofcmds > len(data):
        raise RelocationFailed(f"{name}: load commands run past the end of the file")
    commands: list[bytes] = []
    changed = False
    first_content = len(data)
    signature: tuple[int, int] | None = None
    at = header
    for _ in range(ncmds):
        if at + 8 > header + sizeofcmds:
            raise RelocationFailed(f"{name}: load commands overrun their declared size")
        cmd, cmdsize = struct.unpack_from("<II", data, at)
        if cmdsize < 8 or at + cmdsize > header + sizeofcmds:
            raise RelocationFailed(f"{name}: a load command has an impossible size")
        raw = bytes(data[at : at + cmdsize])
        if cmd in (LC_SEGMENT, LC_SEGMENT_64):
            first_content = min(first_content, _first_section_offset(raw, cmd, len(data)))
        elif cmd == LC_CODE_SIGNATURE:
            signature = struct.unpack_from("<II", raw, 8)
        new = _rewritten(raw, cmd, rewrite, align, name)
        changed |= new != raw
        commands.append(new)
        at += cmdsize
    if not changed:
        return data
    area = b"".join(commands)
    room = first_content - header
    if len(area) > room:
        raise RelocationFailed(
            f"{name}: the relocated load commands need {len(area)} bytes, the header has "
            f"room for {room}",
            hint="The bottle was linked without enough header padding for these paths; "
            "a shorter TSUKU_HOME would fit, or install the tool from another source.",
        )
    struct.pack_into("<I", data, 20, len(area))
    end = header + max(sizeofcmds, len(area))
    data[header:end] = area.ljust(end - header, b"\0")
    if signature is not None:
        _rehash(data, *signature, name)
    return data


def _first_section_offset(raw: bytes, cmd: int, size: int) -> int:
    """Where the segment's first section with file contents starts (the end of the
    header padding); a segment without such sections bounds nothing."""
    wide = cmd == LC_SEGMENT_64
    seg, sect = (72, 80) if wide else (56, 68)
    if len(raw) < seg:
        return size
    nsects = struct.unpack_from("<I", raw, 64 if wide else 48)[0]
    lowest = size
    for i in range(nsects):
        base = seg + i * sect
        if base + sect > len(raw):
            break
        off_at = base + (48 if wide else 40)
        size_at = base + 40 if wide else base + 36
        fmt = "<Q" if wide else "<I"
        (sect_size,) = struct.unpack_from(fmt, raw, size_at)
        (offset,) = struct.unpack_from("<I", raw, off_at)
        flags = struct.unpack_from("<I", raw, base + (64 if wide else 56))[0]
        zerofill = (flags & 0xFF) in (0x1, 0xC, 0x12)  # S_ZEROFILL, GB_ZEROFILL, TLV
        if offset and sect_size and not zerofill:
            lowest = min(lowest, offset)
    return lowest


def _rewritten(raw: bytes, cmd: int, rewrite: Rewrite, align: int, name: str) -> bytes:
    if cmd in DYLIB_LOADS or cmd == LC_ID_DYLIB:
        fixed = 24  # cmd, cmdsize, name offset, timestamp, current and compat versions
    elif cmd == LC_RPATH:
        fixed = 12  # cmd, cmdsize, path offset
    else:
        return raw
    if len(raw) < fixed:
        raise RelocationFailed(f"{name}: a load command is shorter than its kind")
    (str_at,) = struct.unpack_from("<I", raw, 8)
    if not fixed <= str_at < len(raw):
        raise RelocationFailed(f"{name}: a load command's string lies outside it")
    text = raw[str_at:].split(b"\0", 1)[0].decode("utf-8", "surrogateescape")
    new = rewrite(cmd, text)
    if new is None or new == text:
        return raw
    body = new.encode("utf-8", "surrogateescape") + b"\0"
    size = -(-(str_at + len(body)) // align) * align
    out = bytearray(raw[:str_at]) + body.ljust(size - str_at, b"\0")
    struct.pack_into("<I", out, 4, size)
    return bytes(out)


def _rehash(data: bytearray, dataoff: int, datasize: int, name: str) -> None:
    """Recompute every CodeDirectory's code-page hashes over the edited file."""
    blob = bytes(data[dataoff : dataoff + datasize])
    if len(blob) < 12 or struct.unpack_from(">I", blob)[0] != CSMAGIC_EMBEDDED_SIGNATURE:
        raise RelocationFailed(f"{name}: its code signature is not one tsuku can read")
    (count,) = struct.unpack_from(">I", blob, 8)
    directories: list[int] = []
    for i in range(count):
        if 12 + 8 * i + 8 > len(blob):
            raise RelocationFailed(f"{name}: truncated code signature index")
        _type, offset = struct.unpack_from(">II", blob, 12 + 8 * i)
        if offset + 8 > len(blob):
            raise RelocationFailed(f"{name}: a code signature blob lies outside it")
        magic, length = struct.unpack_from(">II", blob, offset)
        if magic == CSMAGIC_CODEDIRECTORY:
            directories.append(offset)
        elif magic == CSMAGIC_BLOBWRAPPER and length > 8:
            raise RelocationFailed(
                f"{name}: signed with a developer identity, which relocation would break",
                hint="Only ad-hoc signed bottles (Homebrew's own) can be relocated here.",
            )
    if not directories:
        raise RelocationFailed(f"{name}: its code signature has no code directory")
    for cd in directories:
        if cd + 44 > len(blob):
            raise RelocationFailed(f"{name}: truncated code directory")
        hash_offset, _ident, _special, n_code, code_limit = struct.unpack_from(
            ">IIIII", blob, cd + 16
        )
        hash_size, hash_type, _platform, page_shift = struct.unpack_from(">BBBB", blob, cd + 36)
        known = CS_HASHES.get(hash_type)
        if known is None or known[1] != hash_size:
            raise RelocationFailed(f"{name}: code directory hash type {hash_type} is unknown")
        digest = known[0]
        page = 1 << page_shift if page_shift else code_limit
        if code_limit > dataoff or cd + hash_offset + n_code * hash_size > len(blob):
            raise RelocationFailed(f"{name}: its code directory does not fit the file")
        for slot in range(n_code):
            start = slot * page
            chunk = bytes(data[start : min(start + page, code_limit)])
            at = dataoff + cd + hash_offset + slot * hash_size
            data[at : at + hash_size] = digest(chunk)
