"""Real Linux programs a few hundred bytes long, built without a compiler.

The demo's releases carry one per Linux platform so that what its validation says is
true of them: the linux/amd64 build ran, the linux/arm64 build ran under emulation, each
a different file (a shell script is the same bytes everywhere and proves nothing about a
platform). Each is a static ELF64 executable with one loadable segment whose code writes
a fixed line to stdout and exits 0, whatever its arguments (``stern --version`` prints
``stern v1.32.0``). The machine code is written out below, instruction by instruction.
darwin gets no such program: macOS on arm64 runs only signed binaries, so the demo keeps
a script there, and says so.
"""

from __future__ import annotations

import struct

BASE = 0x400000  # where the one segment is loaded
_EHDR, _PHDR = 64, 56
CODE_AT = _EHDR + _PHDR  # the entry point's offset in the file


def _amd64(text: bytes) -> bytes:
    code = b"".join(
        (
            b"\xb8\x01\x00\x00\x00",  # mov eax, 1 (write)
            b"\xbf\x01\x00\x00\x00",  # mov edi, 1 (stdout)
            b"\x48\x8d\x35\x10\x00\x00\x00",  # lea rsi, [rip + 16] (the text, after the code)
            b"\xba" + struct.pack("<I", len(text)),  # mov edx, len
            b"\x0f\x05",  # syscall
            b"\xb8\x3c\x00\x00\x00",  # mov eax, 60 (exit)
            b"\x31\xff",  # xor edi, edi (status 0)
            b"\x0f\x05",  # syscall
        )
    )
    return code + text


def _arm64(text: bytes) -> bytes:
    def movz(reg: int, value: int) -> int:
        return 0xD2800000 | (value << 5) | reg

    words = (
        movz(0, 1),  # mov x0, #1 (stdout)
        0x10000000 | ((28 >> 2) << 5) | 1,  # adr x1, #28 (the text, after the 8 words)
        movz(2, len(text)),  # mov x2, #len
        movz(8, 64),  # mov x8, #64 (write)
        0xD4000001,  # svc #0
        movz(0, 0),  # mov x0, #0 (status 0)
        movz(8, 93),  # mov x8, #93 (exit)
        0xD4000001,  # svc #0
    )
    return struct.pack("<8I", *words) + text


_MACHINES = {"amd64": (62, _amd64), "arm64": (183, _arm64)}  # e_machine, code


def program(arch: str, line: str) -> bytes:
    """A static Linux executable for ``arch`` (amd64, arm64) printing ``line``."""
    machine, code_for = _MACHINES[arch]
    text = (line + "\n").encode()
    if len(text) > 0xFFFF:
        raise ValueError("the line is too long for one mov")
    body = code_for(text)
    size = CODE_AT + len(body)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, SysV
    ehdr = ident + struct.pack(
        "<HHIQQQIHHHHHH",
        2,  # ET_EXEC
        machine,
        1,  # EV_CURRENT
        BASE + CODE_AT,  # e_entry
        _EHDR,  # e_phoff
        0,  # e_shoff: no sections
        0,  # e_flags
        _EHDR,
        _PHDR,
        1,  # one program header
        0,
        0,
        0,
    )
    phdr = struct.pack(
        "<IIQQQQQQ",
        1,  # PT_LOAD
        5,  # PF_R | PF_X
        0,  # p_offset: the whole file
        BASE,
        BASE,
        size,
        size,
        0x1000,
    )
    return ehdr + phdr + body


def supports(arch: str) -> bool:
    return arch in _MACHINES
