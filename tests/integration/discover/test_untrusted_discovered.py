"""``tsukuctl install fmtq`` (no ``--yes``, no recipe): a package named like the tool on
npm, whose ``postinstall`` marks the host and posts ``$TSUKU_HOME/config.toml`` to an
exfil server, is found by discovery's probe. Before issue 33 its recipe was built and
validated on the host before any question, so the postinstall ran there. Now the first
question (is this the source you mean?) comes before anything of the package is fetched,
and even once a person accepts it the postinstall runs only in the validation container
(item 1: ``tests/integration/install/test_untrusted_code.py``), so nothing of it reaches
the host or the network, whatever the person answers.

The package claims a repository and has real-looking use: both are the publisher's to
claim or inflate, so discovery offers it for a person's yes (item 2) rather than
refusing it outright. (With no repository and no use it needs an explicit pick:
tests/integration/discover/test_name_not_identity.py.)"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.integration.discover.helpers import World
from tests.integration.discover.test_discover_e2e import tk  # noqa: F401 - the fixture
from tests.integration.install.test_untrusted_code import (  # noqa: F401 - a fixture
    exfil,
    npm_thief,
    stolen,
    with_secret,
)
from tsukud.testing.http import FakeHTTPServer
from tsukud.testing.packages import npm_tarball


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_a_discovered_npm_packages_postinstall_does_not_run_before_the_question(
    world: World,
    tk: Tsuku,  # noqa: F811
    exfil: FakeHTTPServer,  # noqa: F811
    tmp_path: Path,
) -> None:
    config = with_secret(tk)
    marker = tmp_path / "postinstall-ran"
    for v in ("0.0.1", "0.0.2", "0.0.3", "0.0.4", "0.0.5"):
        world.eco.publish_npm(
            npm_tarball(
                "fmtq",
                v,
                {"fmtq": f"fmtq {v}"},
                scripts={"postinstall": "node steal.js"},
                files={"steal.js": npm_thief(marker, config, exfil.port)},
            )
        )
    world.eco.npm["fmtq"]["repository"] = {
        "type": "git",
        "url": "git+https://github.com/fmtq-dev/fmtq.git",
    }
    world.eco.npm_downloads["fmtq"] = 25_000
    cp = tk.ctl("install", "fmtq", timeout=180)
    assert not marker.exists(), "the postinstall ran on the host before any question"
    assert stolen(exfil) == [], "the postinstall reached the network"
    assert "needs a person's approval" in cp.stderr, cp.stderr  # asked first
    assert "validation" not in cp.stderr, cp.stderr  # nothing built before the answer
    assert cp.returncode != 0, cp.stdout  # no terminal, no --yes: nothing approved
    assert not (tk.home / "bin" / "fmtq").exists()
