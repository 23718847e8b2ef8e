"""Relocating macOS bottles' Mach-O files (tsukud/install/homebrew/macho.py) on Linux.

The files are built here byte by byte after Apple's headers (loader.h, fat.h, the
code-signing blobs), with an ad-hoc signature whose page hashes this file computes
itself; the relocated result is read back by a second, independent reader (macholib,
py2app's) and its signature checked by recomputing every page hash. Attacked: growth
into the header padding, a path that does not fit (error, file unchanged), universal
files, placeholders outside the load commands, garbage and truncated files, and a
signature made with a developer identity."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import pytest
from macholib import mach_o
from macholib.MachO import MachO

from tsukud.install.homebrew.errors import RelocationFailed
from tsukud.install.homebrew.macho import (
    LC_ID_DYLIB,
    LC_LOAD_DYLIB,
    LC_LOAD_WEAK_DYLIB,
    LC_RPATH,
    is_macho,
    relocate_bytes,
)
from tsukud.install.homebrew.relocate import relocate_keg

ARM64, X86_64 = 0x0100000C, 0x01000007
EXECUTE, DYLIB = 2, 6
PAGE = 4096
DEP = "@@HOMEBREW_PREFIX@@/opt/libgreet/lib/libgreet.1.dylib"
OWN = "@@HOMEBREW_CELLAR@@/greeter/1.0/lib/libgreeter.dylib"
RPATH = "@@HOMEBREW_PREFIX@@/opt/libgreet/lib"
SYSTEM = "/usr/lib/libSystem.B.dylib"
# Longer than the placeholder it replaces: the commands must grow into the padding.
LIBGREET = "/home/someone/.local/share/tsuku/tools/libgreet-2.1"
TEXT = b"\xc0\x03\x5f\xd6" * 64 + b"built in @@HOMEBREW_PREFIX@@/Cellar, said a C string\0"


def _pad(n: int, to: int) -> int:
    return -(-n // to) * to


def dylib_command(cmd: int, name: str) -> bytes:
    body = name.encode() + b"\0"
    size = _pad(24 + len(body), 8)
    return struct.pack("<IIIIII", cmd, size, 24, 2, 0x10000, 0x10000) + body.ljust(size - 24, b"\0")


def rpath_command(path: str) -> bytes:
    body = path.encode() + b"\0"
    size = _pad(12 + len(body), 8)
    return struct.pack("<III", LC_RPATH, size, 12) + body.ljust(size - 12, b"\0")


def code_directory(image: bytes, ident: bytes = b"greeter") -> bytes:
    """An ad-hoc, linker-made CodeDirectory (version 0x20400, SHA-256, 4 KiB pages)."""
    header = 88
    ident_at = header
    hashes_at = ident_at + len(ident) + 1
    pages = [image[i : i + PAGE] for i in range(0, len(image), PAGE)]
    hashes = b"".join(hashlib.sha256(p).digest() for p in pages)
    length = hashes_at + len(hashes)
    fixed = struct.pack(
        ">IIIIIIIIIBBBBIIIIQQQQ",
        0xFADE0C02,
        length,
        0x20400,
        0x20002,  # CS_ADHOC | CS_LINKER_SIGNED
        hashes_at,
        ident_at,
        0,  # special slots
        len(pages),
        len(image),  # code limit: up to the signature
        32,
        2,  # SHA-256
        0,
        12,  # 2**12-byte pages
        0,
        0,  # scatter
        0,  # team
        0,  # spare3
        0,  # code limit 64
        0,  # exec segment base, limit, flags
        PAGE,
        1,
    )
    assert len(fixed) == header
    return fixed + ident + b"\0" + hashes


def superblob(blobs: list[tuple[int, bytes]]) -> bytes:
    index_end = 12 + 8 * len(blobs)
    index, body, at = b"", b"", index_end
    for kind, blob in blobs:
        index += struct.pack(">II", kind, at)
        body += blob
        at += len(blob)
    return struct.pack(">III", 0xFADE0CC0, index_end + len(body), len(blobs)) + index + body


def build(
    commands: list[bytes],
    *,
    cpu: int = ARM64,
    filetype: int = EXECUTE,
    content_at: int = 0x1000,
    signed: bool = True,
    identity: bytes = b"",
) -> bytes:
    """A 64-bit Mach-O: __TEXT (one section at ``content_at``, so the header padding
    ends there), the given commands, __LINKEDIT and an embedded signature."""
    nsects = 1
    text_seg = struct.pack(
        "<II16sQQQQiiII",
        mach_o.LC_SEGMENT_64,
        72 + 80 * nsects,
        b"__TEXT",
        0x100000000,
        0x4000,
        0,
        content_at + len(TEXT),
        5,
        5,
        nsects,
        0,
    ) + struct.pack(
        "<16s16sQQIIIIIIII",
        b"__text",
        b"__TEXT",
        0x100000000 + content_at,
        len(TEXT),
        content_at,
        2,
        0,
        0,
        0x80000400,
        0,
        0,
        0,
    )
    sig_at = _pad(content_at + len(TEXT), 16)
    cmds = [text_seg, *commands]
    sig_cmd_size = 16 if signed else 0
    sizeofcmds = sum(len(c) for c in cmds) + sig_cmd_size
    ncmds = len(cmds) + (1 if signed else 0)
    header = struct.pack("<IiiIIIII", 0xFEEDFACF, cpu, 0, filetype, ncmds, sizeofcmds, 0, 0)
    assert 32 + sizeofcmds <= content_at, "the commands must fit the padding"
    image = bytearray(sig_at)
    body = header + b"".join(cmds)
    if not signed:
        image[: len(body)] = body
        image[content_at : content_at + len(TEXT)] = TEXT
        return bytes(image)
    # The signature's size must be known before its command is written.
    blobs_size = len(superblob(_blobs(bytes(image), identity)))
    sig_cmd = struct.pack("<IIII", mach_o.LC_CODE_SIGNATURE, 16, sig_at, blobs_size)
    body += sig_cmd
    image[: len(body)] = body
    image[content_at : content_at + len(TEXT)] = TEXT
    return bytes(image) + superblob(_blobs(bytes(image), identity))


def _blobs(image: bytes, identity: bytes) -> list[tuple[int, bytes]]:
    blobs = [(0, code_directory(image))]
    if identity:  # a CMS wrapper with content: a developer identity's signature
        blobs.append((0x10000, struct.pack(">II", 0xFADE0B01, 8 + len(identity)) + identity))
    return blobs


def greeter(**kw: object) -> bytes:
    return build(
        [
            dylib_command(LC_LOAD_DYLIB, DEP),
            dylib_command(LC_LOAD_WEAK_DYLIB, SYSTEM),
            rpath_command(RPATH),
        ],
        **kw,  # type: ignore[arg-type]
    )


# ---- reading the result independently ----------------------------------------------


def strings_by_macholib(path: Path) -> list[list[tuple[int, str]]]:
    """Every slice's (command, string) for dylib and rpath commands, read by macholib."""
    out = []
    for header in MachO(str(path)).headers:
        found = []
        for lc, cmd, data in header.commands:
            if lc.cmd in (LC_ID_DYLIB, LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_RPATH):
                at = (cmd.name if lc.cmd != LC_RPATH else cmd.path) - (
                    8 + cmd._size_  # type: ignore[attr-defined]
                )
                found.append((lc.cmd, data[at:].split(b"\0", 1)[0].decode()))
        out.append(found)
    return out


