"""Ecosystem recipes (``npm_install``, ``pipx_install``) install, verify and remove
through a real daemon, with the real ``npm`` and ``python3 -m venv`` + ``pip``, from
fake registries on loopback serving packages built in the test."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import (
    events,
    from_the_registry,
    installed,
    make_tsuku,
    tree,
)
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.recipe.model import RUNNABLE_ECOSYSTEM_ACTIONS
from tsukud.testing.packages import npm_tarball, wheel

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


@pytest.fixture
def inst(eco_inst: Tsuku) -> Tsuku:
    return eco_inst


def run(path: Path, *args: str) -> str:
    return subprocess.run([str(path), *args], capture_output=True, text=True, check=True).stdout


def recipe(action: str, package: str, executables: list[str], command: str) -> str:
    return (
        f'[metadata]\nname = "{package.rsplit("/", 1)[-1]}"\n'
        f'description = "{package} for tests"\n\n'
        f'[[steps]]\naction = "{action}"\npackage = "{package}"\n'
        f"executables = {json.dumps(executables)}\n\n"
        f'[verify]\ncommand = "{command}"\npattern = "{{version}}"\n'
    )


@needs_npm
def test_npm_install_recipe_installs_verifies_and_removes(inst: Tsuku, eco: FakeEcosystems) -> None:
    eco.publish_npm(npm_tarball("@fake/greet", "1.0.0", {"greet": "greet 1.0.0"}))
    eco.publish_npm(npm_tarball("@fake/greet", "1.2.0", {"greet": "greet 1.2.0"}))
    eco.publish_npm(
        npm_tarball("@fake/greet", "2.0.0-rc.1", {"greet": "greet 2.0.0-rc.1"}), latest=False
    )
    local_recipe(inst, "greet", recipe("npm_install", "@fake/greet", ["greet"], "greet"))

    plan = json.loads(inst.ctl("plan", "greet", "--json", check=True).stdout)
    assert plan["version"] == "1.2.0" and plan["unsupported"] == []
    assert plan["steps"] == [  # as tsuku decomposes it; the lock is npm's to resolve
        {
            "action": "npm_exec",
            "params": {
                "executables": ["greet"],
                "ignore_scripts": True,
                "package": "@fake/greet",
                "version": "1.2.0",
            },
            "evaluable": True,
            "deterministic": False,
            "computed_at_download": [
                "params.has_native_addons",
                "params.node_version",
                "params.npm_version",
                "params.package_lock",
            ],
        }
    ]
    assert plan["verify"]["command"] == "greet"
    assert not any("/-/" in p for p in eco.paths())  # planning downloads nothing

    cp = inst.ctl("install", "greet")
    assert cp.returncode == 0, cp.stderr
    assert run(inst.home / "bin" / "greet", "hi").strip() == "greet 1.2.0 hi"
    row = installed(inst)["greet"]
    assert row["version"] == "1.2.0" and row["binaries"] == ["greet"]
    tool_dir = inst.home / "tools" / "greet-1.2.0"
    assert (tool_dir / "node_modules" / "@fake" / "greet" / "package.json").is_file()
    assert eco.paths()[-2:] == ["/npm/@fake%2fgreet", "/npm/@fake/greet/-/greet-1.2.0.tgz"]
    done = [e for e in events(inst) if e["type"] == "install.completed"][-1]["payload"]
    assert done["binaries"]["greet"]["path"] == "node_modules/.bin/greet"

    assert inst.ctl("verify", "greet").returncode == 0
    # an exact older version is pinned, and replaces the newer one
    cp = inst.ctl("install", "greet@1.0.0")
    assert cp.returncode == 0, cp.stderr
    assert run(inst.home / "bin" / "greet").strip() == "greet 1.0.0"
    assert inst.ctl("remove", "greet").returncode == 0
    assert installed(inst) == {}
    assert tree(inst.home) == []


@pytest.mark.slow  # real pip venvs / npm installs; the tampered-package test stays
@needs_npm
def test_a_new_user_installs_an_npm_tool_from_the_registrys_recipe(
    inst: Tsuku,
    world: FakeGitHub,
    registry: Callable[[str, str], None],
    eco: FakeEcosystems,
) -> None:
    """``tsukuctl install greet`` with no recipe of one's own: the ``npm_install``
    recipe comes from the registry, the package from the npm registry."""
    eco.publish_npm(npm_tarball("@fake/greet", "3.1.0", {"greet": "greet 3.1.0"}))
    text = recipe("npm_install", "@fake/greet", ["greet"], "greet")
    registry("greet", text)
    assert not (inst.home / "recipes" / "greet.toml").exists()

    cp = inst.ctl("install", "greet")
    assert cp.returncode == 0, cp.stderr
    from_the_registry(inst, world, "greet", text)
    assert run(inst.home / "bin" / "greet", "hi").strip() == "greet 3.1.0 hi"
    row = installed(inst)["greet"]
    assert row["version"] == "3.1.0" and row["binaries"] == ["greet"]
    tool_dir = Path(row["install_dir"])
    assert (tool_dir / "node_modules" / "@fake" / "greet" / "package.json").is_file()

    verified = inst.ctl("verify", "greet")
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("greet 3.1.0 ok: ")
    assert inst.ctl("remove", "greet").returncode == 0
    assert installed(inst) == {}
    assert not tool_dir.exists()
    link = inst.home / "bin" / "greet"
    assert not (link.exists() or link.is_symlink())
    assert tree(inst.home) == []


# Among the slowest tests (issue 26): pip creates a real venv and installs from the fake
# index (seconds of pip per install; the package manager is the subject).
@pytest.mark.slow  # real pip venvs / npm installs; the tampered-package test stays
def test_pipx_install_recipe_installs_verifies_and_removes(
    inst: Tsuku, eco: FakeEcosystems
) -> None:
    eco.publish_wheel(wheel("Hello_Py", "0.9", {"hello": "hello 0.9"}))
    eco.publish_wheel(wheel("Hello_Py", "1.1", {"hello": "hello 1.1", "hello-admin": "admin"}))
    local_recipe(
        inst, "hello", recipe("pipx_install", "Hello_Py", ["hello", "hello-admin"], "hello")
    )
    text = inst.ctl("plan", "hello", "--version", "0.9", check=True).stdout
    assert "pip_exec" in text and "0.9" in text

    cp = inst.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr
    assert run(inst.home / "bin" / "hello", "x").strip() == "hello 1.1 x"
    assert run(inst.home / "bin" / "hello-admin").strip() == "admin"
    row = installed(inst)["hello"]
    assert row["version"] == "1.1" and row["binaries"] == ["hello", "hello-admin"]
    paths = eco.paths()
    assert "/pypi-org/pypi/hello-py/json" in paths
    assert "/pypi-org/simple/hello-py/" in paths
    assert paths[-1] == "/pypi-org/packages/hello_py-1.1-py3-none-any.whl"
    simple = [r for r in eco.requests if r.route == "/pypi-org/simple/hello-py/"][-1]
    assert "application/vnd.pypi.simple.v1+json" in (simple.headers.get("accept") or "")
    venv_python = inst.home / "tools" / "hello-1.1" / "venv" / "bin" / "python"
    assert venv_python.exists()

    assert inst.ctl("verify", "hello").returncode == 0
    assert inst.ctl("remove", "hello").returncode == 0
    assert installed(inst) == {}
    assert tree(inst.home) == []


# Among the slowest tests (issue 26): a real pip install through a real forwarding proxy
# (pip creates a real venv and installs from the fake index (seconds of pip per install; the
# package manager is the subject)).
@pytest.mark.slow  # real pip venvs / npm installs; the tampered-package test stays
def test_a_callers_proxy_carries_the_package_managers_requests(
    inst: Tsuku, eco: FakeEcosystems
) -> None:
    """``HTTP_PROXY=… tsukuctl install`` (a daemon started without it): pip fetches the
    index and the wheel through that proxy too, not only tsukud's own version lookup."""
    from tests.fakes.proxy import ForwardingProxy

    eco.publish_wheel(wheel("Hello_Py", "1.1", {"hello": "hello 1.1"}))
    local_recipe(inst, "hello", recipe("pipx_install", "Hello_Py", ["hello"], "hello"))
    with ForwardingProxy() as proxy:
        cp = inst.ctl("install", "hello", shell_env={"HTTP_PROXY": proxy.url})
        assert cp.returncode == 0, cp.stderr
        through = proxy.urls()
    assert any(u.endswith("/pypi-org/pypi/hello-py/json") for u in through)  # tsukud
    assert any(u.endswith("/pypi-org/simple/hello-py/") for u in through)  # pip
    assert any(u.endswith("/hello_py-1.1-py3-none-any.whl") for u in through)  # pip
    assert run(inst.home / "bin" / "hello").strip() == "hello 1.1"


