"""Waiting for a condition instead of sleeping for a guess: a test that waits for what
it needs is as fast as the machine allows and no flakier when the machine is slow."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_until(ready: Callable[[], object], what: str, timeout: float = 30.0) -> None:
    """Poll ``ready`` every 20 ms until it is true; fail naming ``what`` after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.02)
