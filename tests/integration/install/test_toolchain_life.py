"""A hidden toolchain's life through the real daemon and client (``install/hidden.py``):
``remove`` of the last tool on it removes it too and says so, in its output and in the
ledger; asked for by name it becomes the user's (linked) and is never removed with its
tools; a newer release asked for by name while a tool runs on the hidden one is refused
with the ways on, and the tool keeps running. The fixtures are those of
``test_ecosystem_toolchain.py``: a registry nodejs recipe of shims over this machine's
node and npm, an npm tool from the fake npm registry."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path

from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import (
    NO_SYSTEM_COMMANDS,
    events,
    installed,
    make_tsuku,
    running,
)
from tests.integration.install.test_ecosystem_installs import recipe, run
from tests.integration.install.test_ecosystem_toolchain import (  # noqa: F401 (fixtures)
    host,
    host_npm,
    needs_npm,
    publish_nodejs,
)
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.testing.download_host import FakeDownloadHost
from tsukud.testing.packages import npm_tarball

GREET = recipe("npm_install", "@fake/greet", ["greet"], "greet")


@needs_npm
def test_removing_the_last_tool_on_a_hidden_toolchain_removes_it_and_says_so(
    world: FakeGitHub,
    eco: FakeEcosystems,
    host: FakeDownloadHost,  # noqa: F811
    registry: Callable[[str, str], None],
) -> None:
    publish_nodejs(host, registry)
    eco.publish_npm(npm_tarball("@fake/greet", "1.0.0", {"greet": "greet 1.0.0"}))
    with running(make_tsuku(world, **eco.env())) as inst:
        local_recipe(inst, "greet", GREET)
        inst.ctl("install", "--yes", "greet", check=True, shell_env=NO_SYSTEM_COMMANDS)
        node_dir = Path(installed(inst)["nodejs"]["install_dir"])
        # greet's record names the toolchain its npm ran from: who uses it (a build-only
        # one, rust for a crate, is named only there)
        (done,) = [e for e in events(inst) if e["type"] == "install.completed"][1:]
        assert (done["payload"]["tool"], done["payload"]["toolchains"]) == ("greet", ["nodejs"])
        shown = inst.ctl("list", check=True).stdout
        assert "(toolchain for greet)" in shown
        assert "removed with the last tool that uses it" in shown  # what will happen
        assert "tsukuctl install nodejs" in shown  # and how to keep it

        gone = inst.ctl("remove", "greet", check=True)
        assert gone.stdout.splitlines() == [
            "removed greet 1.0.0",
            "also removed nodejs 1.0.0 (toolchain for greet, no longer needed)",
        ]
        assert "no longer needed by any tool" not in gone.stderr  # removed, not named
        assert installed(inst) == {} and not node_dir.exists()
        removed = [e for e in events(inst) if e["type"] == "install.removed"]
        assert [e["payload"] for e in removed] == [
            {"tool": "greet", "version": "1.0.0"},
            {"tool": "nodejs", "version": "1.0.0", "toolchain_for": "greet"},
        ]
        assert removed[0]["session"] == removed[1]["session"]  # one remove did both

        # remove's help says it before anyone runs it
        told = inst.ctl("remove", "--help").stdout
        assert "removed with the last tool that uses it" in " ".join(told.split())


@needs_npm
def test_a_hidden_toolchain_asked_for_by_name_becomes_the_users_and_stays(
    world: FakeGitHub,
    eco: FakeEcosystems,
    host: FakeDownloadHost,  # noqa: F811
    host_npm: Path,  # noqa: F811
    registry: Callable[[str, str], None],
) -> None:
    """nodejs 1.0.0 installed hidden for greet; the newest is 1.1.0 by the time the
    user asks for nodejs by name. Replacing it would delete the directory greet's
    wrapper runs node from, so that is refused, naming both ways on, and greet still
    runs; ``install nodejs@1.0.0`` makes the one greet runs on the user's, asked about
    the user's own node first (never silently shadowed), then linked; ``remove greet``
    then leaves it."""
    (host_npm / "node").write_text('#!/bin/sh\necho "the user\'s node ran" >&2\nexit 97\n')
    (host_npm / "node").chmod(0o755)
    user_path = {"PATH": f"{host_npm}:{os.environ.get('PATH', '')}"}
    publish_nodejs(host, registry)
    eco.publish_npm(npm_tarball("@fake/greet", "1.0.0", {"greet": "greet 1.0.0"}))
    with running(make_tsuku(world, **eco.env())) as inst:
        local_recipe(inst, "greet", GREET)
        inst.ctl("install", "--yes", "greet", check=True, shell_env=NO_SYSTEM_COMMANDS)
        bin_dir = inst.home / "bin"
        publish_nodejs(host, partial(local_recipe, inst), version="1.1.0")

        refused = inst.ctl("install", "nodejs", "--json", shell_env=NO_SYSTEM_COMMANDS)
        error = json.loads(refused.stdout)["error"]
        assert error["code"] == "dependency_in_use", error
        assert "nodejs 1.0.0 is installed as the toolchain greet runs on" in error["message"]
        assert "`tsukuctl install nodejs@1.0.0`" in error["hint"]
        assert installed(inst)["nodejs"]["version"] == "1.0.0"
        assert run(bin_dir / "greet", "hi").strip() == "greet 1.0.0 hi"  # unbroken

        # The user's own node is on their PATH: by name, nodejs is judged as any
        # install (the shadowing question; --yes does not accept it), not linked unasked.
        shadowing = inst.ctl("install", "--yes", "nodejs@1.0.0", "--json", shell_env=user_path)
        assert json.loads(shadowing.stdout)["error"]["code"] == "command_shadowing_refused"
        assert not (bin_dir / "node").exists() and "toolchain_for" in installed(inst)["nodejs"]

        mine = inst.ctl("install", "nodejs@1.0.0", shell_env=NO_SYSTEM_COMMANDS)
        assert mine.returncode == 0, mine.stderr
        row = installed(inst)["nodejs"]
        assert row["version"] == "1.0.0" and "toolchain_for" not in row
        assert (bin_dir / "node").resolve() == (Path(row["install_dir"]) / "bin/node").resolve()

        gone = inst.ctl("remove", "greet", check=True)
        assert "also removed" not in gone.stdout
        assert list(installed(inst)) == ["nodejs"] and (bin_dir / "node").exists()
        assert [e["payload"]["tool"] for e in events(inst) if e["type"] == "install.removed"] == [
            "greet"
        ]
