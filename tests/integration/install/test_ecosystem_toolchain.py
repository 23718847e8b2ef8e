"""An ecosystem step's toolchain installed from its registry recipe, as tsuku does:
``nodejs`` is planned and installed first ("needs nodejs ... first"), and ``npm
install`` runs the toolchain's own ``npm`` with its directory first on PATH, not the
host's ``npm`` that comes first on the daemon's PATH.

The fake registry serves a tiny ``nodejs`` recipe whose archive holds shims: its
``npm`` records that it ran (in the tool's directory, the one place an install may
write) and execs the machine's real npm; its ``node`` execs the real node. The host's
first-on-PATH ``npm`` is a fake that fails, so the install succeeds only if the
toolchain's was used. (Without a nodejs recipe the host's npm is used as before:
``test_ecosystem_installs.py``.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest

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
from tests.integration.install.test_recipe_errors import local_recipe
from tests.integration.install.test_url_actions import HOST, tar_gz
from tsukud.testing.download_host import FakeDownloadHost
from tsukud.testing.packages import npm_tarball, wheel

REAL_NPM, REAL_NODE = shutil.which("npm"), shutil.which("node")
# The machine's python3 a confined install can run (the daemon's own rule for a host
# toolchain outside the system directories): the shim of the python-standalone recipe
# execs it.
REAL_PYTHON = next(
    (p for p in ("/usr/local/bin/python3", "/usr/bin/python3") if os.access(p, os.X_OK)), None
)
needs_npm = pytest.mark.skipif(
    REAL_NPM is None or REAL_NODE is None, reason="npm and node are not installed"
)
needs_python = pytest.mark.skipif(REAL_PYTHON is None, reason="no python3 in /usr")
MARKER = ".toolchain-npm-ran"


@pytest.fixture
def host() -> Iterator[FakeDownloadHost]:
    with FakeDownloadHost() as fake:
        yield fake


def failing_host(program: str) -> Iterator[Path]:
    """A directory holding a ``program`` that fails loudly: first on the daemon's PATH."""
    d = Path(tempfile.mkdtemp(prefix=f"tk-host-{program}-", dir="/tmp"))
    d.chmod(0o755)  # runnable by anyone: if it were chosen, it would run and fail
    fake = d / program
    fake.write_text(f'#!/bin/sh\necho "the host\'s {program} ran" >&2\nexit 97\n')
    fake.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def host_npm() -> Iterator[Path]:
    yield from failing_host("npm")


@pytest.fixture
def host_python() -> Iterator[Path]:
    yield from failing_host("python3")


def toolchain_recipe(host: FakeDownloadHost, name: str, programs: list[str], index: str) -> str:
    """A toolchain's recipe as the registry would serve it: an archive of ``programs``
    (in its ``bin/``) from the download host; verified by the first one's ``--version``."""
    binaries = ", ".join(f'"bin/{program}"' for program in programs)
    return f"""[metadata]
name = "{name}"
description = "{name} (shims over this machine's {" and ".join(programs)}, for the test)"

[version]
source = "http_json"
url = "{host.url}/dist/{name}/{index}"
version_path = "0.version"

[[steps]]
action = "download_archive"
url = "{host.url}/dist/{name}/v{{version}}/{name}-v{{version}}-{{os}}-{{arch}}.tar.gz"
strip_dirs = 1
install_mode = "directory"
binaries = [{binaries}]

[verify]
command = "{{install_dir}}/bin/{programs[0]} --version"
pattern = "{{version}}"
"""


def publish_toolchain(
    host: FakeDownloadHost,
    registry: Callable[[str, str], None],
    name: str,
    programs: dict[str, str],
    version: str,
) -> None:
    """``name``'s recipe into ``registry`` and its archive of ``programs`` (a command of
    its ``bin/`` → the script it is) on the download host, at ``version``."""
    top = f"{name}-v{version}"
    archive = tar_gz({f"{top}/bin/{cmd}": text.encode() for cmd, text in programs.items()})
    index = "index.json" if version == "1.0.0" else f"index-{version}.json"  # uncached
    host.add_json(f"/dist/{name}/{index}", [{"version": f"v{version}"}])
    host.add(f"/dist/{name}/v{version}/{top}-{HOST.os}-{HOST.arch}.tar.gz", archive)
    registry(name, toolchain_recipe(host, name, list(programs), index))


def shim(real: str | None, version_line: str, first: str = "") -> str:
    """A toolchain program that answers ``--version`` itself and otherwise runs
    ``first`` (a line of shell), then execs the machine's ``real`` program."""
    return (
        f'#!/bin/sh\n{first}[ "$1" = --version ] && {{ echo {version_line}; exit 0; }}\n'
        f'exec {real} "$@"\n'
    )


def publish_nodejs(
    host: FakeDownloadHost,
    registry: Callable[[str, str], None],
    node_mark: Path | None = None,
    version: str = "1.0.0",
) -> None:
    """``node_mark``: a file the toolchain's node appends to each time it runs."""
    mark = f'{{ echo "$0" >> {node_mark}; }} 2>/dev/null\n' if node_mark else ""
    node = shim(REAL_NODE, f"v{version}", mark)
    npm = f'#!/bin/sh\necho "$0" >> "$PWD/{MARKER}"\nexec {REAL_NPM} "$@"\n'
    publish_toolchain(host, registry, "nodejs", {"node": node, "npm": npm}, version)