# Among the slowest tests (issue 26): pip creates a real venv and installs from the fake
# index (seconds of pip per install; the package manager is the subject).
@pytest.mark.slow  # real pip venvs / npm installs; the tampered-package test stays
def test_an_executable_the_package_lacks_fails_the_install_and_leaves_nothing(
    inst: Tsuku, eco: FakeEcosystems
) -> None:
    eco.publish_wheel(wheel("hello", "1.0", {"hello": "hello 1.0"}))
    local_recipe(inst, "hello", recipe("pipx_install", "hello", ["hello", "missing"], "hello"))
    cp = inst.ctl("install", "hello")
    assert cp.returncode == 6, cp.stderr
    assert "installed no executable missing in venv/bin/" in cp.stderr
    assert "hello" in cp.stderr  # what it did install is listed
    assert installed(inst) == {}
    assert tree(inst.home) == []
    failed = [e for e in events(inst) if e["type"] == "install.failed"][-1]["payload"]
    assert failed["error_code"] == "ecosystem_install_failed"


def test_an_unknown_version_or_package_is_a_version_error(inst: Tsuku, eco: FakeEcosystems) -> None:
    eco.publish_wheel(wheel("hello", "1.0", {"hello": "hello 1.0"}))
    local_recipe(inst, "hello", recipe("pipx_install", "hello", ["hello"], "hello"))
    cp = inst.ctl("install", "hello@9.9")
    assert cp.returncode == 4, cp.stderr
    assert "version 9.9 not found for pypi package hello" in cp.stderr
    local_recipe(inst, "ghost", recipe("pipx_install", "ghost", ["ghost"], "ghost"))
    cp = inst.ctl("install", "ghost")
    assert cp.returncode == 4, cp.stderr
    assert "pypi package ghost does not exist" in cp.stderr
    assert tree(inst.home) == []


