"""``tsukuctl create <tool> --from npm:<package>`` / ``--from pypi:<project>`` write the
recipe from the registry's metadata ($0, no model), validated by installing it in the
validation container (fetched on the host with scripts off) with the real npm / venv +
pip; the recipe then installs like any other. Registries are fakes on loopback serving
packages built in the test."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.integration.install.conftest import events, installed, tree
from tsukud.errors import ExitCode
from tsukud.recipe import load_recipe
from tsukud.recipe.model import EcosystemStep
from tsukud.testing.packages import npm_tarball, wheel

needs_npm = pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")


@pytest.mark.slow  # real pip/npm builds validated in a container
@needs_npm
def test_create_from_npm_writes_a_validated_recipe(eco_inst: Tsuku, eco: FakeEcosystems) -> None:
    t = eco_inst
    eco.publish_npm(
        npm_tarball("@fake/greet", "1.2.0", {"greet": "greet 1.2.0"}, bin_as_string=True)
    )
    cp = t.ctl("create", "greet", "--from", "npm:@fake/greet", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "Validation: passed on" in cp.stdout and "in a container" in cp.stdout
    assert "host prefix" not in cp.stdout
    recipe = load_recipe(t.home / "recipes" / "greet.toml")
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == "npm_install"
    assert (step.package_name, step.executables) == ("@fake/greet", ("greet",))  # string bin
    assert recipe.version is None and recipe.verify is not None
    assert (recipe.verify.command, recipe.verify.pattern) == ("greet --version", "{version}")
    assert not (t.home / "validate").exists() or not any((t.home / "validate").iterdir())
    kinds = [e["type"] for p in ("validation.", "generation.", "llm.") for e in events(t, p)]
    assert "validation.passed" in kinds and "generation.completed" in kinds
    assert not any(k.startswith("llm.") for k in kinds)

    cp = t.ctl("install", "greet")
    assert cp.returncode == 0, cp.stderr
    assert installed(t)["greet"]["version"] == "1.2.0"


# Among the slowest tests (issue 26): two creates, each validated by a real pipx install in
# the container (pip creates a real venv and installs from the fake index (seconds of pip
# per install; the package manager is the subject)).
@pytest.mark.slow  # real pip/npm builds validated in a container
def test_create_from_pypi_reads_console_scripts_from_the_wheel(
    eco_inst: Tsuku, eco: FakeEcosystems
) -> None:
    t = eco_inst
    eco.publish_wheel(wheel("hello", "1.0", {"hello": "hello 1.0"}))
    eco.publish_wheel(wheel("hello", "2.0", {"hello": "hello 2.0", "hello-gui": "gui 2.0"}))
    cp = t.ctl("create", "hello", "--from", "pypi:hello", "--json", "--version", "1.0")
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert (res["repo"], res["tag"], res["generated_by"]) == ("pypi:hello", "1.0", "pypi builder")
    assert res["validation"]["status"] == "passed"
    assert res.get("cost_usd", 0.0) == 0.0 and "provider" not in res  # no model asked
    assert "/pypi-org/packages/hello-1.0-py3-none-any.whl" in eco.paths()

    cp = t.ctl("create", "hello", "--from", "pypi:hello", "--yes")
    assert cp.returncode == 0, cp.stderr
    recipe = load_recipe(t.home / "recipes" / "hello.toml")
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == "pipx_install"
    assert step.executables == ("hello", "hello-gui")
    assert tree(t.home) == []  # validation left nothing in the install tree


def test_builder_refusals(eco_inst: Tsuku, eco: FakeEcosystems) -> None:
    t = eco_inst
    eco.publish_wheel(wheel("hello", "1.0", {}))  # a library: no console script
    cp = t.ctl("create", "hello", "--from", "pypi:hello", "--yes")
    assert cp.returncode == ExitCode.GENERAL, cp.stderr
    assert "declares no console script" in cp.stderr
    cp = t.ctl("create", "x", "--from", "npm:git+https://evil.example/x", "--yes")
    assert cp.returncode == ExitCode.USAGE, cp.stderr
    cp = t.ctl("create", "rg", "--from", "crates:../ripgrep", "--yes")
    assert cp.returncode == ExitCode.USAGE and "expected crates:<a crate name>" in cp.stderr
    cp = t.ctl("create", "ghost", "--from", "pypi:ghost", "--yes")
    assert cp.returncode == ExitCode.GENERAL and "pypi package ghost does not exist" in cp.stderr
    assert not (t.home / "recipes").exists()


# Among the slowest tests (issue 26): validation by a real pipx install in the container
# (pip creates a real venv and installs from the fake index (seconds of pip per install; the
# package manager is the subject)).
@pytest.mark.slow  # real pip/npm builds validated in a container
def test_a_recipe_that_fails_on_the_host_is_not_written(
    eco_inst: Tsuku, eco: FakeEcosystems
) -> None:
    """A tool whose --version does not print its version fails validation: exit 9-ish
    validation_failed with the output, nothing written."""
    t = eco_inst
    eco.publish_wheel(wheel("quiet", "3.1", {"quiet": "no version here"}))
    cp = t.ctl("create", "quiet", "--from", "pypi:quiet", "--yes")
    assert cp.returncode != 0
    assert "did not validate" in cp.stderr and "Missing: 3.1" in cp.stderr
    assert not (t.home / "recipes" / "quiet.toml").exists()
    kinds = [e["type"] for p in ("validation.", "generation.") for e in events(t, p)]
    assert "validation.failed" in kinds and "generation.failed" in kinds


@pytest.mark.slow  # real pip/npm builds validated in a container
@needs_npm
def test_ctrl_c_during_validation_says_nothing_was_written(
    eco_inst: Tsuku, eco: FakeEcosystems
) -> None:
    """A $0 create interrupted while it validates (npm waits on the tarball): the run is
    cancelled in the daemon, one line says nothing was written (not "installed"), 130."""
    t = eco_inst
    eco.publish_npm(npm_tarball("@fake/greet", "1.2.0", {"greet": "greet 1.2.0"}))
    eco.file_delay["npm"] = 30.0
    proc = subprocess.Popen(
        [sys.executable, "-m", "tsukuctl", "create", "greet", "--from", "npm:@fake/greet",
         "--yes"],
        env=t.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        said = []
        for line in proc.stderr:
            said.append(line)
            if line.startswith("fetching npm:@fake/greet@1.2.0 with its scripts off"):
                break
        else:
            raise AssertionError(f"create ended before validating: {''.join(said)}")
        deadline = time.monotonic() + 20
        while not any("/-/" in p for p in eco.paths()) and time.monotonic() < deadline:
            time.sleep(0.05)  # npm is waiting on the tarball
        proc.send_signal(signal.SIGINT)
        out, rest = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == ExitCode.CANCELLED == 130, rest
    assert rest.splitlines()[-1:] == ["cancelled: nothing was written"], rest
    assert out == ""
    assert not (t.home / "recipes" / "greet.toml").exists()
    # The run's last event says why it ended, as a model's run does.
    (failed,) = events(t, "generation.")
    assert failed["type"] == "generation.failed"
    assert failed["payload"]["error_code"] == "cancelled"
    assert failed["payload"]["stage"] == "validation"
    assert failed["payload"]["run_cost_usd"] == 0.0
