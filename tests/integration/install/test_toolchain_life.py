"""A hidden toolchain's life through the real daemon and client (``install/hidden.py``):
``remove`` of the last tool on it removes it too and says so, in its output and in the
ledger; asked for by name it becomes the user's (linked) and is never removed with its
tools; a newer release asked for by name (or an upgrade) while a tool runs on the hidden
one is refused with the ways on, and the tool keeps running; a ``remove`` of several
names is judged as one set; ``remove --unused`` takes what a failed install left. The
fixtures are those of ``test_ecosystem_toolchain.py``: a registry nodejs recipe of shims
over this machine's node and npm, an npm tool from the fake npm registry."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

from tests.conftest import Tsuku
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
from tsukud.errors import exit_code_for
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


# Its package is in no registry: its install fails after nodejs was installed for it.
MISSING = recipe("npm_install", "@fake/missing", ["missing"], "missing")


@pytest.fixture
def on_nodejs(
    world: FakeGitHub,
    eco: FakeEcosystems,
    host: FakeDownloadHost,  # noqa: F811
    registry: Callable[[str, str], None],
) -> Iterator[tuple[Tsuku, FakeDownloadHost]]:
    """A daemon whose registry has the nodejs recipe (1.0.0) and greet's npm package,
    greet's recipe local, nothing installed yet; and the download host."""
    publish_nodejs(host, registry)
    eco.publish_npm(npm_tarball("@fake/greet", "1.0.0", {"greet": "greet 1.0.0"}))
    with running(make_tsuku(world, **eco.env())) as inst:
        local_recipe(inst, "greet", GREET)
        yield inst, host


@needs_npm
def test_a_remove_of_several_names_removes_the_tools_first_whatever_the_order(
    on_nodejs: tuple[Tsuku, FakeDownloadHost],
) -> None:
    """``remove nodejs greet``: nodejs, typed first, is needed by greet, named after it;
    it waits for greet, whose removal takes the hidden nodejs with it, so nodejs is
    gone as asked and the command succeeds. Then with nodejs the user's own (installed
    by name): greet goes, then nodejs, said to be after greet. Then upgrading the
    hidden nodejs greet runs on is refused saying what runs on it and how to move it."""
    inst, download_host = on_nodejs
    inst.ctl("install", "--yes", "greet", check=True, shell_env=NO_SYSTEM_COMMANDS)

    hidden = inst.ctl("remove", "nodejs", "greet")
    assert hidden.returncode == 0, hidden.stderr
    assert hidden.stdout.splitlines() == [
        "removed greet 1.0.0",
        "also removed nodejs 1.0.0 (toolchain for greet, no longer needed)",
        "nodejs: removed with greet, as its toolchain",
    ]
    assert installed(inst) == {}

    inst.ctl("install", "--yes", "greet", check=True, shell_env=NO_SYSTEM_COMMANDS)
    inst.ctl("install", "nodejs", check=True, shell_env=NO_SYSTEM_COMMANDS)  # the user's
    mine = inst.ctl("remove", "nodejs", "greet")
    assert mine.returncode == 0, mine.stderr
    assert mine.stdout.splitlines() == [
        "removed greet 1.0.0",
        "removed nodejs 1.0.0 (after greet, which needed it)",
    ]
    assert "no longer needed" not in mine.stderr  # named: removed, not pointed at
    assert installed(inst) == {}
    gone = [e["payload"]["tool"] for e in events(inst) if e["type"] == "install.removed"]
    assert gone == ["greet", "nodejs", "greet", "nodejs"]

    # A tool needed by one not named is still refused, as when named alone.
    inst.ctl("install", "--yes", "greet", check=True, shell_env=NO_SYSTEM_COMMANDS)
    refused = inst.ctl("remove", "nodejs", "jq")
    assert refused.returncode != 0
    assert "nodejs: nodejs is needed by greet" in refused.stderr
    assert "jq: jq is not installed" in refused.stderr
    assert "nodejs" in installed(inst)

    # upgrade of the hidden nodejs greet runs on: its own words, its own hint
    publish_nodejs(download_host, partial(local_recipe, inst), version="1.1.0")
    up = inst.ctl("upgrade", "nodejs", shell_env=NO_SYSTEM_COMMANDS)
    assert up.returncode == exit_code_for("dependency_in_use"), up.stderr
    assert (
        "nodejs was not upgraded: nodejs 1.0.0 is the hidden toolchain greet runs on: its "
        "commands run nodejs's programs from " in up.stderr
    )
    assert "libraries" not in up.stderr
    assert "hint: To move greet to nodejs 1.1.0: `tsukuctl remove greet`" in up.stderr
    assert installed(inst)["nodejs"]["version"] == "1.0.0"
    assert run(inst.home / "bin" / "greet", "hi").strip() == "greet 1.0.0 hi"

    # upgrade --all keeps it (a weekly `upgrade --all` must not fail at each release)
    every = inst.ctl("upgrade", "--all", shell_env=NO_SYSTEM_COMMANDS)
    assert every.returncode == 0, every.stderr
    assert (
        "kept nodejs 1.0.0: the hidden toolchain greet runs on (`tsukuctl upgrade nodejs` "
        "says how to move greet to a newer one)" in every.stdout
    )
    assert "was not upgraded" not in every.stderr
    assert installed(inst)["nodejs"]["version"] == "1.0.0"


