"""``tsukuctl create <tool> --from crates:<crate>`` / ``rubygems:<gem>`` / ``go:<module>``
write the recipe from the registry's metadata ($0, no model), validated by installing
it in the validation container (fetched on the host with scripts off) with the real
cargo / gem / go; the recipe then installs like any other. Registries are fakes on
loopback serving packages built in the test."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.integration.install.conftest import (
    events,
    installed,
    needs_cargo,
    needs_gem,
    needs_go,
    tree,
)
from tests.integration.install.test_ecosystem_installs import run
from tsukud.errors import ExitCode
from tsukud.recipe import load_recipe
from tsukud.recipe.model import EcosystemStep
from tsukud.testing.crates import FakeCratesIo, crate
from tsukud.testing.gems import FakeRubyGems, build_gem
from tsukud.testing.goproxy import FakeGoProxy, go_module


def created(t: Tsuku, tool: str) -> list[str]:
    kinds = [e["type"] for p in ("validation.", "generation.", "llm.") for e in events(t, p)]
    assert "validation.passed" in kinds and "generation.completed" in kinds, kinds
    assert not any(k.startswith("llm.") for k in kinds)
    assert tree(t.home) == []  # validation left nothing in the install tree
    return kinds


@pytest.mark.slow  # real cargo/gem/go builds validated in a container
@needs_cargo
def test_create_from_crates_reads_bin_names_or_the_crates_manifest(
    native_inst: Tsuku, crates: FakeCratesIo
) -> None:
    t = native_inst
    crates.publish(
        crate("hello-rs", "0.3.0", {"hello-rs": "hello-rs 0.3.0", "hr": "hr 0.3.0"}),
        description="Says hello",
        repository="https://github.com/fake/hello-rs",
    )
    cp = t.ctl("create", "hello-rs", "--from", "crates:hello-rs", "--yes")
    assert cp.returncode == 0, cp.stderr
    assert "Validation: passed on" in cp.stdout and "in a container" in cp.stdout
    assert "host prefix" not in cp.stdout
    recipe = load_recipe(t.home / "recipes" / "hello-rs.toml")
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == "cargo_install"
    assert (step.package_name, step.executables) == ("hello-rs", ("hello-rs", "hr"))
    assert recipe.version is None and recipe.verify is not None
    assert recipe.verify.command == "hello-rs --version"
    assert recipe.metadata.homepage == "https://github.com/fake/hello-rs"
    created(t, "hello-rs")
    # bin_names known: the .crate was downloaded once, by cargo in the validation
    downloads = [p for p in crates.paths() if p.endswith("/download")]
    assert downloads == ["/api/v1/crates/hello-rs/0.3.0/download"]

    cp = t.ctl("install", "hello-rs")
    assert cp.returncode == 0, cp.stderr
    assert run(t.home / "bin" / "hr").strip() == "hr 0.3.0"

    # crates.io has not analysed this one (bin_names null): auto-discovered binaries
    # are read from the .crate's Cargo.toml and file list
    crates.publish(
        crate("auto-rs", "1.0.0", {"auto-rs": "auto-rs 1.0.0", "auto-two": "two"}, declared=False),
        bin_names=False,
    )
    cp = t.ctl("create", "auto-rs", "--from", "crates:auto-rs", "--json", "--skip-validation")
    assert cp.returncode == 0, cp.stderr
    res = json.loads(cp.stdout)
    assert (res["repo"], res["tag"], res["generated_by"]) == (
        "crates:auto-rs",
        "1.0.0",
        "crates builder",
    )
    assert 'executables = ["auto-rs", "auto-two"]' in res["recipe"]


@pytest.mark.slow  # real cargo/gem/go builds validated in a container
@needs_gem
def test_create_from_rubygems_reads_executables_from_the_gem(
    native_inst: Tsuku, gems: FakeRubyGems, tmp_path: Path
) -> None:
    t = native_inst
    gems.publish(build_gem(tmp_path, "hello-gem", "1.0.0", {"hello": "hello 1.0.0"}))
    gems.publish(
        build_gem(tmp_path, "hello-gem", "2.1.0", {"hello": "hello 2.1.0", "hi": "hi 2.1.0"})
    )
    cp = t.ctl("create", "hello", "--from", "rubygems:hello-gem", "--yes")
    assert cp.returncode == 0, cp.stderr
    recipe = load_recipe(t.home / "recipes" / "hello.toml")
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == "gem_install"
    assert (step.package_name, step.executables) == ("hello-gem", ("hello", "hi"))
    created(t, "hello")
    assert "GET /gems/hello-gem-2.1.0.gem" in gems.paths()

    cp = t.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr
    assert run(t.home / "bin" / "hi", "there").strip() == "hi 2.1.0 there"


@pytest.mark.slow  # real cargo/gem/go builds validated in a container
@needs_go
def test_create_from_go_names_the_binary_after_the_module(
    native_inst: Tsuku, goproxy: FakeGoProxy
) -> None:
    t = native_inst
    goproxy.publish(go_module("example.com/Fake/hellogo/v2", "v2.0.1", "hellogo 2.0.1"))
    cp = t.ctl("create", "hellogo", "--from", "go:example.com/Fake/hellogo/v2", "--yes")
    assert cp.returncode == 0, cp.stderr
    recipe = load_recipe(t.home / "recipes" / "hellogo.toml")
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == "go_install"
    # /v2 is a major version, not the command: go install names it hellogo
    assert (step.package_name, step.executables) == ("example.com/Fake/hellogo/v2", ("hellogo",))
    created(t, "hellogo")

    cp = t.ctl("install", "hellogo")
    assert cp.returncode == 0, cp.stderr
    assert installed(t)["hellogo"]["version"] == "2.0.1"
    assert run(t.home / "bin" / "hellogo").strip() == "hellogo 2.0.1"


@pytest.mark.slow  # real cargo/gem/go builds validated in a container
@needs_go
def test_create_from_go_finds_the_one_command_of_a_module(
    native_inst: Tsuku, goproxy: FakeGoProxy
) -> None:
    """A module whose only command lives in a sub-directory the installer cannot infer
    the module from: the recipe installs that package and names the module in
    [version]; a command's package path names it directly."""
    t = native_inst
    goproxy.publish(
        go_module("example.com/fake/kit", "v1.4.0", None, mains={"tools/kt": "kt 1.4.0"})
    )
    cp = t.ctl("create", "kt", "--from", "go:example.com/fake/kit", "--yes")
    assert cp.returncode == 0, cp.stderr
    recipe = load_recipe(t.home / "recipes" / "kt.toml")
    (step,) = recipe.steps
    assert isinstance(step, EcosystemStep) and step.action == "go_install"
    assert (step.package_name, step.executables) == ("example.com/fake/kit/tools/kt", ("kt",))
    assert recipe.version is not None and recipe.version.source == "goproxy"
    assert recipe.version.module == "example.com/fake/kit" and recipe.version.extra == {}
    cp = t.ctl("install", "kt")
    assert cp.returncode == 0, cp.stderr
    assert run(t.home / "bin" / "kt").strip() == "kt 1.4.0"

    # without /cmd/ (or github.com/<owner>/<repo>) the path is taken for the module
    cp = t.ctl("create", "kt2", "--from", "go:example.com/fake/kit/tools/kt", "-o", "-")
    assert cp.returncode == ExitCode.GENERAL, cp.stderr
    assert "goproxy package example.com/fake/kit/tools/kt does not exist" in cp.stderr


