"""One preparation at a time on this machine: a ``flock`` on a file under /tmp.

Under pytest-xdist every worker runs the session fixtures of the tests it was given
(the validation images, for one), and two test runs may share a machine (a developer's
and a hook's). Work that changes machine-wide state (building a Docker image) or that
is expensive and cached somewhere shared runs inside :func:`exclusive`; whoever comes
second waits, then finds the work done and only checks it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Iterator
from pathlib import Path

LOCK_DIR = Path("/tmp") / f"tsuku-test-locks-{os.getuid()}"


@contextlib.contextmanager
def exclusive(name: str) -> Iterator[None]:
    """Hold the machine-wide lock called ``name`` (a Docker image name, say)."""
    LOCK_DIR.mkdir(mode=0o700, exist_ok=True)
    path = LOCK_DIR / (re.sub(r"[^A-Za-z0-9_.-]", "_", name) + ".lock")
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
