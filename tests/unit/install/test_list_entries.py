"""list_entries: what inspect_archive shows the model, read without touching disk."""

from __future__ import annotations

import gzip
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from tsukud.install.extract import ArchiveLimitExceeded, CorruptArchive, ExtractLimits, list_entries
from tsukud.recipe import ArchiveFormat

F = ArchiveFormat
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(32)
MACHO = b"\xcf\xfa\xed\xfe\x07\x00\x00\x01" + bytes(32)
FAT_MACHO = b"\xca\xfe\xba\xbe\x00\x00\x00\x02" + bytes(32)
JAVA_CLASS = b"\xca\xfe\xba\xbe\x00\x00\x00\x41" + bytes(32)
PE = b"MZ\x90\x00" + bytes(32)


def tar_gz(files: dict[str, tuple[bytes, int]], extra: list[tarfile.TarInfo] = ()) -> bytes:  # type: ignore[assignment]
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, (data, mode) in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return buf.getvalue()


def by_name(entries: list) -> dict:  # type: ignore[type-arg]
    return {e.name: e for e in entries}


def test_tar_listing_detects_executables(tmp_path: Path) -> None:
    link = tarfile.TarInfo("pkg/bin/alias")
    link.type, link.linkname = tarfile.SYMTYPE, "tool"
    data = tar_gz(
        {
            "pkg/bin/tool": (ELF, 0o644),  # no exec bit, but ELF
            "pkg/bin/run.sh": (b"#!/bin/sh\n", 0o755),  # exec bit only
            "pkg/tool.exe": (PE, 0o644),
            "pkg/mac": (MACHO, 0o644),
            "pkg/fat": (FAT_MACHO, 0o644),
            "pkg/Main.class": (JAVA_CLASS, 0o644),
            "pkg/README": (b"hello", 0o644),
        },
        [link],
    )
    path = tmp_path / "a.tar.gz"
    path.write_bytes(data)
    before = sorted(os.listdir(tmp_path))
    entries = by_name(list_entries(path, F.TAR_GZ))
    assert sorted(os.listdir(tmp_path)) == before
    assert entries["pkg/bin/tool"].is_executable and entries["pkg/bin/tool"].magic == "elf"
    assert entries["pkg/bin/run.sh"].is_executable and entries["pkg/bin/run.sh"].magic is None
    assert entries["pkg/tool.exe"].magic == "pe"
    assert entries["pkg/mac"].magic == "macho"
    assert entries["pkg/fat"].magic == "macho"
    assert entries["pkg/Main.class"].magic is None and not entries["pkg/Main.class"].is_executable
    assert not entries["pkg/README"].is_executable
    assert entries["pkg/README"].size == 5
    assert entries["pkg/bin/alias"].kind == "symlink"
    assert entries["pkg/bin/alias"].link_target == "tool"
    # Bytes work the same as a path.
    assert list_entries(data, F.TAR_GZ) == list(entries.values())


def test_hostile_names_are_listed_not_written(tmp_path: Path) -> None:
    data = tar_gz({"../../evil": (b"x", 0o755), "/abs/path": (ELF, 0o755)})
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        names = [e.name for e in list_entries(data, F.TAR_GZ)]
    finally:
        os.chdir(cwd)
    assert names == ["../../evil", "/abs/path"]
    assert list(tmp_path.iterdir()) == []


def test_zip_listing(tmp_path: Path) -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in [
            ("dist/", b"", 0o040755),
            ("dist/tool", ELF, 0o100755),
            ("dist/notes.txt", b"hi", 0o100644),
            ("dist/link", b"tool", 0o120777),
        ]:
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, mode << 16
            zf.writestr(info, data)
    entries = by_name(list_entries(buf.getvalue(), F.ZIP))
    assert entries["dist/"].kind == "dir"
    assert entries["dist/tool"].is_executable and entries["dist/tool"].mode == 0o755
    assert not entries["dist/notes.txt"].is_executable
    assert entries["dist/link"].kind == "symlink" and entries["dist/link"].link_target == "tool"


def test_raw_and_single_file_assets() -> None:
    (raw,) = list_entries(ELF, F.RAW, name="tool-linux-amd64")
    assert raw.name == "tool-linux-amd64" and raw.is_executable and raw.size == len(ELF)
    (text,) = list_entries(b"just text", F.RAW, name="notes")
    assert not text.is_executable
    (single,) = list_entries(gzip.compress(ELF), F.GZ, name="tool.gz")
    assert single.name == "tool" and single.size == len(ELF) and single.magic == "elf"


def test_entry_limit() -> None:
    data = tar_gz({f"f{i}": (b"", 0o644) for i in range(11)})
    with pytest.raises(ArchiveLimitExceeded, match="more than 10 entries"):
        list_entries(data, F.TAR_GZ, ExtractLimits(max_entries=10))


def test_bomb_is_stopped() -> None:
    data = tar_gz({"zeros": (bytes(4 * 1024 * 1024), 0o644)})
    limits = ExtractLimits(max_ratio=10, ratio_floor_bytes=256 * 1024)
    with pytest.raises(ArchiveLimitExceeded, match="compression ratio"):
        list_entries(data, F.TAR_GZ, limits)


def test_corrupt() -> None:
    with pytest.raises(CorruptArchive, match="cannot read as zip"):
        list_entries(b"not a zip", F.ZIP, name="x.zip")
