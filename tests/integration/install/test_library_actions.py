"""``install_libraries`` and ``link_dependencies`` through the real daemon: a library
recipe installs its files with their symlink chain, and a tool that links it gets it
installed first, its ``lib/`` linked into the tool's by relative links, the library
recorded as a runtime dependency (``remove`` refuses it while the tool is there)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile

from tests.integration.install.conftest import make_tsuku, running
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

COUNTER = b"""#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
cat "$here/../lib/libcount.so.1"
"""


def _tar(files: dict[str, bytes], links: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
        for name, target in links.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def _recipes(gh: FakeGitHub) -> tuple[str, str]:
    base = f"{gh.web_url}/o/{{name}}/releases/download/v{{{{version}}}}"
    lib = f"""[metadata]
name = "libcount"
type = "library"

[version]
source = "github"
github_repo = "o/libcount"

[[steps]]
action = "download_archive"
url = "{base.format(name="libcount")}/libcount-{{version}}.tar.gz"
strip_dirs = 1

[[steps]]
action = "install_libraries"
patterns = ["lib/*.so*"]
"""
    tool = f"""[metadata]
name = "counter"

[version]
source = "github"
github_repo = "o/counter"

[[steps]]
action = "download_archive"
url = "{base.format(name="counter")}/counter-{{version}}.tar.gz"
binaries = ["counter"]

[[steps]]
action = "link_dependencies"
library = "libcount"

[verify]
command = "counter"
pattern = "libcount 3.0"
"""
    return lib, tool


def test_a_library_is_installed_and_linked_into_the_tool_that_needs_it() -> None:
    lib = _tar(
        {"libcount-3.0/lib/libcount.so.3.0": b"libcount 3.0\n", "libcount-3.0/README": b""},
        {"libcount-3.0/lib/libcount.so.1": "libcount.so.3.0"},
    )
    app = _tar({"counter": COUNTER}, {})
    with FakeGitHub() as gh:
        gh.add_repo(
            FakeRepo("o/libcount", [FakeRelease("v3.0", [FakeAsset("libcount-3.0.tar.gz", lib)])])
        )
        gh.add_repo(
            FakeRepo("o/counter", [FakeRelease("v1.0", [FakeAsset("counter-1.0.tar.gz", app)])])
        )
        with running(make_tsuku(gh)) as t:
            lib_recipe, tool_recipe = _recipes(gh)
            local_recipe(t, "libcount", lib_recipe)
            local_recipe(t, "counter", tool_recipe)
            out = t.ctl("install", "counter", "--yes", "--json")
            assert out.returncode == 0, out.stdout + out.stderr

            libdir = t.home / "tools" / "libcount-3.0"
            # install_libraries: the files the patterns name, the chain kept.
            assert sorted(os.listdir(libdir)) == ["lib"]
            assert os.readlink(libdir / "lib" / "libcount.so.1") == "libcount.so.3.0"
            # link_dependencies: relative links into the library's lib/.
            tool_lib = t.home / "tools" / "counter-1.0" / "lib"
            assert os.readlink(tool_lib / "libcount.so.3.0") == (
                "../../libcount-3.0/lib/libcount.so.3.0"
            )
            assert os.readlink(tool_lib / "libcount.so.1") == "libcount.so.3.0"
            ran = subprocess.run(
                [str(t.home / "bin" / "counter")], capture_output=True, text=True, check=True
            )
            assert ran.stdout == "libcount 3.0\n"

            lines = t.ctl("events", "--type", "install.completed", "--json", check=True).stdout
            done = {
                json.loads(x)["payload"]["tool"]: json.loads(x)["payload"]
                for x in lines.splitlines()
            }
            assert done["counter"]["runtime_dependencies"] == ["libcount"]
            # The tool's lib/ points into it: not removed from under it.
            gone = t.ctl("remove", "libcount", "--json")
            assert gone.returncode == 1
            assert json.loads(gone.stdout)["error"]["code"] == "dependency_in_use"