def signature_holds(data: bytes) -> bool:
    """Every CodeDirectory's page hashes match the file (recomputed here)."""
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at, sig = 32, None
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == mach_o.LC_CODE_SIGNATURE:
            sig = struct.unpack_from("<II", data, at + 8)
        at += size
    assert sig is not None
    dataoff, _size = sig
    count = struct.unpack_from(">I", data, dataoff + 8)[0]
    for i in range(count):
        _kind, off = struct.unpack_from(">II", data, dataoff + 12 + 8 * i)
        cd = dataoff + off
        if struct.unpack_from(">I", data, cd)[0] != 0xFADE0C02:
            continue
        hashes_at, _ident, _special, n, limit = struct.unpack_from(">IIIII", data, cd + 16)
        for slot in range(n):
            page = data[slot * PAGE : min((slot + 1) * PAGE, limit)]
            got = data[cd + hashes_at + 32 * slot : cd + hashes_at + 32 * (slot + 1)]
            if hashlib.sha256(page).digest() != got:
                return False
    return True


def signature_offset(data: bytes) -> int:
    ncmds = struct.unpack_from("<I", data, 16)[0]
    at = 32
    for _ in range(ncmds):
        cmd, size = struct.unpack_from("<II", data, at)
        if cmd == mach_o.LC_CODE_SIGNATURE:
            return int(struct.unpack_from("<I", data, at + 8)[0])
        at += size
    raise AssertionError("unsigned")