def test_a_missing_toolchain_is_named_with_its_package(
    world: FakeGitHub, eco: FakeEcosystems, tmp_path: Path
) -> None:
    """A daemon whose PATH has no npm: exit 34, the Debian package and the upstream way
    in the hint, nothing installed."""
    import sys

    only_python = tmp_path / "bin"
    only_python.mkdir()
    (only_python / "python3").symlink_to(sys.executable)
    t = make_tsuku(world, **eco.env(), PATH=str(only_python))
    try:
        t.start()
        eco.publish_npm(npm_tarball("greet", "1.0.0", {"greet": "greet 1.0.0"}))
        local_recipe(t, "greet", recipe("npm_install", "greet", ["greet"], "greet"))
        cp = t.ctl("install", "greet")
        assert cp.returncode == 34, cp.stderr
        assert "npm is not on PATH" in cp.stderr
        assert "apt-get install npm" in cp.stderr
        assert tree(t.home) == []
        assert not any("/-/" in p for p in eco.paths())  # nothing was downloaded
    finally:
        t.stop_all()
        shutil.rmtree(t.home, ignore_errors=True)


def test_plan_gives_a_gem_install_step_the_rubygems_version(
    inst: Tsuku, eco: FakeEcosystems
) -> None:
    """Every ecosystem action has a runner, so its plan is one step, never an
    ``unsupported`` line; an action tsuku does not run (``nix_install``) is one
    (``test_plan.py::test_download_archive_and_a_signed_download_decompose``)."""
    assert {"gem_install", "cargo_install", "go_install"} <= RUNNABLE_ECOSYSTEM_ACTIONS
    eco.add_gem("rubocop", versions=3)
    local_recipe(
        inst,
        "rubocop",
        '[metadata]\nname = "rubocop"\n\n[[steps]]\naction = "gem_install"\n'
        'gem = "rubocop"\nexecutables = ["rubocop"]\n',
    )
    cp = inst.ctl("plan", "rubocop", "--json")
    assert cp.returncode == 0, cp.stderr
    plan = json.loads(cp.stdout)
    assert plan["version"] == "1.2.0"  # from RubyGems' versions API
    assert plan["unsupported"] == []
    assert plan["steps"] == [
        {
            "action": "gem_exec",
            "params": {"executables": ["rubocop"], "gem": "rubocop", "version": "1.2.0"},
            "evaluable": False,
            "deterministic": False,
            "computed_at_download": ["params.lock_data", "params.ruby_version"],
        }
    ]


