"""Unpack downloaded release assets without trusting them.

Shared by the installer and container validation, and the only code that turns archive
bytes into files. The archive is hostile until proven otherwise, so:

* ``dest`` must be a fresh, private staging directory (created if missing, refused if
  not empty). Nothing is ever written outside it; on any error the caller deletes it.
  No other process may write into it while we work (we check paths, then act on them).
* Entry names with ``..``, absolute paths, backslashes or NUL are refused, also once
  ``strip_dirs`` has been applied. Parent directories are created by us and must not be
  symlinks, files are created with ``O_EXCL | O_NOFOLLOW``: no write follows a link.
* Symlinks must resolve inside ``dest``, following links extracted before them, and all
  of them are re-checked once the archive is done (a later link can change where an
  earlier one leads). Hard links become copies of files extracted earlier.
* Devices, FIFOs and other special entries are refused.
* Modes are normalised to 0755 (any exec bit set) or 0644: no setuid, setgid, sticky or
  world-writable bits survive.
* Limits on entry count, bytes per entry, total bytes and compression ratio are checked
  against the bytes actually produced while streaming, never against header claims.
"""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import lzma
import os
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, cast

import msgspec
import zstandard

from tsukud.errors import TsukuError
from tsukud.fsutil import NO_SPACE
from tsukud.install.errors import no_space
from tsukud.recipe.model import ArchiveFormat