def to_lib(cmd: int, text: str) -> str | None:
    """The test's rewrite: placeholders become a TSUKU_HOME path."""
    if "@@HOMEBREW_" not in text:
        return None
    return text.replace("@@HOMEBREW_PREFIX@@/opt/libgreet", LIBGREET)


# ---- tests -------------------------------------------------------------------------


def test_the_builder_makes_what_an_independent_reader_and_the_signature_accept(
    tmp_path: Path,
) -> None:
    f = tmp_path / "greeter"
    f.write_bytes(greeter())
    assert is_macho(f.read_bytes()) and signature_holds(f.read_bytes())
    assert strings_by_macholib(f) == [
        [(LC_LOAD_DYLIB, DEP), (LC_LOAD_WEAK_DYLIB, SYSTEM), (LC_RPATH, RPATH)]
    ]


def test_placeholders_are_rewritten_grown_into_the_padding_and_the_signature_holds(
    tmp_path: Path,
) -> None:
    original = greeter()
    new = relocate_bytes(original, to_lib)
    f = tmp_path / "greeter"
    f.write_bytes(new)
    assert strings_by_macholib(f) == [
        [
            (LC_LOAD_DYLIB, f"{LIBGREET}/lib/libgreet.1.dylib"),
            (LC_LOAD_WEAK_DYLIB, SYSTEM),
            (LC_RPATH, f"{LIBGREET}/lib"),
        ]
    ]
    assert len(new) == len(original)
    assert signature_holds(new)
    # The sizes were updated, and nothing but the header area and the hashes changed:
    # the C string's placeholder in __text stays as it was.
    assert struct.unpack_from("<I", new, 20)[0] > struct.unpack_from("<I", original, 20)[0]
    assert new[0x1000 : 0x1000 + len(TEXT)] == TEXT
    sig_at = signature_offset(original)
    changed = [i for i in range(len(original)) if original[i] != new[i]]
    assert changed and all(i < 0x1000 or i >= sig_at for i in changed)


def test_a_path_that_does_not_fit_the_padding_is_refused_and_the_file_kept(
    tmp_path: Path,
) -> None:
    tight = greeter(content_at=0x200)  # little room after the commands
    f = tmp_path / "greeter"
    f.write_bytes(tight)

    def very_long(cmd: int, text: str) -> str | None:
        return "/" + "x" * 600 if "@@HOMEBREW_" in text else None

    from tsukud.install.homebrew.macho import relocate_file

    with pytest.raises(RelocationFailed) as caught:
        relocate_file(f, very_long)
    assert "need" in caught.value.message and "room for" in caught.value.message
    assert caught.value.hint and "header padding" in caught.value.hint
    assert f.read_bytes() == tight  # byte for byte
    assert not list(tmp_path.glob(".*tsuku-reloc"))


