"""A machine without network: an install names what it could not reach, at once.

Every outside endpoint of the test daemon is a loopback port nothing listens on (tests/
conftest.py ``base_env``), as for a person offline whose settings point at the real
services: no retry changes that, so ``install --from`` fails in well under the ~14 s
its two URLs' retries took, with ``network_unreachable`` and the offline hint."""

from __future__ import annotations

import time

from tests.conftest import Tsuku
from tsukud.errors import ExitCode


def test_an_offline_install_from_a_source_fails_at_once_with_the_offline_hint(
    daemon: Tsuku,
) -> None:
    started = time.monotonic()
    cp = daemon.ctl("install", "ripgrep", "--from", "github:BurntSushi/ripgrep", "--yes")
    took = time.monotonic() - started
    assert cp.returncode == ExitCode.NETWORK, cp.stderr
    assert "Offline? The GitHub API http://127.0.0.1:9 cannot be reached" in cp.stderr
    assert took < 3.0  # retried, the refused port cost about 7 s per URL
