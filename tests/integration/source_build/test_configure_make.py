"""A ``configure_make`` recipe installs what the build container built and proved.

A tiny C project served as a release of the fake GitHub: the daemon downloads and
checksums the tarball, unpacks it, builds it in the build container (no network, the
validation limits), runs the verify command there against the output, and installs
that output like any download; the installed binary runs here. Nothing of the build
ever runs on the host: a ``make``, ``cc`` and ``gcc`` first on the daemon's and the
caller's PATH record any call, and the project's ``configure`` touches a host path
that only exists on the host. What the container refuses (a failing build, a
failing verify, an unsafe output) is test_build_container.py.
"""

from __future__ import annotations

import json
import os
import subprocess

from tests.conftest import Tsuku
from tests.integration.install.conftest import make_tsuku, running
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.source_build.conftest import VERSION, Project, recipe


def daemon(project: Project) -> Tsuku:
    path = f"{project.fake_bin}:{os.environ.get('PATH', '/usr/bin:/bin')}"
    return make_tsuku(project.gh, PATH=path)


def test_the_source_builds_in_the_container_and_installs(
    project: Project, build_image: str
) -> None:
    with running(daemon(project)) as t:
        # The build image through the daemon (present here: nothing is built again).
        prep = json.loads(t.ctl("sandbox", "prepare", "--build", "--json", check=True).stdout)
        assert prep == {"image": build_image, "imported": False}
        both = t.ctl("sandbox", "prepare", "--build", "--busybox")
        assert both.returncode != 0 and "one at a time" in both.stderr

        local_recipe(t, "hello-src", recipe(project))
        plan = json.loads(t.ctl("plan", "hello-src", "--json").stdout)
        assert [s["action"] for s in plan["steps"]] == [
            "download_file",
            "extract",
            "setup_build_env",
            "configure_make",
            "install_binaries",
            "set_env",
        ]
        assert plan["unsupported"] == []

        out = t.ctl("install", "hello-src", "--yes", "--json")
        # Nothing of the build ran here (asked first: a host build fails differently).
        assert not project.marker.exists(), "configure ran on the host"
        assert not project.calls.exists(), project.calls.read_text()
        assert out.returncode == 0, out.stderr
        res = json.loads(out.stdout)
        assert res["binaries"] == ["hello"]
        (asset,) = res["assets"]
        assert asset["sha256"] == project.sha256  # the source, as the recipe pins it
        assert "recipe_checksum" in asset["checked_against"]

        ran = subprocess.run(
            [str(t.home / "bin" / "hello")], capture_output=True, text=True, check=True
        )
        assert ran.stdout == f"hello from a build: built-in-a-container {VERSION}\n"
        tool = t.home / "tools" / f"hello-src-{VERSION}"
        # The build's output (not the source) and set_env's file.
        assert sorted(p.name for p in tool.iterdir()) == ["bin", "env.sh"]
        assert (tool / "env.sh").read_text() == f"export HELLO_HOME={tool}\n"
