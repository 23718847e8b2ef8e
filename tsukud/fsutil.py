"""Writing files so that no reader ever sees half of one.

Stdlib only (the shell-hook index writer and the CLI may use it). A temporary file in
the same directory, fsynced, then renamed over the target: a reader sees the old file or
the new one whole, and a crash leaves at worst a stray ``.name.*`` temp file, never a
truncated target. The directory is fsynced too, so the rename itself survives a crash.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def write_atomic(
    path: str | Path, data: bytes | str, *, mode: int = 0o644, mtime: float | None = None
) -> None:
    """Write ``data`` whole. ``mtime`` stamps the file with a time from the caller's
    clock, so a cache judging freshness by :func:`fresh` never mixes two clocks."""
    path = os.fspath(path)
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode("utf-8") if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        if mtime is not None:
            os.utime(tmp, (mtime, mtime))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
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
