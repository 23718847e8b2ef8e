"""Safe extraction: hostile archives are refused, honest ones unpack faithfully.

Every hostile archive is built here with tarfile/zipfile. Each refusal test also checks
that nothing outside the staging directory changed.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import tarfile
import time
import zipfile
from collections.abc import Iterable
from pathlib import Path

import pytest
import zstandard

from tsukud.install.extract import (
    ArchiveLimitExceeded,
    CorruptArchive,
    ExtractError,
    ExtractLimits,
    UnsafeArchive,
    extract,
)
from tsukud.recipe import ArchiveFormat

F = ArchiveFormat

# ----------------------------------------------------------------------------- builders


def member(
    name: str,
    data: bytes = b"",
    *,
    type: bytes = tarfile.REGTYPE,
    mode: int = 0o644,
    linkname: str = "",
) -> tuple[tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = type
    info.mode = mode
    info.linkname = linkname
    info.mtime = int(time.time())
    if type in (tarfile.REGTYPE, tarfile.AREGTYPE):
        info.size = len(data)
        return info, data
    return info, None


def tar_bytes(members: Iterable[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def compress(data: bytes, fmt: ArchiveFormat) -> bytes:
    if fmt in (F.TAR_GZ, F.GZ):
        return gzip.compress(data)
    if fmt in (F.TAR_XZ, F.XZ):
        return lzma.compress(data)
    if fmt in (F.TAR_BZ2, F.BZ2):
        return bz2.compress(data)
    if fmt in (F.TAR_ZST, F.ZST):
        return zstandard.ZstdCompressor().compress(data)
    return data


def write_tar(
    path: Path, members: Iterable[tuple[tarfile.TarInfo, bytes | None]], fmt=F.TAR_GZ
) -> Path:
    path.write_bytes(compress(tar_bytes(members), fmt))
    return path


def write_zip(path: Path, entries: Iterable[tuple[str, bytes, int]]) -> Path:
    """entries: (name, data, unix mode incl. file type bits, or 0 for no mode)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            if mode:
                info.create_system = 3
                info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


# ------------------------------------------------------------------------------ fixtures


