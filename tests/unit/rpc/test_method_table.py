"""The daemon's method table (issue 32): the core methods from the start, the features'
modules, and the flows they import, only once a request names one of theirs, and then
every name is served as if all had been loaded at start. A fresh interpreter each: this
process has long loaded every module."""

from __future__ import annotations

import json
import subprocess
import sys

# Modules of the features' methods that a daemon answering `ping` and `status` must
# not have paid for.
FEATURES = (
    "tsukud.rpc.install_methods",
    "tsukud.rpc.create_methods",
    "tsukud.rpc.eval_methods",
    "tsukud.flows.install_missing",
    "tsukud.flows.eval_run",
    "tsukud.discover.render_page",
)

CODE = """
import json, sys
from tsukud.rpc.registry import load_methods, served_methods
table = served_methods()
first = {
    "core": sorted(n for n in ("ping", "status", "events.list", "daemon.stop") if n in table),
    "features": sorted(m for m in %r if m in sys.modules),
    "ping": table.get("ping").name,
}
found = table.get("install")
after = {
    "install": found.name if found else None,
    "unknown": table.get("no.such.method"),
    "features": sorted(m for m in %r if m in sys.modules),
    "all": sorted(table) == sorted(load_methods()),
}
print(json.dumps([first, after]))
"""


def test_the_features_methods_are_loaded_by_the_first_name_the_table_lacks() -> None:
    code = CODE % (FEATURES, FEATURES)
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, after = json.loads(cp.stdout)
    assert first == {
        "core": ["daemon.stop", "events.list", "ping", "status"],
        "features": [],
        "ping": "ping",
    }
    assert after == {
        "install": "install",
        "unknown": None,
        "features": sorted(FEATURES),
        "all": True,
    }