CHUNK = 64 * 1024
_MAX_LINK_TARGET = 4096
_MAX_LINK_HOPS = 40
_ZIP_UNIX = 3
_MACHO_MAGICS = (b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xce\xfa\xed\xfe", b"\xcf\xfa\xed\xfe")


class ExtractError(TsukuError):
    code = "extract_failed"


class CorruptArchive(ExtractError):
    code = "archive_corrupt"


class UnsafeArchive(ExtractError):
    code = "archive_unsafe"


class ArchiveLimitExceeded(UnsafeArchive):
    code = "archive_limit_exceeded"


class ExtractLimits(msgspec.Struct, frozen=True, kw_only=True):
    """Ceilings on what one archive may produce.

    The ratio limit only applies above ``ratio_floor_bytes``, so small, very compressible
    archives (scripts, docs) are fine while a bomb is stopped after ``ratio * size`` bytes.
    """

    max_entries: int = 10_000
    max_entry_bytes: int = 1024**3
    max_total_bytes: int = 4 * 1024**3
    max_ratio: int = 200
    ratio_floor_bytes: int = 64 * 1024**2


class ArchiveEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One entry as stored in the archive (names are not normalised)."""

    name: str
    kind: str  # file | dir | symlink | hardlink | other
    size: int
    mode: int
    is_executable: bool
    magic: str | None = None  # elf | macho | pe, from the first bytes of a file
    link_target: str | None = None


class ExtractReport(msgspec.Struct, frozen=True, kw_only=True):
    """What landed in ``dest``; paths are relative to it, ``/``-separated."""

    dest: str
    files: tuple[str, ...]
    directories: tuple[str, ...]
    symlinks: tuple[str, ...]
    executables: tuple[str, ...]
    entries: int
    skipped: int
    bytes_written: int


# ------------------------------------------------------------------------- budgets


class _Budget:
    """Counts bytes actually produced and stops the moment a limit is passed."""

    def __init__(self, limit: int, reason: str) -> None:
        self.limit = limit
        self.reason = reason
        self.used = 0

    def spend(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise ArchiveLimitExceeded(self.reason, limit=self.limit)


def _total_budget(limits: ExtractLimits, compressed_size: int, label: str) -> _Budget:
    ratio_cap = max(limits.ratio_floor_bytes, compressed_size * limits.max_ratio)
    if ratio_cap < limits.max_total_bytes:
        return _Budget(
            ratio_cap,
            f"{label}: expands past {ratio_cap} bytes from {compressed_size} compressed bytes "
            f"(compression ratio limit {limits.max_ratio}:1)",
        )
    return _Budget(
        limits.max_total_bytes,
        f"{label}: uncompressed size exceeds the {limits.max_total_bytes}-byte limit",
    )


class _Counted:
    """A read-only stream that charges every byte it yields to a budget."""

    def __init__(self, inner: IO[bytes], budget: _Budget) -> None:
        self._inner = inner
        self._budget = budget

    def read(self, size: int = -1) -> bytes:
        if size is not None and size >= 0:
            data = self._inner.read(size)
            self._budget.spend(len(data))
            return data
        parts = []
        while chunk := self._inner.read(CHUNK):
            self._budget.spend(len(chunk))
            parts.append(chunk)
        return b"".join(parts)


def _decompressor(raw: IO[bytes], fmt: ArchiveFormat) -> IO[bytes]:
    if fmt in (ArchiveFormat.TAR_GZ, ArchiveFormat.GZ):
        return cast(IO[bytes], gzip.GzipFile(fileobj=raw, mode="rb"))
    if fmt in (ArchiveFormat.TAR_XZ, ArchiveFormat.XZ):
        return cast(IO[bytes], lzma.LZMAFile(raw))
    if fmt in (ArchiveFormat.TAR_BZ2, ArchiveFormat.BZ2):
        return cast(IO[bytes], bz2.BZ2File(raw))
    if fmt in (ArchiveFormat.TAR_ZST, ArchiveFormat.ZST):
        reader = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
        return cast(IO[bytes], reader)
    return raw


# Everything a malformed archive can raise from the stdlib decoders and zstandard.
_DECODE_ERRORS = (
    tarfile.TarError,
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    EOFError,
    zlib.error,
    lzma.LZMAError,
    zstandard.ZstdError,
    OSError,
    ValueError,
    RuntimeError,
    NotImplementedError,
    UnicodeDecodeError,
)


# ------------------------------------------------------------------------- names


def _components(name: str, what: str) -> list[str]:
    if "\x00" in name:
        raise UnsafeArchive(f"{what} {name!r} contains a NUL byte")
    if "\\" in name:
        raise UnsafeArchive(f"{what} {name!r} contains a backslash")
    if name.startswith("/"):
        raise UnsafeArchive(f"{what} {name!r} is an absolute path")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{what} {name!r} escapes the destination ('..' in its path)")
    return parts


def _magic(head: bytes) -> str | None:
    if head.startswith(b"\x7fELF"):
        return "elf"
    if head[:4] in _MACHO_MAGICS:
        return "macho"
    # Universal Mach-O shares CAFEBABE with Java classes; their next word is an arch
    # count (small) for Mach-O and a class-file version (>= 45) for Java.
    if head[:4] == b"\xca\xfe\xba\xbe" and 0 < int.from_bytes(head[4:8], "big") < 30:
        return "macho"
    if head.startswith(b"MZ"):
        return "pe"
    return None


class _DecodeError(Exception):
    """A decoder failure while reading entry data, kept apart from the writer's own
    OSErrors (gzip and bz2 report bad data as OSError too)."""


def _chunks(read: Callable[[int], bytes]) -> Iterator[bytes]:
    while True:
        try:
            chunk = read(CHUNK)
        except TsukuError:
            raise
        except _DECODE_ERRORS as exc:
            raise _DecodeError(str(exc)) from exc
        if not chunk:
            return
        yield chunk


@contextlib.contextmanager
def _fs(name: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        if exc.errno in NO_SPACE:
            raise  # extract() reports it as a full disk, with the directory
        raise ExtractError(f"cannot write entry {name!r}: {exc}") from exc


# ------------------------------------------------------------------------- writer


class _Writer:
    """Places entries under ``root``; every safety rule is enforced here, once."""

    def __init__(self, root: Path, limits: ExtractLimits, budget: _Budget, strip: int) -> None:
        self.root = root
        self.limits = limits
        self.budget = budget
        self.strip = strip
        self.files: dict[str, bool] = {}  # rel path → executable
        self.dirs: set[str] = set()
        self.links: dict[str, str] = {}  # rel path → target
        self.entries = 0
        self.skipped = 0

    def begin(self, name: str) -> list[str] | None:
        """Count the entry and check its name; ``None`` if ``strip_dirs`` drops it."""
        self.entries += 1
        if self.entries > self.limits.max_entries:
            raise ArchiveLimitExceeded(
                f"archive has more than {self.limits.max_entries} entries",
                limit=self.limits.max_entries,
            )
        parts = _components(name, "entry")
        if len(parts) <= self.strip:
            self.skipped += 1
            return None
        return parts[self.strip :]

    def _parents(self, parts: list[str], name: str) -> Path:
        current = self.root
        for depth, part in enumerate(parts[:-1], start=1):
            current = current / part
            try:
                st = os.lstat(current)
            except FileNotFoundError:
                os.mkdir(current, 0o755)
                self.dirs.add("/".join(parts[:depth]))
                continue
            if stat.S_ISLNK(st.st_mode):
                raise UnsafeArchive(
                    f"entry {name!r} passes through the symlink {'/'.join(parts[:depth])!r}"
                )
            if not stat.S_ISDIR(st.st_mode):
                raise CorruptArchive(
                    f"entry {name!r} needs {'/'.join(parts[:depth])!r} to be a directory"
                )
        return current / parts[-1]

    def _clear(self, path: Path, rel: str, name: str) -> bool:
        """Make room for a new entry at ``path``; True if a directory already stands there."""
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return False
        if stat.S_ISDIR(st.st_mode):
            return True
        os.unlink(path)  # a file or a symlink; unlink never follows
        self.files.pop(rel, None)
        self.links.pop(rel, None)
        return False

    def directory(self, name: str) -> None:
        parts = self.begin(name)
        if parts is None:
            return
        rel = "/".join(parts)
        with _fs(name):
            path = self._parents(parts, name)
            if not self._clear(path, rel, name):
                os.mkdir(path, 0o755)
        self.dirs.add(rel)

    def file(
        self, name: str, mode: int, data: Iterator[bytes], declared: int | None = None
    ) -> None:
        parts = self.begin(name)
        if parts is not None:
            self._write(parts, name, mode, data, declared)

    def _write(
        self, parts: list[str], name: str, mode: int, data: Iterator[bytes], declared: int | None
    ) -> None:
        limit = self.limits.max_entry_bytes
        if declared is not None and declared > limit:
            raise ArchiveLimitExceeded(
                f"entry {name!r} is {declared} bytes, over the {limit}-byte limit"
            )
        rel = "/".join(parts)
        with _fs(name):
            path = self._parents(parts, name)
            if self._clear(path, rel, name):
                raise CorruptArchive(f"entry {name!r} would replace a directory")
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            out = os.fdopen(os.open(path, flags, 0o600), "wb")
        executable = bool(mode & 0o111)
        with out, _fs(name):
            written = 0
            for chunk in data:
                written += len(chunk)
                if written > limit:
                    raise ArchiveLimitExceeded(f"entry {name!r} is over the {limit}-byte limit")
                self.budget.spend(len(chunk))
                out.write(chunk)
            os.fchmod(out.fileno(), 0o755 if executable else 0o644)
        self.files[rel] = executable

    def symlink(self, name: str, target: str) -> None:
        parts = self.begin(name)
        if parts is None:
            return
        if not target or "\x00" in target:
            raise CorruptArchive(f"symlink {name!r} has an empty or invalid target")
        if target.startswith("/"):
            raise UnsafeArchive(f"symlink {name!r} points to the absolute path {target!r}")
        rel = "/".join(parts)
        with _fs(name):
            path = self._parents(parts, name)
            why = self._escape(parts[:-1], target)
            if why is not None:
                raise UnsafeArchive(f"symlink {name!r} -> {target!r} {why}")
            if self._clear(path, rel, name):
                raise CorruptArchive(f"symlink {name!r} would replace a directory")
            os.symlink(target, path)
        self.links[rel] = target

    def hardlink(self, name: str, target: str, mode: int) -> None:
        parts = self.begin(name)
        if parts is None:
            return
        target_parts = _components(target, f"hard link {name!r} target")
        source = "/".join(target_parts[self.strip :]) if len(target_parts) > self.strip else None
        if source is None or source not in self.files:
            raise UnsafeArchive(
                f"hard link {name!r} points to {target!r}, which is not a file extracted before it"
            )
        if source == "/".join(parts):
            return
        executable = self.files[source] or bool(mode & 0o111)
        with _fs(name):
            fd = os.open(self.root / source, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as src:
            self._write(parts, name, 0o755 if executable else 0o644, _chunks(src.read), None)

    def reject(self, name: str, what: str) -> None:
        self.begin(name)
        raise UnsafeArchive(f"entry {name!r} is a {what}: special files are not allowed")

    def _escape(self, base: list[str], target: str) -> str | None:
        """Resolve ``target`` from directory ``base`` as the kernel would, following the
        symlinks already on disk; ``None`` if every step stays under root, else why not."""
        stack = list(base)
        pending = list(reversed(target.split("/")))
        hops = 0
        while pending:
            part = pending.pop()
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    return "escapes the destination"
                stack.pop()
                continue
            stack.append(part)
            here = self.root.joinpath(*stack)
            try:
                st = os.lstat(here)
            except (FileNotFoundError, NotADirectoryError):
                continue  # dangling so far: the rest resolves lexically
            if stat.S_ISLNK(st.st_mode):
                hops += 1
                if hops > _MAX_LINK_HOPS:
                    return "is a symlink loop"
                link = os.readlink(here)
                if link.startswith("/"):
                    return f"reaches the absolute path {link!r}"
                stack.pop()
                pending.extend(reversed(link.split("/")))
        return None

    def finish(self) -> ExtractReport:
        # A later link can change where an earlier one leads: judge the final tree.
        for rel, target in self.links.items():
            why = self._escape(rel.split("/")[:-1], target)
            if why is not None:
                raise UnsafeArchive(
                    f"symlink {rel!r} -> {target!r} {why} (through other links in the archive)"
                )
        return ExtractReport(
            dest=str(self.root),
            files=tuple(sorted(self.files)),
            directories=tuple(sorted(self.dirs)),
            symlinks=tuple(sorted(self.links)),
            executables=tuple(sorted(rel for rel, ex in self.files.items() if ex)),
            entries=self.entries,
            skipped=self.skipped,
            bytes_written=self.budget.used,
        )


# ------------------------------------------------------------------------ formats


def _extract_tar(
    archive: Path, fmt: ArchiveFormat, writer: _Writer, stream_budget: _Budget
) -> None:
    with archive.open("rb") as raw, _decompressor(raw, fmt) as plain:
        stream = cast(IO[bytes], _Counted(plain, stream_budget))
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                name = member.name
                if member.isreg():
                    reader = tar.extractfile(member)
                    if reader is None:  # pragma: no cover - isreg() members always have data
                        raise CorruptArchive(f"entry {name!r} has no data")
                    writer.file(name, member.mode, _chunks(reader.read), member.size)
                elif member.isdir():
                    writer.directory(name)
                elif member.issym():
                    writer.symlink(name, member.linkname)
                elif member.islnk():
                    writer.hardlink(name, member.linkname, member.mode)
                elif member.ischr() or member.isblk():
                    writer.reject(name, "device node")
                elif member.isfifo():
                    writer.reject(name, "FIFO")
                else:
                    writer.reject(name, f"special entry (tar type {member.type!r})")


def _zip_mode(info: zipfile.ZipInfo) -> int:
    return (info.external_attr >> 16) if info.create_system == _ZIP_UNIX else 0


def _extract_zip(archive: Path, writer: _Writer) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        if len(infos) > writer.limits.max_entries:
            raise ArchiveLimitExceeded(
                f"archive has {len(infos)} entries, over the limit of {writer.limits.max_entries}",
                limit=writer.limits.max_entries,
            )
        for info in infos:
            mode = _zip_mode(info)
            kind = stat.S_IFMT(mode)
            name = info.filename
            if kind == stat.S_IFLNK:
                with zf.open(info) as f:
                    raw_target = f.read(_MAX_LINK_TARGET + 1)
                if len(raw_target) > _MAX_LINK_TARGET:
                    raise CorruptArchive(f"symlink {name!r} has an oversized target")
                writer.symlink(name, raw_target.decode("utf-8"))
            elif kind == stat.S_IFDIR or (kind == 0 and info.is_dir()):
                writer.directory(name)
            elif kind in (stat.S_IFCHR, stat.S_IFBLK):
                writer.reject(name, "device node")
            elif kind in (stat.S_IFIFO, stat.S_IFSOCK):
                writer.reject(name, "FIFO or socket")
            elif kind in (0, stat.S_IFREG):
                with zf.open(info) as f:
                    writer.file(name, mode, _chunks(f.read), info.file_size)
            else:
                writer.reject(name, f"special entry (mode {oct(mode)})")


_SINGLE_SUFFIXES = {
    ArchiveFormat.GZ: ".gz",
    ArchiveFormat.XZ: ".xz",
    ArchiveFormat.BZ2: ".bz2",
    ArchiveFormat.ZST: ".zst",
}


def _single_name(archive_name: str, fmt: ArchiveFormat, name: str | None) -> str:
    if name is not None:
        return name
    suffix = _SINGLE_SUFFIXES.get(fmt, "")
    if suffix and archive_name.lower().endswith(suffix) and len(archive_name) > len(suffix):
        return archive_name[: -len(suffix)]
    return archive_name


def _prepare(dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ExtractError(
            f"{dest} is not empty: extract into a fresh staging directory",
            hint="This is a bug in the caller: each extraction needs its own new directory.",
        )
    return Path(os.path.realpath(dest))


def extract(
    archive: Path,
    dest: Path,
    fmt: ArchiveFormat,
    *,
    strip_dirs: int = 0,
    limits: ExtractLimits = ExtractLimits(),  # noqa: B008 - frozen, safe to share
    name: str | None = None,
    size: int | None = None,
) -> ExtractReport:
    """Unpack ``archive`` into the fresh staging directory ``dest``.

    ``strip_dirs`` drops that many leading path components (entries with no more
    components than that are skipped, as in the reference). Raw binaries and single
    compressed files (``tool.gz``) become one executable file named ``name`` (default:
    the archive's name without the compression suffix). On any error ``dest`` may hold
    partial output and must be deleted by the caller; nothing outside it was touched.
    ``size``: the archive's size when ``archive`` is a stream still arriving (its file
    has no size yet); the compression-ratio limit and its message use it.
    """
    fmt = ArchiveFormat(fmt)
    if strip_dirs < 0:
        raise ValueError("strip_dirs must be >= 0")
    archive = Path(archive)
    root = _prepare(Path(dest))
    size = archive.stat().st_size if size is None else size
    label = archive.name
    try:
        if fmt is ArchiveFormat.RAW or fmt.is_single_file:
            cap = min(limits.max_entry_bytes, limits.max_total_bytes)
            budget = (
                _Budget(cap, f"{label}: larger than the {cap}-byte limit")
                if fmt is ArchiveFormat.RAW
                else _total_budget(limits, size, label)
            )
            writer = _Writer(root, limits, budget, 0)
            out_name = _single_name(archive.name, fmt, name)
            with archive.open("rb") as raw, _decompressor(raw, fmt) as plain:
                writer.file(out_name, 0o755, _chunks(plain.read))
        elif fmt.is_tar:
            writer = _Writer(root, limits, _total_budget(limits, size, label), strip_dirs)
            _extract_tar(archive, fmt, writer, _total_budget(limits, size, label))
        else:
            writer = _Writer(root, limits, _total_budget(limits, size, label), strip_dirs)
            _extract_zip(archive, writer)
        return writer.finish()
    except TsukuError:
        raise
    except (_DecodeError, *_DECODE_ERRORS) as exc:
        full = no_space(exc, root, f"cannot unpack {label}")
        if full is not None:
            raise full from exc
        raise CorruptArchive(f"{label}: cannot unpack as {fmt.value}: {exc}") from exc


# ------------------------------------------------------------------------ listing


def _entry(
    name: str, kind: str, size: int, mode: int, head: bytes = b"", link: str | None = None
) -> ArchiveEntry:
    magic = _magic(head) if kind == "file" else None
    executable = kind == "file" and (bool(mode & 0o111) or magic is not None)
    return ArchiveEntry(
        name=name,
        kind=kind,
        size=size,
        mode=stat.S_IMODE(mode),
        is_executable=executable,
        magic=magic,
        link_target=link,
    )


def _tar_kind(member: tarfile.TarInfo) -> str:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    return "other"


def _list_tar(
    raw: IO[bytes], fmt: ArchiveFormat, limits: ExtractLimits, budget: _Budget
) -> list[ArchiveEntry]:
    out: list[ArchiveEntry] = []
    with _decompressor(raw, fmt) as plain:
        stream = cast(IO[bytes], _Counted(plain, budget))
        with tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                if len(out) >= limits.max_entries:
                    raise ArchiveLimitExceeded(
                        f"archive has more than {limits.max_entries} entries"
                    )
                kind = _tar_kind(member)
                head = b""
                if kind == "file":
                    reader = tar.extractfile(member)
                    head = reader.read(8) if reader is not None else b""
                link = member.linkname if kind in ("symlink", "hardlink") else None
                out.append(_entry(member.name, kind, member.size, member.mode, head, link))
    return out


def _list_zip(raw: IO[bytes], limits: ExtractLimits) -> list[ArchiveEntry]:
    out: list[ArchiveEntry] = []
    with zipfile.ZipFile(raw) as zf:
        infos = zf.infolist()
        if len(infos) > limits.max_entries:
            raise ArchiveLimitExceeded(
                f"archive has {len(infos)} entries, over the limit of {limits.max_entries}"
            )
        for info in infos:
            mode = _zip_mode(info)
            kind_bits = stat.S_IFMT(mode)
            if kind_bits == stat.S_IFLNK:
                with zf.open(info) as f:
                    target = f.read(_MAX_LINK_TARGET).decode("utf-8", "replace")
                out.append(_entry(info.filename, "symlink", info.file_size, mode, link=target))
            elif kind_bits == stat.S_IFDIR or (kind_bits == 0 and info.is_dir()):
                out.append(_entry(info.filename, "dir", 0, mode))
            elif kind_bits in (0, stat.S_IFREG):
                with zf.open(info) as f:
                    head = f.read(8)
                out.append(_entry(info.filename, "file", info.file_size, mode, head))
            else:
                out.append(_entry(info.filename, "other", info.file_size, mode))
    return out


def list_entries(
    archive: Path | bytes,
    fmt: ArchiveFormat,
    limits: ExtractLimits = ExtractLimits(),  # noqa: B008 - frozen, safe to share
    *,
    name: str | None = None,
) -> list[ArchiveEntry]:
    """List an archive's entries without writing anything to disk.

    For ``inspect_archive``: sizes are the archive's own claims (tar headers, zip
    directory), executability comes from mode bits and ELF/Mach-O/PE magic. Decompressed
    bytes are still counted against the limits so a bomb cannot pin a CPU. ``name``
    labels raw and single-file assets given as bytes.
    """
    fmt = ArchiveFormat(fmt)
    if isinstance(archive, bytes | bytearray):
        label = name or "archive"
        size = len(archive)
        raw: IO[bytes] = io.BytesIO(archive)
    else:
        archive = Path(archive)
        label = name or archive.name
        size = archive.stat().st_size
        raw = archive.open("rb")
    budget = _total_budget(limits, size, label)
    try:
        with raw:
            if fmt.is_tar:
                return _list_tar(raw, fmt, limits, budget)
            if fmt is ArchiveFormat.ZIP:
                return _list_zip(raw, limits)
            with _decompressor(raw, fmt) as plain:
                stream = _Counted(plain, budget)
                head = stream.read(8)
                total = len(head)
                while chunk := stream.read(CHUNK):
                    total += len(chunk)
            # A raw asset has no stored mode: only its magic says whether it runs.
            return [_entry(_single_name(label, fmt, None), "file", total, 0o644, head)]
    except TsukuError:
        raise
    except (_DecodeError, *_DECODE_ERRORS) as exc:
        raise CorruptArchive(f"{label}: cannot read as {fmt.value}: {exc}") from exc


# ------------------------------------------------------------------------ reading


def read_files(
    archive: bytes,
    fmt: ArchiveFormat,
    wanted: Callable[[list[str]], bool],
    *,
    max_file_bytes: int,
    limits: ExtractLimits = ExtractLimits(),  # noqa: B008 - frozen, safe to share
    name: str = "archive",
) -> dict[str, bytes]:
    """The regular files of a tar archive (given as bytes) whose path components
    ``wanted`` accepts, read into memory: nothing is written anywhere. For reading a
    package's metadata (a CPAN distribution's ``META.json``) without unpacking it.

    The archive is as hostile here as in :func:`extract`: every entry's name is checked
    (``..``, absolute, backslash, NUL are :class:`UnsafeArchive`), the entry count and
    the decompressed bytes (ratio and total) are charged as they are produced, and a
    wanted file larger than ``max_file_bytes`` is :class:`ArchiveLimitExceeded`.
    Links and special entries are never followed or read. Keys are the entry's
    components joined by ``/``; a name given twice is refused (which one a reader
    would take is not for the archive to decide)."""
    fmt = ArchiveFormat(fmt)
    if not fmt.is_tar:
        raise ValueError(f"read_files reads tar archives, not {fmt.value}")
    budget = _total_budget(limits, len(archive), name)
    out: dict[str, bytes] = {}
    entries = 0
    try:
        with _decompressor(io.BytesIO(archive), fmt) as plain:
            stream = cast(IO[bytes], _Counted(plain, budget))
            with tarfile.open(fileobj=stream, mode="r|") as tar:
                for member in tar:
                    entries += 1
                    if entries > limits.max_entries:
                        raise ArchiveLimitExceeded(
                            f"{name}: more than {limits.max_entries} entries",
                            limit=limits.max_entries,
                        )
                    parts = _components(member.name, "entry")
                    if not member.isreg() or not wanted(parts):
                        continue
                    key = "/".join(parts)
                    if key in out:
                        raise UnsafeArchive(f"{name}: entry {key!r} is given twice")
                    if member.size > max_file_bytes:
                        raise ArchiveLimitExceeded(
                            f"{name}: {key} is larger than the {max_file_bytes}-byte limit",
                            limit=max_file_bytes,
                        )
                    reader = tar.extractfile(member)
                    data = reader.read(max_file_bytes + 1) if reader is not None else b""
                    if len(data) > max_file_bytes:  # pragma: no cover - the header said less
                        raise ArchiveLimitExceeded(
                            f"{name}: {key} is larger than the {max_file_bytes}-byte limit",
                            limit=max_file_bytes,
                        )
                    out[key] = data
    except TsukuError:
        raise
    except (_DecodeError, *_DECODE_ERRORS) as exc:
        raise CorruptArchive(f"{name}: cannot read as {fmt.value}: {exc}") from exc
    return out
