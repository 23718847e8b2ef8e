"""Writing files so that no reader ever sees half of one.

Stdlib only (the shell-hook index writer and the CLI may use it). A temporary file in
the same directory, fsynced, then renamed over the target: a reader sees the old file or
the new one whole, and a crash leaves at worst a stray ``.name.*`` temp file, never a
truncated target. The directory is fsynced too, so the rename itself survives a crash.

A full disk is reported as such (``DiskFull``, with the path and the space left), never
as an unexplained ``OSError``: the user can do something about it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile

from tsukud.errors import DiskFull

#: errno values that mean "no room": the disk, or this user's quota on it.
NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def free_bytes(path: str | Path) -> int | None:
    """Space left for this user on the filesystem holding ``path`` (None if unknown)."""
    p = os.fspath(path)
    while p and not os.path.exists(p):
        p = os.path.dirname(p)
    try:
        st = os.statvfs(p or ".")
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


#: Below this much free space a write failure is taken for a full disk even when it
#: does not say ENOSPC (SQLite reports a failed ``-shm`` growth as an I/O error).
NEARLY_FULL = 1 << 20


def nearly_full(path: str | Path) -> bool:
    free = free_bytes(path)
    return free is not None and free < NEARLY_FULL


def _size(n: int) -> str:
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def disk_full(
    path: str | Path,
    what: str,
    *,
    then: str = "tsuku resumes by itself, and nothing it acknowledged was lost.",
) -> DiskFull:
    """The error for a write to ``path`` that found no space, with the space left now.
    ``then`` says what happens once there is space (an install must be run again)."""
    free = free_bytes(path)
    left = "unknown" if free is None else _size(free)
    return DiskFull(
        f"{what}: no space left on the disk holding {os.fspath(path)}",
        hint=f"Free some space there ({left} free now); {then}",
        path=os.fspath(path),
        free_bytes=free,
    )


def write_atomic(
    path: str | Path,
    data: bytes | str,
    *,
    mode: int = 0o644,
    mtime: float | None = None,
    sync: bool = True,
) -> None:
    """Write ``data`` whole. ``mtime`` stamps the file with a time from the caller's
    clock, so a cache judging freshness by :func:`fresh` never mixes two clocks.

    ``sync=False`` skips both fsyncs: readers still see the old file or the new one,
    but after a power failure the file may be the old one, or empty. For files that may
    lag behind and are written often."""
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    try:
        _write_atomic(path, directory, data, mode, mtime, sync)
    except OSError as e:
        if e.errno in NO_SPACE:
            raise disk_full(path, f"cannot write {os.path.basename(path)}") from e
        raise


def _write_atomic(
    path: str, directory: str, data: bytes | str, mode: int, mtime: float | None, sync: bool
) -> None:
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            if sync:
                os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if not sync:
        return
    with contextlib.suppress(OSError):
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def fresh(path: str | Path, now: float, ttl: float) -> bool:
    """Whether ``path`` exists and was written less than ``ttl`` seconds before ``now``
    (both on the clock that stamped it through ``write_atomic(mtime=)``)."""
    try:
        return now - os.stat(path).st_mtime < ttl
    except OSError:
        return False