def snapshot(root: Path, skip: Path) -> dict[str, tuple[int, int, bytes | str | None]]:
    """Every path under root except the staging dir: type, mode, and content/target."""
    seen: dict[str, tuple[int, int, bytes | str | None]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            st = os.lstat(p)
            content: bytes | str | None = None
            if stat.S_ISLNK(st.st_mode):
                content = os.readlink(p)
            elif stat.S_ISREG(st.st_mode):
                content = p.read_bytes()
            seen[str(p.relative_to(root))] = (
                stat.S_IFMT(st.st_mode),
                stat.S_IMODE(st.st_mode),
                content,
            )
    return seen


class Sandbox:
    """tmp_path holds the archive, a victim file, and the staging dir."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.staging = root / "work" / "staging"
        (root / "work").mkdir()
        (root / "victim").write_text("original\n")
        (root / "outside").mkdir()
        self.before = snapshot(root, self.staging)

    def unchanged(self) -> None:
        after = snapshot(self.root, self.staging)
        # The archive itself was written before the snapshot was taken only in some
        # tests; compare everything but archive files.
        strip = {k for k in after if k.startswith("archive")}
        assert {k: v for k, v in after.items() if k not in strip} == {
            k: v for k, v in self.before.items() if k not in strip
        }


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path)


def refuse(
    box: Sandbox,
    archive: Path,
    fmt: ArchiveFormat,
    match: str,
    *,
    error: type[Exception] = UnsafeArchive,
    **kwargs: object,
) -> ExtractError:
    with pytest.raises(error, match=match) as info:
        extract(archive, box.staging, fmt, **kwargs)  # type: ignore[arg-type]
    box.unchanged()
    assert isinstance(info.value, ExtractError)
    return info.value


# ------------------------------------------------------------------------- hostile tars


@pytest.mark.parametrize("name", ["../evil", "a/../../evil", "./../victim", "a/b/../../../x"])
def test_tar_slip_is_refused(box: Sandbox, name: str) -> None:
    archive = write_tar(
        box.root / "archive.tar.gz", [member("ok.txt", b"fine"), member(name, b"pwned")]
    )
    err = refuse(box, archive, F.TAR_GZ, r"escapes the destination \('\.\.' in its path\)")
    assert repr(name) in err.message
    assert (box.root / "victim").read_text() == "original\n"


def test_tar_slip_after_strip_dirs_is_refused(box: Sandbox) -> None:
    archive = write_tar(box.root / "archive.tar.gz", [member("top/../../evil", b"x")])
    refuse(box, archive, F.TAR_GZ, "escapes the destination", strip_dirs=1)


def test_tar_absolute_path_is_refused(box: Sandbox) -> None:
    target = str(box.root / "outside" / "abs")
    archive = write_tar(box.root / "archive.tar.gz", [member(target, b"pwned")])
    err = refuse(box, archive, F.TAR_GZ, "is an absolute path")
    assert target in err.message
    assert not Path(target).exists()


def test_backslash_names_are_refused(box: Sandbox) -> None:
    archive = write_tar(box.root / "archive.tar.gz", [member("..\\evil", b"x")])
    refuse(box, archive, F.TAR_GZ, "contains a backslash")


@pytest.mark.parametrize("target", ["../outside", "../../victim", "sub/../../..", "/etc/passwd"])
def test_symlink_escape_is_refused(box: Sandbox, target: str) -> None:
    archive = write_tar(
        box.root / "archive.tar.gz",
        [
            member("sub", type=tarfile.DIRTYPE, mode=0o755),
            member("link", type=tarfile.SYMTYPE, linkname=target),
            member("link/pwned", b"x"),
        ],
    )
    err = refuse(box, archive, F.TAR_GZ, "symlink 'link'")
    assert target in err.message


def test_write_through_symlink_is_refused(box: Sandbox) -> None:
    # Even a link that points inside may not be used as a directory to write through.
    archive = write_tar(
        box.root / "archive.tar.gz",
        [
            member("real", type=tarfile.DIRTYPE, mode=0o755),
            member("alias", type=tarfile.SYMTYPE, linkname="real"),
            member("alias/file", b"x"),
        ],
    )
    refuse(box, archive, F.TAR_GZ, "passes through the symlink 'alias'")


def test_symlink_chain_escape_is_refused(box: Sandbox) -> None:
    # d/up -> .. stays inside on its own; d/out -> up/.. climbs out through it.
    archive = write_tar(
        box.root / "archive.tar.gz",
        [
            member("d", type=tarfile.DIRTYPE, mode=0o755),
            member("d/up", type=tarfile.SYMTYPE, linkname=".."),
            member("d/out", type=tarfile.SYMTYPE, linkname="up/.."),
        ],
    )
    refuse(box, archive, F.TAR_GZ, r"symlink 'd/out' -> 'up/\.\.' escapes")


def test_symlink_redirected_by_a_later_link_is_refused(box: Sandbox) -> None:
    # s -> a/.. is harmless while a does not exist; a -> . (also harmless) makes s
    # resolve to dest/.. . Only the final re-check can see this.
    archive = write_tar(
        box.root / "archive.tar.gz",
        [
            member("s", type=tarfile.SYMTYPE, linkname="a/.."),
            member("a", type=tarfile.SYMTYPE, linkname="."),
        ],
    )
    refuse(
        box, archive, F.TAR_GZ, r"symlink 's' -> 'a/\.\.' escapes the destination \(through other"
    )


def test_symlink_loop_is_refused(box: Sandbox) -> None:
    archive = write_tar(
        box.root / "archive.tar.gz",
        [
            member("a", type=tarfile.SYMTYPE, linkname="b"),
            member("b", type=tarfile.SYMTYPE, linkname="a"),
        ],
    )
    refuse(box, archive, F.TAR_GZ, "is a symlink loop")


@pytest.mark.parametrize(
    ("linkname", "match"),
    [
        ("../victim", r"hard link 'hl' target '\.\./victim' escapes"),
        ("/etc/passwd", "is an absolute path"),
        ("never-extracted", "not a file extracted before it"),
    ],
)
def test_hardlink_escape_is_refused(box: Sandbox, linkname: str, match: str) -> None:
    archive = write_tar(
        box.root / "archive.tar.gz", [member("hl", type=tarfile.LNKTYPE, linkname=linkname)]
    )
    refuse(box, archive, F.TAR_GZ, match)


def test_hardlink_to_a_symlink_is_refused(box: Sandbox) -> None:
    archive = write_tar(
        box.root / "archive.tar.gz",
        [
            member("ln", type=tarfile.SYMTYPE, linkname="."),
            member("hl", type=tarfile.LNKTYPE, linkname="ln"),
        ],
    )
    refuse(box, archive, F.TAR_GZ, "not a file extracted before it")


@pytest.mark.parametrize(
    ("kind", "label"),
    [
        (tarfile.CHRTYPE, "device node"),
        (tarfile.BLKTYPE, "device node"),
        (tarfile.FIFOTYPE, "FIFO"),
    ],
)
def test_special_files_are_refused(box: Sandbox, kind: bytes, label: str) -> None:
    archive = write_tar(box.root / "archive.tar.gz", [member("dev/thing", type=kind)])
    err = refuse(box, archive, F.TAR_GZ, label)
    assert "'dev/thing'" in err.message
    assert not (box.staging / "dev" / "thing").exists()


def test_too_many_entries_is_refused(box: Sandbox) -> None:
    members = [member(f"f{i}", type=tarfile.DIRTYPE, mode=0o755) for i in range(10_001)]
    archive = write_tar(box.root / "archive.tar.gz", members)
    refuse(box, archive, F.TAR_GZ, "more than 10000 entries", error=ArchiveLimitExceeded)


def test_exactly_the_entry_limit_is_accepted(tmp_path: Path) -> None:
    limits = ExtractLimits(max_entries=500)
    ok = write_tar(tmp_path / "ok.tar", [member(f"f{i}", b"") for i in range(500)], F.TAR)
    report = extract(ok, tmp_path / "a", F.TAR, limits=limits)
    assert report.entries == 500
    over = write_tar(tmp_path / "over.tar", [member(f"f{i}", b"") for i in range(501)], F.TAR)
    with pytest.raises(ArchiveLimitExceeded, match="more than 500 entries"):
        extract(over, tmp_path / "b", F.TAR, limits=limits)


class Zeros(io.RawIOBase):
    """A file of n zero bytes that never sits in memory at once."""

    def __init__(self, n: int) -> None:
        self.left = n

    def readable(self) -> bool:
        return True

    def readinto(self, buf) -> int:  # type: ignore[no-untyped-def]
        n = min(len(buf), self.left)
        buf[:n] = bytes(n)
        self.left -= n
        return n


def test_compression_bomb_is_stopped_while_streaming(box: Sandbox) -> None:
    size = 32 * 1024 * 1024
    path = box.root / "archive.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("zeros")
        info.size = size
        tar.addfile(info, io.BufferedReader(Zeros(size)))
    compressed = path.stat().st_size
    assert size / compressed > 500
    limits = ExtractLimits(max_ratio=20, ratio_floor_bytes=1024 * 1024)
    err = refuse(
        box,
        path,
        F.TAR_GZ,
        "compression ratio limit 20:1",
        error=ArchiveLimitExceeded,
        limits=limits,
    )
    assert "archive.tar.gz" in err.message
    # Stopped near the cap, not after writing everything the header promised.
    partial = box.staging / "zeros"
    written = partial.stat().st_size if partial.exists() else 0
    assert written <= 1024 * 1024 + 64 * 1024


def test_total_size_limit(box: Sandbox) -> None:
    archive = write_tar(
        box.root / "archive.tar.gz", [member(f"f{i}", os.urandom(4096)) for i in range(8)]
    )
    limits = ExtractLimits(max_total_bytes=16 * 1024)
    refuse(
        box,
        archive,
        F.TAR_GZ,
        "uncompressed size exceeds the 16384-byte limit",
        error=ArchiveLimitExceeded,
        limits=limits,
    )


def test_entry_size_limit(box: Sandbox) -> None:
    archive = write_tar(box.root / "archive.tar.gz", [member("big", b"x" * 5000)])
    limits = ExtractLimits(max_entry_bytes=4096)
    refuse(
        box,
        archive,
        F.TAR_GZ,
        "'big' is 5000 bytes, over the 4096-byte limit",
        error=ArchiveLimitExceeded,
        limits=limits,
    )


def test_zip_bomb_over_many_entries(box: Sandbox) -> None:
    # Each entry is under the per-entry limit; together they pass the ratio cap.
    archive = write_zip(
        box.root / "archive.zip", [(f"z{i}", bytes(512 * 1024), 0o100644) for i in range(16)]
    )
    limits = ExtractLimits(max_ratio=50, ratio_floor_bytes=1024 * 1024, max_entry_bytes=1024 * 1024)
    refuse(
        box,
        archive,
        F.ZIP,
        "compression ratio limit 50:1",
        error=ArchiveLimitExceeded,
        limits=limits,
    )


def test_single_gz_bomb(box: Sandbox) -> None:
    path = box.root / "archive.gz"
    path.write_bytes(gzip.compress(bytes(8 * 1024 * 1024)))
    limits = ExtractLimits(max_ratio=10, ratio_floor_bytes=512 * 1024)
    refuse(box, path, F.GZ, "compression ratio", error=ArchiveLimitExceeded, limits=limits)


# -------------------------------------------------------------------------- hostile zips


def test_zip_slip_is_refused(box: Sandbox) -> None:
    archive = write_zip(
        box.root / "archive.zip", [("ok", b"fine", 0o100644), ("../evil", b"x", 0o100644)]
    )
    refuse(box, archive, F.ZIP, r"entry '\.\./evil' escapes the destination")


def test_zip_absolute_path_is_refused(box: Sandbox) -> None:
    target = str(box.root / "outside" / "abs")
    archive = write_zip(box.root / "archive.zip", [(target, b"x", 0o100644)])
    refuse(box, archive, F.ZIP, "is an absolute path")
    assert not Path(target).exists()


def test_zip_symlink_escape_is_refused(box: Sandbox) -> None:
    archive = write_zip(box.root / "archive.zip", [("link", b"../../victim", 0o120777)])
    refuse(box, archive, F.ZIP, r"symlink 'link' -> '\.\./\.\./victim' escapes")


def test_zip_device_is_refused(box: Sandbox) -> None:
    archive = write_zip(box.root / "archive.zip", [("fifo", b"", stat.S_IFIFO | 0o644)])
    refuse(box, archive, F.ZIP, "FIFO")


def test_zip_entry_count_checked_before_writing(box: Sandbox) -> None:
    archive = write_zip(box.root / "archive.zip", [(f"f{i}", b"", 0o100644) for i in range(30)])
    refuse(
        box,
        archive,
        F.ZIP,
        "30 entries, over the limit of 20",
        error=ArchiveLimitExceeded,
        limits=ExtractLimits(max_entries=20),
    )
    assert not any(box.staging.iterdir())


# --------------------------------------------------------------------------- misc errors


def test_dest_must_be_empty(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "a.tar.gz", [member("x", b"1")])
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "leftover").write_text("x")
    with pytest.raises(ExtractError, match="not empty"):
        extract(archive, dest, F.TAR_GZ)


@pytest.mark.parametrize("fmt", [F.TAR_GZ, F.TAR_XZ, F.TAR_ZST, F.ZIP, F.GZ])
def test_corrupt_archive(tmp_path: Path, fmt: ArchiveFormat) -> None:
    path = tmp_path / "junk"
    path.write_bytes(b"this is not an archive at all" * 10)
    with pytest.raises(CorruptArchive, match=f"cannot unpack as {fmt.value}"):
        extract(path, tmp_path / "out", fmt)


def test_truncated_archive(tmp_path: Path) -> None:
    data = compress(tar_bytes([member("f", os.urandom(100_000))]), F.TAR_GZ)
    path = tmp_path / "t.tar.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptArchive):
        extract(path, tmp_path / "out", F.TAR_GZ)


# ------------------------------------------------------------------------------ positive

TREE: list[tuple[str, bytes, int]] = [
    ("tool-1.0/bin/tool", b"\x7fELF binary", 0o755),
    ("tool-1.0/README.md", b"# tool\n", 0o644),
    ("tool-1.0/lib/libx.so.1", b"lib", 0o644),
]


def tree_members() -> list[tuple[tarfile.TarInfo, bytes | None]]:
    out = [
        member("tool-1.0", type=tarfile.DIRTYPE, mode=0o755),
        member("tool-1.0/bin", type=tarfile.DIRTYPE, mode=0o755),
        member("tool-1.0/lib", type=tarfile.DIRTYPE, mode=0o755),
    ]
    out += [member(name, data, mode=mode) for name, data, mode in TREE]
    out.append(member("tool-1.0/lib/libx.so", type=tarfile.SYMTYPE, linkname="libx.so.1"))
    out.append(member("tool-1.0/bin/libx", type=tarfile.SYMTYPE, linkname="../lib/libx.so"))
    out.append(
        member(
            "tool-1.0/bin/tool-alias",
            type=tarfile.LNKTYPE,
            linkname="tool-1.0/bin/tool",
            mode=0o755,
        )
    )
    return out


def check_tree(dest: Path) -> None:
    for name, data, mode in TREE:
        path = dest / name
        assert path.read_bytes() == data
        assert stat.S_IMODE(path.stat().st_mode) == (0o755 if mode & 0o111 else 0o644)


@pytest.mark.parametrize("fmt", [F.TAR_GZ, F.TAR_XZ, F.TAR_BZ2, F.TAR_ZST, F.TAR])
def test_tar_formats_round_trip(tmp_path: Path, fmt: ArchiveFormat) -> None:
    archive = write_tar(tmp_path / f"a.{fmt.value}", tree_members(), fmt)
    report = extract(archive, tmp_path / "out", fmt)
    out = tmp_path / "out"
    check_tree(out)
    assert os.readlink(out / "tool-1.0/lib/libx.so") == "libx.so.1"
    assert (out / "tool-1.0/bin/libx").read_bytes() == b"lib"
    alias = out / "tool-1.0/bin/tool-alias"
    assert not alias.is_symlink() and alias.read_bytes() == b"\x7fELF binary"
    assert report.executables == ("tool-1.0/bin/tool", "tool-1.0/bin/tool-alias")
    assert report.symlinks == ("tool-1.0/bin/libx", "tool-1.0/lib/libx.so")
    assert report.entries == 9
    assert report.dest == str(out.resolve())


def test_zip_round_trip(tmp_path: Path) -> None:
    entries = [("tool-1.0/", b"", 0o040755)] + [(n, d, 0o100000 | m) for n, d, m in TREE]
    entries.append(("tool-1.0/lib/libx.so", b"libx.so.1", 0o120777))
    archive = write_zip(tmp_path / "a.zip", entries)
    report = extract(archive, tmp_path / "out", F.ZIP)
    check_tree(tmp_path / "out")
    assert os.readlink(tmp_path / "out/tool-1.0/lib/libx.so") == "libx.so.1"
    assert report.executables == ("tool-1.0/bin/tool",)


def test_zip_without_unix_modes(tmp_path: Path) -> None:
    archive = write_zip(tmp_path / "a.zip", [("dir/", b"", 0), ("dir/tool", b"x", 0)])
    report = extract(archive, tmp_path / "out", F.ZIP)
    assert report.files == ("dir/tool",)
    assert stat.S_IMODE((tmp_path / "out/dir/tool").stat().st_mode) == 0o644


def test_strip_dirs(tmp_path: Path) -> None:
    archive = write_tar(tmp_path / "a.tar.gz", tree_members())
    report = extract(archive, tmp_path / "out", F.TAR_GZ, strip_dirs=1)
    out = tmp_path / "out"
    assert (out / "bin/tool").read_bytes() == b"\x7fELF binary"
    assert (out / "bin/tool-alias").read_bytes() == b"\x7fELF binary"  # link target stripped too
    assert (out / "bin/libx").read_bytes() == b"lib"
    assert not (out / "tool-1.0").exists()
    assert report.skipped == 1  # the top directory itself


def test_strip_dirs_skips_short_entries(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "a.tar.gz",
        [member("a/b/c", b"deep"), member("a/top", b"short"), member("root", b"shorter")],
    )
    report = extract(archive, tmp_path / "out", F.TAR_GZ, strip_dirs=2)
    assert report.files == ("c",)
    assert report.skipped == 2


def test_strip_dirs_turns_inner_link_into_escape(tmp_path: Path) -> None:
    # With the top dir stripped, a link that climbed into it now climbs out of dest.
    archive = write_tar(
        tmp_path / "a.tar.gz",
        [member("top/bin/x", type=tarfile.SYMTYPE, linkname="../../top/lib/x")],
    )
    extract(archive, tmp_path / "ok", F.TAR_GZ)
    with pytest.raises(UnsafeArchive, match="escapes"):
        extract(archive, tmp_path / "stripped", F.TAR_GZ, strip_dirs=1)


def test_exec_bits_kept_and_setuid_dropped(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "a.tar",
        [
            member("suid", b"x", mode=0o4755),
            member("sgid", b"x", mode=0o2750),
            member("world", b"x", mode=0o666),
            member("owner-exec", b"x", mode=0o700),
            member("dir", type=tarfile.DIRTYPE, mode=0o777 | stat.S_ISVTX),
        ],
        F.TAR,
    )
    extract(archive, tmp_path / "out", F.TAR)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in (tmp_path / "out").iterdir()}
    assert modes["suid"] == 0o755
    assert modes["sgid"] == 0o755
    assert modes["world"] == 0o644
    assert modes["owner-exec"] == 0o755
    assert not modes["dir"] & (stat.S_ISVTX | 0o002)


def test_duplicate_entries_last_wins(tmp_path: Path) -> None:
    archive = write_tar(
        tmp_path / "a.tar",
        [
            member("f", b"one"),
            member("f", b"two"),
            member("l", type=tarfile.SYMTYPE, linkname="f"),
            member("l", b"file now"),
        ],
        F.TAR,
    )
    report = extract(archive, tmp_path / "out", F.TAR)
    assert (tmp_path / "out/f").read_bytes() == b"two"
    assert not (tmp_path / "out/l").is_symlink()
    assert report.symlinks == ()


@pytest.mark.parametrize("fmt", [F.GZ, F.XZ, F.BZ2, F.ZST])
def test_single_compressed_file(tmp_path: Path, fmt: ArchiveFormat) -> None:
    archive = tmp_path / f"tool-linux-amd64.{fmt.value}"
    archive.write_bytes(compress(b"\x7fELF...", fmt))
    report = extract(archive, tmp_path / "out", fmt)
    assert report.files == ("tool-linux-amd64",)
    out = tmp_path / "out/tool-linux-amd64"
    assert out.read_bytes() == b"\x7fELF..."
    assert stat.S_IMODE(out.stat().st_mode) == 0o755


def test_raw_binary_copy(tmp_path: Path) -> None:
    archive = tmp_path / "k3d-linux-amd64"
    archive.write_bytes(b"\x7fELF raw")
    report = extract(archive, tmp_path / "out", F.RAW, name="k3d")
    assert report.files == ("k3d",) and report.executables == ("k3d",)
    assert stat.S_IMODE((tmp_path / "out/k3d").stat().st_mode) == 0o755
    assert archive.read_bytes() == b"\x7fELF raw"


def test_raw_binary_name_is_checked(tmp_path: Path) -> None:
    archive = tmp_path / "k3d"
    archive.write_bytes(b"x")
    with pytest.raises(UnsafeArchive):
        extract(archive, tmp_path / "out", F.RAW, name="../k3d")


def test_raw_binary_size_limit(tmp_path: Path) -> None:
    archive = tmp_path / "big"
    archive.write_bytes(b"x" * 10_000)
    with pytest.raises(ArchiveLimitExceeded):
        extract(archive, tmp_path / "out", F.RAW, limits=ExtractLimits(max_entry_bytes=4096))