def test_builder_refusals(native_inst: Tsuku, crates: FakeCratesIo, goproxy: FakeGoProxy) -> None:
    """Names a registry cannot have (usage), packages that are not there or install
    nothing runnable: refused, nothing written, nothing installed."""
    t = native_inst
    for source in ("crates:../x", "rubygems:-x", "go:not-a-path", "go:https://evil.example/x"):
        cp = t.ctl("create", "x", "--from", source, "--yes")
        assert cp.returncode == ExitCode.USAGE, (source, cp.stderr)
    cp = t.ctl("create", "ghost", "--from", "crates:ghost", "--yes")
    assert cp.returncode == ExitCode.GENERAL, cp.stderr
    assert "crates_io package ghost does not exist" in cp.stderr
    cp = t.ctl("create", "ghost", "--from", "go:example.com/ghost", "--yes")
    assert cp.returncode == ExitCode.GENERAL, cp.stderr
    assert "goproxy package example.com/ghost does not exist" in cp.stderr
    # a library crate (no binary) and a module whose commands are in sub-packages
    crates.publish(crate("libonly", "1.0.0", {}), bin_names=True)
    cp = t.ctl("create", "libonly", "--from", "crates:libonly", "--yes")
    assert cp.returncode == ExitCode.GENERAL and "declares no binary" in cp.stderr
    mains = {"cmd/tool-a": "a", "cmd/tool-b": "b"}
    goproxy.publish(go_module("example.com/fake/tools", "v1.0.0", None, mains=mains))
    cp = t.ctl("create", "tools", "--from", "go:example.com/fake/tools", "--yes")
    assert cp.returncode == ExitCode.GENERAL, cp.stderr
    assert "example.com/fake/tools is not a main package (commands: " in cp.stderr
    assert "go:example.com/fake/tools/cmd/tool-a, go:example.com/fake/tools/cmd/tool-b" in (
        cp.stderr
    )
    assert not (t.home / "recipes").exists()
    assert tree(t.home) == []
