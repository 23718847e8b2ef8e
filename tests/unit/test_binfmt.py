"""ELF and Mach-O headers, synthesised byte by byte, read by :mod:`tsukud.binfmt`."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from tsukud.binfmt import BinaryInfo, inspect, is_static_elf, platform_problem

CPU_X86_64 = 0x01000007
CPU_ARM64 = 0x0100000C
MH_EXECUTE = 2
MH_DYLIB = 6


def macho(cputype: int, filetype: int = MH_EXECUTE, *, big_endian: bool = False) -> bytes:
    """A thin 64-bit Mach-O header (``mach_header_64``) and some padding."""
    if big_endian:
        return struct.pack(">IiiIIIII", 0xFEEDFACF, cputype, 3, filetype, 0, 0, 0, 0) + bytes(64)
    return struct.pack("<IiiIIIII", 0xFEEDFACF, cputype, 3, filetype, 0, 0, 0, 0) + bytes(64)


def fat(*slices: tuple[int, bytes], wide: bool = False) -> bytes:
    """A universal binary: a big-endian fat header, one fat_arch per slice, the slices."""
    entry = 32 if wide else 20
    offset = 8 + entry * len(slices)
    table = b""
    body = b""
    for cputype, data in slices:
        at = offset + len(body)
        if wide:
            table += struct.pack(">iiQQII", cputype, 3, at, len(data), 0, 0)
        else:
            table += struct.pack(">iiIII", cputype, 3, at, len(data), 0)
        body += data
    magic = 0xCAFEBABF if wide else 0xCAFEBABE
    return struct.pack(">II", magic, len(slices)) + table + body


def elf(machine: int, *, interp: bool, e_type: int = 2) -> bytes:
    """A 64-bit little-endian ELF header with one program header (PT_INTERP or PT_LOAD)."""
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", e_type, machine, 1, 0x400000, 64, 0, 0, 64, 56, 1, 64, 0, 0
    )
    p_type = 3 if interp else 1
    phdr = struct.pack("<IIQQQQQQ", p_type, 4, 0, 0, 0, 0, 0, 8)
    return header + phdr


def test_a_thin_mach_o_names_its_cpu_and_kind() -> None:
    assert inspect(macho(CPU_ARM64)) == BinaryInfo(
        kind="macho", os="darwin", archs=("arm64",), executable=True
    )
    assert inspect(macho(CPU_X86_64, big_endian=True)).archs == ("amd64",)
    assert inspect(macho(CPU_X86_64, MH_DYLIB)).executable is False


def test_an_x86_64_mach_o_mapped_to_arm64_is_wrong() -> None:
    info = inspect(macho(CPU_X86_64))
    problem = platform_problem(info, "darwin", "arm64", mode=0o755)
    assert problem == "is built for amd64, not arm64"
    assert platform_problem(info, "darwin", "amd64", mode=0o755) is None


def test_a_universal_binary_serves_every_slice() -> None:
    universal = fat((CPU_X86_64, macho(CPU_X86_64)), (CPU_ARM64, macho(CPU_ARM64)))
    info = inspect(universal)
    assert info.kind == "macho" and info.archs == ("amd64", "arm64") and info.executable
    assert platform_problem(info, "darwin", "arm64") is None
    assert platform_problem(info, "darwin", "amd64") is None
    wide = inspect(fat((CPU_ARM64, macho(CPU_ARM64)), wide=True))
    assert wide.archs == ("arm64",)
    only_intel = inspect(fat((CPU_X86_64, macho(CPU_X86_64))))
    assert platform_problem(only_intel, "darwin", "arm64") == "is built for amd64, not arm64"


def test_a_fat_table_that_lies_about_its_slice_is_not_trusted() -> None:
    lying = fat((CPU_ARM64, macho(CPU_X86_64)))
    assert inspect(lying).kind == "unknown"


def test_a_java_class_file_is_not_a_universal_binary() -> None:
    java = struct.pack(">IHH", 0xCAFEBABE, 0, 61) + bytes(64)  # major version 61
    assert inspect(java).kind == "unknown"


def test_elf_machine_and_linking() -> None:
    static_arm = elf(0xB7, interp=False)
    dynamic_amd = elf(0x3E, interp=True)
    assert inspect(static_arm) == BinaryInfo(
        kind="elf", os="linux", archs=("arm64",), executable=True, static=True
    )
    assert inspect(dynamic_amd).static is False
    assert is_static_elf(static_arm) and not is_static_elf(dynamic_amd)
    assert platform_problem(inspect(dynamic_amd), "linux", "arm64") == (
        "is built for amd64, not arm64"
    )
    assert platform_problem(inspect(static_arm), "darwin", "arm64") == (
        "is an ELF (Linux) binary, not a darwin one"
    )
    relocatable = inspect(elf(0x3E, interp=False, e_type=1))
    assert platform_problem(relocatable, "linux", "amd64") == (
        "is a library or object file, not an executable"
    )


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"#!/bin/sh\necho hi\n", None),
        (b"MZ\x90\x00" + bytes(60), "is neither an ELF nor a Mach-O executable"),
        (b"", "is neither an ELF nor a Mach-O executable"),
        (b"\x7fELF", "is neither an ELF nor a Mach-O executable"),  # truncated header
    ],
)
def test_scripts_pass_and_other_files_do_not(data: bytes, problem: str | None) -> None:
    got = platform_problem(inspect(data), "darwin", "arm64", mode=0o755)
    assert got == problem or (problem is not None and got is not None and got.startswith(problem))


def test_a_file_without_the_x_bit_is_not_executable() -> None:
    assert platform_problem(inspect(macho(CPU_ARM64)), "darwin", "arm64", mode=0o644) == (
        "is not executable (no x permission bit)"
    )


def test_this_interpreter_is_a_dynamic_elf_of_the_host() -> None:
    """A real binary, not a synthesised one: the Python running this test."""
    import sys

    from tsukud.recipe import host_platform

    data = Path(sys.executable).resolve().read_bytes()[: 64 * 1024]
    info = inspect(data)
    host = host_platform()
    assert info.kind == "elf" and info.archs == (host.arch,)
    assert platform_problem(info, "linux", host.arch, mode=0o755) is None


def test_only_an_enabled_handler_with_the_fix_binary_flag_serves_containers(
    tmp_path: Path,
) -> None:
    from tsukud.validation.validator import binfmt_handler_registered

    entry = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: {}\n"
    (tmp_path / "qemu-aarch64").write_text(entry.format("PF"))
    assert binfmt_handler_registered("arm64", tmp_path)
    (tmp_path / "qemu-aarch64").write_text(entry.format("P"))  # opened lazily: not in a container
    assert not binfmt_handler_registered("arm64", tmp_path)
    (tmp_path / "qemu-aarch64").write_text(entry.format("PF").replace("enabled", "disabled"))
    assert not binfmt_handler_registered("arm64", tmp_path)
    assert not binfmt_handler_registered("riscv64", tmp_path)


def test_the_debian_suite_follows_the_host() -> None:
    from tsukud.sandbox.image import debootstrap_command, host_suite

    assert host_suite("ID=debian\nVERSION_CODENAME=trixie\n") == "trixie"
    assert host_suite('ID="ubuntu"\nVERSION_CODENAME=noble\n') == "bookworm"
    assert host_suite("") == "bookworm"
    assert debootstrap_command("/usr/sbin/debootstrap", Path("/r"), "bookworm", "http://m") == [
        "/usr/sbin/debootstrap",
        "--variant=minbase",
        "bookworm",
        "/r",
        "http://m",
    ]