@needs_npm
def test_the_toolchain_recipe_is_installed_first_and_its_npm_runs(
    world: FakeGitHub,
    eco: FakeEcosystems,
    host: FakeDownloadHost,
    host_npm: Path,
    registry: Callable[[str, str], None],
) -> None:
    publish_nodejs(host, registry)
    eco.publish_npm(npm_tarball("@fake/greet", "1.0.0", {"greet": "greet 1.0.0"}))
    daemon_path = f"{host_npm}:{os.environ.get('PATH', '')}"
    with running(make_tsuku(world, **eco.env(), PATH=daemon_path)) as inst:
        local_recipe(inst, "greet", recipe("npm_install", "@fake/greet", ["greet"], "greet"))

        # The preview: nodejs first, nested as tsuku nests it; no host toolchain.
        plan = json.loads(inst.ctl("plan", "greet", "--json", check=True).stdout)
        assert [d["tool"] for d in plan["dependencies"]] == ["nodejs"]
        assert plan["dependencies"][0]["version"] == "1.0.0"
        assert "host_toolchains" not in plan
        shown = inst.ctl("plan", "greet", check=True).stdout
        assert "needs nodejs 1.0.0 first" in shown

        cp = inst.ctl("install", "greet", shell_env=NO_SYSTEM_COMMANDS)
        assert cp.returncode == 0, cp.stderr
        rows = installed(inst)
        assert rows["nodejs"]["version"] == "1.0.0" and rows["greet"]["version"] == "1.0.0"
        tool_dir = Path(rows["greet"]["install_dir"])
        # The toolchain's npm ran (in the tool's directory), so the host's did not.
        ran = (tool_dir / MARKER).read_text().split()
        assert ran == [str(Path(rows["nodejs"]["install_dir"]) / "bin" / "npm")]
        assert run(inst.home / "bin" / "greet", "hi").strip() == "greet 1.0.0 hi"


