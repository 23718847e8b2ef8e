"""What a daemon imports before it serves (issue 32: start-up within 1.15x of its import
floor, trio, msgspec, structlog and sqlite3): the start-up path of ``tsukud.__main__``
run in a fresh interpreter on a new home without a config file (settings, the ledger
opened and folded, ``bin/`` reconciled, the method table it starts serving with), and
none of the modules that only a later request needs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Each was imported before the first answer once, by a module the start-up imports.
LATER = (
    "tomllib",  # the config file's parser: no file, no parse
    "configparser",  # PyPI's entry_points.txt reader
    "zstandard",  # the extractor (the install package's __init__ imported it)
    "tarfile",
    "zipfile",
    "tsukud.install.extract",
    "tsukud.recipe",
    "tsukud.rpc.install_methods",  # the features' methods and their flows
    "tsukud.flows.install_missing",
    "tsukud.flows.eval_run",
    "tsukud.create",
    "tsukud.discover",
    "tsukud.instructions",
)

START = """
import json, os, sys
from pathlib import Path
import tsukud.__main__
from tsukud import config as configmod, log, paths
from tsukud.private_home import make_home_private
env = os.environ
config = configmod.resolve(env=env)
make_home_private(paths.tsuku_home(env), leave=str(config.path))
log.configure(Path(paths.log_path(env)), level="info", max_bytes=1 << 20, backups=1)
from tsukud.daemon import Daemon
from tsukud.rpc.registry import served_methods
from tsukud.rpc.server import RpcServer
daemon = Daemon(config=config, env=env)
daemon.open()
table = served_methods()
print(json.dumps({
    "serves": sorted(n for n in ("ping", "status") if n in table),
    "loaded": sorted(m for m in %r if m in sys.modules),
}))
"""


def test_a_daemon_serves_before_importing_what_later_requests_need(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "TSUKU_HOME": str(tmp_path / "home")}
    cp = subprocess.run(
        [sys.executable, "-c", START % (LATER,)],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert cp.returncode == 0, cp.stderr
    assert json.loads(cp.stdout) == {"serves": ["ping", "status"], "loaded": []}
