"""A recipe's ``pip_exec`` step installs through a real daemon with the real
``python3 -m venv`` + pip, from the fake package index on loopback: only the wheels its
lock pins, by their sha256, and only the executables it declares reach ``bin/``.

The refusals come first and cost no venv: a pin whose hash the index does not serve,
and a pin whose hash names a source package (whose build backend is code that would
run on this host: here it would write a marker file).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import Tsuku
from tests.fakes.ecosystems import FakeEcosystems
from tests.integration.install.conftest import installed, tree
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.testing.packages import sdist, wheel


def lock(*pins: tuple[str, str, str]) -> str:
    """``(name, version, sha256)`` pins as tsuku writes its locks."""
    return "".join(f"{n}=={v} \\\n    --hash=sha256:{sha}\n" for n, v, sha in pins)


def recipe(pins: str, executables: str = '["hello"]') -> str:
    return (
        '[metadata]\nname = "hello"\ndescription = "hello for tests"\n\n'
        '[[steps]]\naction = "pip_exec"\npackage = "hello"\nversion = "1.0"\n'
        f"executables = {executables}\nlocked_requirements = '''\n{pins}'''\n\n"
        '[verify]\ncommand = "hello"\npattern = "hello 1.0"\n'
    )


def test_pip_exec_installs_only_pinned_wheels_and_only_declared_executables(
    eco_inst: Tsuku, eco: FakeEcosystems, tmp_path: Path
) -> None:
    inst = eco_inst
    hello = wheel("hello", "1.0", {"hello": "hello 1.0", "hello-admin": "admin"})
    helper = wheel("hello-helper", "2.0", {})
    eco.publish_wheel(hello)
    eco.publish_wheel(helper)
    marker = tmp_path / "built-on-the-host"
    prelude = f"open({str(marker)!r}, 'w').write('ran')"
    builder = sdist("builder", "1.0", {"builder": "builder"}, prelude=prelude)
    eco.publish_sdist(builder)
    good = ("hello", "1.0", hello.sha256)

    # A hash the index does not serve: refused before a venv is made.
    local_recipe(inst, "hello", recipe(lock(("hello", "1.0", "ab" * 32))))
    cp = inst.ctl("install", "hello")
    assert cp.returncode == 6, cp.stderr
    assert "hello==1.0: no file of the index has the sha256 the recipe pins (abababababab)" in (
        cp.stderr
    )
    assert hello.file_name in cp.stderr  # what the index does list
    assert installed(inst) == {} and tree(inst.home) == []

    # A source package pinned: its build would run its code here; refused, never run.
    local_recipe(inst, "hello", recipe(lock(good, ("builder", "1.0", builder.sha256))))
    cp = inst.ctl("install", "hello")
    assert cp.returncode == 6, cp.stderr
    assert "builder==1.0: the lock pins only a source package" in cp.stderr
    assert not marker.exists()
    assert installed(inst) == {} and tree(inst.home) == []
    # An option in the lock (another index) never reaches pip.
    local_recipe(inst, "hello", recipe("--extra-index-url http://127.0.0.1:9/\n" + lock(good)))
    cp = inst.ctl("install", "hello")
    assert cp.returncode == 6 and "is not name==version" in cp.stderr, cp.stderr

    # The lock as pinned: both wheels, and bin/ gets only the declared executable.
    pins = lock(good, ("hello-helper", "2.0", helper.sha256))
    local_recipe(inst, "hello", recipe(pins))
    plan = json.loads(inst.ctl("plan", "hello", "--json", check=True).stdout)
    assert plan["version"] == "1.0" and plan["unsupported"] == []
    assert [(s["action"], s["params"]["locked_requirements"]) for s in plan["steps"]] == [
        ("pip_exec", pins)
    ]
    cp = inst.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr
    assert sorted(p.name for p in (inst.home / "bin").iterdir()) == ["hello"]
    out = subprocess.run(
        [str(inst.home / "bin" / "hello"), "x"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "hello 1.0 x"
    row = installed(inst)["hello"]
    assert row["version"] == "1.0" and row["binaries"] == ["hello"]
    venv = inst.home / "tools" / "hello-1.0" / "venvs" / "hello"
    site = next(venv.glob("lib/python3*/site-packages"))
    venv_own = ("pip-", "setuptools-")  # a venv's own pip, when the host has no pip wheel
    assert {p.name for p in site.glob("*.dist-info") if not p.name.startswith(venv_own)} == {
        "hello-1.0.dist-info",
        "hello_helper-2.0.dist-info",
    }
    assert not any(site.glob("builder*"))
    assert inst.ctl("remove", "hello").returncode == 0
    assert installed(inst) == {} and tree(inst.home) == []