@needs_npm
def test_an_implicit_toolchain_is_hidden_runs_the_tool_and_is_its_runtime_dependency(
    world: FakeGitHub,
    eco: FakeEcosystems,
    host: FakeDownloadHost,
    host_npm: Path,
    registry: Callable[[str, str], None],
    tmp_path: Path,
) -> None:
    """The user has their own node and npm first on PATH (fakes that fail), the
    registry holds a nodejs recipe: ``install --yes`` of an npm tool installs nodejs
    hidden (nothing linked into bin/, so no shadowing question to refuse), the tool's
    command runs on that nodejs (``#!/usr/bin/env node`` through its wrapper), nodejs
    is its runtime dependency (``remove`` refuses it), and asked for by name nodejs is
    judged and linked as any install."""
    (host_npm / "node").write_text('#!/bin/sh\necho "the user\'s node ran" >&2\nexit 97\n')
    (host_npm / "node").chmod(0o755)
    node_mark = tmp_path / "node-ran"
    publish_nodejs(host, registry, node_mark)
    eco.publish_npm(npm_tarball("@fake/greet", "1.0.0", {"greet": "greet 1.0.0"}))
    user_path = {"PATH": f"{host_npm}:{os.environ.get('PATH', '')}"}
    with running(make_tsuku(world, **eco.env(), **user_path)) as inst:
        local_recipe(inst, "greet", recipe("npm_install", "@fake/greet", ["greet"], "greet"))

        cp = inst.ctl("install", "--yes", "greet", shell_env=user_path)
        assert cp.returncode == 0, cp.stderr
        rows = installed(inst)
        bin_dir = inst.home / "bin"
        assert sorted(p.name for p in bin_dir.iterdir()) == ["greet"]  # no node, no npm
        done = {
            e["payload"]["tool"]: e["payload"]
            for e in events(inst)
            if e["type"] == "install.completed"
        }
        assert done["nodejs"].get("hidden") is True and "hidden" not in done["greet"]
        assert done["greet"]["runtime_dependencies"] == ["nodejs"]
        # list: nodejs is greet's toolchain, not node and npm on the user's PATH
        listed = {r["tool"]: r for r in json.loads(inst.ctl("list", "--json").stdout)["tools"]}
        assert (listed["nodejs"]["binaries"], listed["nodejs"]["toolchain_for"]) == ([], ["greet"])
        table = inst.ctl("list", check=True).stdout
        assert "(toolchain for greet)" in table and "node, npm" not in table, table

        # The user's node comes first on their PATH; the tool runs on its nodejs.
        node_mark.unlink(missing_ok=True)
        out = subprocess.run(
            [str(bin_dir / "greet"), "hi"],
            capture_output=True,
            text=True,
            env={**os.environ, **user_path},
        )
        assert (out.returncode, out.stdout.strip()) == (0, "greet 1.0.0 hi"), out.stderr
        node_dir = Path(rows["nodejs"]["install_dir"]) / "bin"
        assert node_mark.read_text().split() == [str(node_dir / "node")]
        # verify: greet's wrapper and what it runs unchanged; nodejs has no links to check.
        inst.ctl("verify", "greet", check=True)
        inst.ctl("verify", "nodejs", check=True)

        # nodejs is needed while greet is installed.
        gone = inst.ctl("remove", "nodejs", "--json")
        assert json.loads(gone.stdout)["error"]["code"] == "dependency_in_use"
        assert "nodejs" in installed(inst)

        # Asked for by name, nodejs is judged as any install: --yes does not accept
        # hiding the user's node and npm, and nothing is linked.
        refused = inst.ctl("install", "--yes", "nodejs", shell_env=user_path)
        assert refused.returncode != 0
        failed = [e["payload"] for e in events(inst) if e["type"] == "install.failed"]
        assert [(f["tool"], f["error_code"]) for f in failed] == [
            ("nodejs", "command_shadowing_refused")
        ]
        assert not (bin_dir / "node").exists()

        # Once greet is gone, nodejs goes with it (test_toolchain_life.py says more):
        # named after greet in the same command, it is gone as asked, not an error.
        cp = inst.ctl("remove", "greet", "nodejs", "--json", check=True)
        removed, named = map(json.loads, cp.stdout.splitlines())
        assert [t["tool"] for t in removed["also_removed"]] == ["nodejs"]
        assert named == {"tool": "nodejs", "removed_with": "greet"}
        assert removed["unneeded_dependencies"] == [] and installed(inst) == {}

        # A hidden toolchain left by a tool whose install failed after it (its verify
        # never matches) is used by nothing; upgraded, it stays hidden.
        broken = recipe("npm_install", "@fake/greet", ["greet"], "greet").replace(
            'name = "greet"', 'name = "broken"'
        )
        local_recipe(inst, "broken", broken.replace('"{version}"', '"never printed"'))
        assert inst.ctl("install", "--yes", "broken", shell_env=user_path).returncode != 0
        assert list(installed(inst)) == ["nodejs"]
        assert "(toolchain, not on PATH)" in inst.ctl("list", check=True).stdout
        publish_nodejs(host, partial(local_recipe, inst), node_mark, version="1.1.0")
        inst.ctl("upgrade", "nodejs", check=True, shell_env=user_path)
        assert installed(inst)["nodejs"]["version"] == "1.1.0"
        assert not bin_dir.exists() or list(bin_dir.iterdir()) == []

        # With nothing to shadow, asked for by name it is linked, no longer hidden.
        cp = inst.ctl("install", "nodejs", shell_env=NO_SYSTEM_COMMANDS)
        assert cp.returncode == 0, cp.stderr
        node_dir = Path(installed(inst)["nodejs"]["install_dir"]) / "bin"
        assert (bin_dir / "node").resolve() == (node_dir / "node").resolve()
        inst.ctl("remove", "nodejs", check=True)
        assert installed(inst) == {}


@needs_python
def test_a_pypi_tool_makes_its_venv_with_the_python_standalone_recipe_not_the_hosts(
    world: FakeGitHub,
    eco: FakeEcosystems,
    host: FakeDownloadHost,
    host_python: Path,
    registry: Callable[[str, str], None],
) -> None:
    """pipx_install with the registry's ``python-standalone`` recipe: it is installed
    first (hidden) and its ``python3`` makes the tool's venv; the host's ``python3``,
    first on the daemon's PATH, fails if it is run. The toolchain's python3 is a shim
    that notes ``-m venv`` in the tool's directory, then execs this machine's python."""
    ran = '[ "$1" = -m ] && echo "$0 $2" >> "$PWD/.toolchain-python-ran"\n'
    python = shim(REAL_PYTHON, "Python 1.0.0", ran)
    publish_toolchain(host, registry, "python-standalone", {"python3": python}, "1.0.0")
    eco.publish_wheel(wheel("Hello_Py", "1.0", {"hello": "hello 1.0"}))
    daemon_path = f"{host_python}:{os.environ.get('PATH', '')}"
    with running(make_tsuku(world, **eco.env(), PATH=daemon_path)) as inst:
        local_recipe(inst, "hello", recipe("pipx_install", "Hello_Py", ["hello"], "hello"))
        cp = inst.ctl("install", "hello", shell_env=NO_SYSTEM_COMMANDS)
        assert cp.returncode == 0, cp.stderr
        rows = installed(inst)
        toolchain = rows["python-standalone"]
        assert toolchain["toolchain_for"] == ["hello"] and toolchain["binaries"] == []  # hidden
        tool_dir = Path(rows["hello"]["install_dir"])
        made = (tool_dir / ".toolchain-python-ran").read_text().split()
        assert made == [str(Path(toolchain["install_dir"]) / "bin" / "python3"), "venv"]
        # its venv's python is this machine's, reached through the toolchain's
        assert run(inst.home / "bin" / "hello", "hi").strip() == "hello 1.0 hi"