@needs_npm
def test_remove_unused_offers_the_toolchain_a_failed_install_left_and_nothing_else(
    on_nodejs: tuple[Tsuku, FakeDownloadHost],
) -> None:
    """A tool whose install failed after its nodejs leaves nodejs hidden and used by
    nothing. ``remove --unused`` lists it; with no one to ask and no ``--yes`` nothing
    goes; with ``--yes`` it goes, on the ledger as ``unused``. A toolchain the user
    asked for by name after it was listed is kept even when the listing is sent."""
    inst, _host = on_nodejs
    local_recipe(inst, "missing", MISSING)
    failed = inst.ctl("install", "--yes", "missing", shell_env=NO_SYSTEM_COMMANDS)
    assert failed.returncode != 0
    listed = inst.ctl("list", check=True).stdout
    assert "(toolchain, not on PATH)" in listed and "`tsukuctl remove --unused`" in listed
    node_dir = Path(installed(inst)["nodejs"]["install_dir"])

    asked = inst.ctl("remove", "--unused")  # no terminal here
    assert asked.returncode == exit_code_for("confirmation_required"), asked.stderr
    assert "nodejs 1.0.0" in asked.stderr and "nothing was removed" in asked.stderr
    assert "`tsukuctl remove --unused --yes`" in asked.stderr
    assert "nodejs" in installed(inst)

    done = inst.ctl("remove", "--unused", "--yes", check=True)
    assert done.stdout.splitlines() == ["removed nodejs 1.0.0 (toolchain no installed tool used)"]
    assert installed(inst) == {} and not node_dir.exists()
    (ev,) = [e for e in events(inst) if e["type"] == "install.removed"]
    assert ev["payload"] == {"tool": "nodejs", "version": "1.0.0", "unused": True}
    again = inst.ctl("remove", "--unused", check=True)
    assert "no unused toolchains" in again.stdout

    # Listed as unused, then asked for by name before the removal arrives: kept.
    inst.ctl("install", "--yes", "missing", shell_env=NO_SYSTEM_COMMANDS)
    listed = [t["tool"] for t in inst.call("tools.list")["tools"] if t.get("toolchain_for") == []]
    assert listed == ["nodejs"]
    inst.ctl("install", "nodejs", check=True, shell_env=NO_SYSTEM_COMMANDS)
    res = inst.call("tools.remove_unused", {"tools": [*listed, "missing-too"]})
    assert (res["removed"], res["kept"]) == ([], ["nodejs", "missing-too"])
    assert "toolchain_for" not in installed(inst)["nodejs"]
    assert (inst.home / "bin" / "node").exists()