# Real npm downloads and refuses the tampered bytes (the client's own check is the subject).
@needs_npm
def test_a_tampered_package_is_refused_by_the_clients_own_checks(
    inst: Tsuku, eco: FakeEcosystems
) -> None:
    """The fakes publish the digests of the bytes they serve; served other bytes, npm
    (integrity) refuses them, and nothing is installed (pip: the test below)."""
    good = npm_tarball("greet", "1.0.0", {"greet": "greet 1.0.0"})
    eco.publish_npm(good)
    other = npm_tarball("greet", "1.0.0", {"greet": "evil"})
    eco.npm_files[f"/greet/-/{good.file_name}"] = other.data
    local_recipe(inst, "greet", recipe("npm_install", "greet", ["greet"], "greet"))
    cp = inst.ctl("install", "greet")
    assert cp.returncode == 6, cp.stderr
    assert "EINTEGRITY" in cp.stderr or "integrity" in cp.stderr.lower()
    assert installed(inst) == {}
    assert tree(inst.home) == []


@pytest.mark.slow  # pip makes a real venv first; npm's tampered-package test above stays
def test_a_tampered_wheel_is_refused_by_pips_own_check(inst: Tsuku, eco: FakeEcosystems) -> None:
    """Served other bytes than the index's sha256 names, pip refuses them, and nothing
    is installed."""
    whl = wheel("hello", "1.0", {"hello": "hello 1.0"})
    eco.publish_wheel(whl)
    eco.pypi_files[whl.file_name] = wheel("hello", "1.0", {"hello": "evil"}).data
    local_recipe(inst, "hello", recipe("pipx_install", "hello", ["hello"], "hello"))
    cp = inst.ctl("install", "hello")
    assert cp.returncode == 6, cp.stderr
    assert "DO NOT MATCH THE HASHES" in cp.stderr
    assert installed(inst) == {}
    assert tree(inst.home) == []


# Among the slowest tests (issue 26): two real pip installs into fresh venvs (pip creates a
# real venv and installs from the fake index (seconds of pip per install; the package
# manager is the subject)).
@pytest.mark.slow  # real pip venvs / npm installs; the tampered-package test stays
def test_a_forced_reinstall_of_the_same_version_replaces_it_in_place(
    inst: Tsuku, eco: FakeEcosystems
) -> None:
    eco.publish_wheel(wheel("hello", "1.0", {"hello": "hello 1.0"}))
    local_recipe(inst, "hello", recipe("pipx_install", "hello", ["hello"], "hello"))
    assert inst.ctl("install", "hello").returncode == 0
    marker = inst.home / "tools" / "hello-1.0" / "old-copy"
    marker.write_text("")
    cp = inst.ctl("install", "--force", "hello")
    assert cp.returncode == 0, cp.stderr
    assert not marker.exists()  # a new venv, made where it stays; the old copy deleted
    assert run(inst.home / "bin" / "hello").strip() == "hello 1.0"
    assert sorted(tree(inst.home)) == ["bin/hello", "tools/hello-1.0"]