def test_every_slice_of_a_universal_file_is_relocated(tmp_path: Path) -> None:
    arm, intel = greeter(cpu=ARM64), greeter(cpu=X86_64)
    first = 0x4000
    second = _pad(first + len(arm), 0x4000)
    fat = bytearray(second + len(intel))
    struct.pack_into(">II", fat, 0, 0xCAFEBABE, 2)
    struct.pack_into(">iiIII", fat, 8, ARM64, 0, first, len(arm), 14)
    struct.pack_into(">iiIII", fat, 28, X86_64, 3, second, len(intel), 14)
    fat[first : first + len(arm)] = arm
    fat[second : second + len(intel)] = intel
    new = relocate_bytes(bytes(fat), to_lib)
    f = tmp_path / "greeter"
    f.write_bytes(new)
    libs = strings_by_macholib(f)
    assert len(libs) == 2
    for found in libs:
        assert found[0] == (LC_LOAD_DYLIB, f"{LIBGREET}/lib/libgreet.1.dylib")
    assert signature_holds(new[first : first + len(arm)])
    assert signature_holds(new[second : second + len(intel)])


def test_a_file_without_placeholders_in_its_commands_is_left_byte_identical() -> None:
    plain = build([dylib_command(LC_LOAD_DYLIB, SYSTEM)])
    assert relocate_bytes(plain, to_lib) == plain  # the C string's placeholder too


@pytest.mark.parametrize(
    "damage",
    [
        lambda b: b[:20],  # header cut short
        lambda b: b[:200],  # load commands cut off
        lambda b: b[:16] + struct.pack("<I", 0xFFFF) + b[20:],  # sizeofcmds past the end
        lambda b: b[:32] + struct.pack("<II", 0x19, 4) + b[40:],  # a command of size 4
        lambda b: b[:-40],  # signature cut off
        lambda b: b"\xca\xfe\xba\xbe\x00\x00\x00\x02" + b"\0" * 12,  # fat, slices missing
        lambda b: b"\xcf\xfa\xed\xfe" + bytes(range(256)) * 3,  # garbage after a magic
    ],
)
def test_a_damaged_file_is_a_clear_error_never_a_crash(damage) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RelocationFailed):
        relocate_bytes(damage(greeter()), to_lib, name="greeter")


def test_a_developer_identitys_signature_is_refused() -> None:
    signed = greeter(identity=b"0\x82 a CMS signature by a Developer ID")
    with pytest.raises(RelocationFailed, match="developer identity"):
        relocate_bytes(signed, to_lib)


def test_a_keg_is_relocated_with_loader_relative_paths_and_its_own_id_absolute(
    tmp_path: Path,
) -> None:
    keg = tmp_path / "keg"
    (keg / "bin").mkdir(parents=True)
    (keg / "lib").mkdir()
    tool = keg / "bin" / "greeter"
    tool.write_bytes(greeter())
    tool.chmod(0o555)  # bottles ship read-only files
    lib = keg / "lib" / "libgreeter.dylib"
    lib.write_bytes(
        build(
            [dylib_command(LC_ID_DYLIB, OWN), dylib_command(LC_LOAD_DYLIB, DEP)],
            filetype=DYLIB,
        )
    )
    home = tmp_path / "home" / ".tsuku" / "tools"
    report = relocate_keg(
        keg,
        home / "greeter-1.0",
        formula="greeter",
        pkg_version="1.0",
        deps={"libgreet": home / "libgreet-2.1"},
    )
    assert sorted(report.macho_files) == ["bin/greeter", "lib/libgreeter.dylib"]
    assert strings_by_macholib(tool) == [
        [
            (LC_LOAD_DYLIB, "@loader_path/../../libgreet-2.1/lib/libgreet.1.dylib"),
            (LC_LOAD_WEAK_DYLIB, SYSTEM),
            (LC_RPATH, "@loader_path/../../libgreet-2.1/lib"),
        ]
    ]
    assert strings_by_macholib(lib) == [
        [
            (LC_ID_DYLIB, str(home / "greeter-1.0" / "lib" / "libgreeter.dylib")),
            (LC_LOAD_DYLIB, "@loader_path/../../libgreet-2.1/lib/libgreet.1.dylib"),
        ]
    ]
    assert signature_holds(tool.read_bytes()) and signature_holds(lib.read_bytes())
    assert tool.stat().st_mode & 0o777 == 0o555  # its mode as it came
