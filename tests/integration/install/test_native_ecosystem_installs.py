"""``cargo_install``, ``gem_install`` and ``go_install`` recipes install, verify and
remove through a real daemon, with the real ``cargo``, ``gem`` and ``go``, from fake
registries on loopback (a sparse crates index, a RubyGems server, a Go module proxy)
serving packages built in the test. Each compile is a tiny package without
dependencies (cargo: ~2 s). cargo reads the fake's sparse index when it is 1.68 or
newer, and its git index in any case (Debian bookworm's cargo is 1.65)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import (
    events,
    installed,
    make_tsuku,
    needs_cargo,
    needs_gem,
    needs_go,
    running,
    tree,
)
from tests.integration.install.test_ecosystem_installs import run
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.install.ecosystem import cargo, confine
from tsukud.install.ecosystem.cargo import SPARSE_SINCE, parse_version
from tsukud.testing.crates import FakeCratesIo, crate
from tsukud.testing.gems import FakeRubyGems, Gem, build_gem
from tsukud.testing.goproxy import FakeGoProxy, go_module

DEBIAN_CARGO = Path("/usr/bin/cargo")


def cargo_version(program: str | Path) -> tuple[int, int] | None:
    out = subprocess.run([str(program), "--version"], capture_output=True, text=True).stdout
    return parse_version(out)


def old_debian_cargo() -> bool:
    if not DEBIAN_CARGO.exists():
        return False
    version = cargo_version(DEBIAN_CARGO)
    return version is not None and version < SPARSE_SINCE


@pytest.fixture
def cargo_daemon(world: FakeGitHub, crates: FakeCratesIo) -> Iterator[Callable[..., Tsuku]]:
    """Start a daemon with the fake crates.io's git or sparse index (and a PATH)."""
    with ExitStack() as stack:

        def start(*, git: bool, path: str | None = None) -> Tsuku:
            t = make_tsuku(world, **crates.env(git=git))
            if path is not None:
                t.env["PATH"] = path
            return stack.enter_context(running(t))

        yield start


def recipe(name: str, action: str, key: str, package: str, executables: list[str]) -> str:
    return (
        f'[metadata]\nname = "{name}"\ndescription = "{package} for tests"\n\n'
        f'[[steps]]\naction = "{action}"\n{key} = "{package}"\n'
        f"executables = {json.dumps(executables)}\n\n"
        f'[verify]\ncommand = "{executables[0]}"\npattern = "{{version}}"\n'
    )


def completed(t: Tsuku) -> dict[str, object]:
    payload: dict[str, object] = [e for e in events(t) if e["type"] == "install.completed"][-1][
        "payload"
    ]
    return payload


def publish_hello_rs(crates: FakeCratesIo) -> None:
    crates.publish(crate("hello-rs", "0.1.0", {"hello-rs": "hello-rs 0.1.0"}))
    crates.publish(crate("hello-rs", "0.2.0", {"hello-rs": "hello-rs 0.2.0", "hr": "hr 0.2.0"}))


HELLO_RS = recipe("hello-rs", "cargo_install", "crate", "hello-rs", ["hello-rs", "hr"])


def check_cargo_install(t: Tsuku, crates: FakeCratesIo, index_file: str) -> None:
    local_recipe(t, "hello-rs", HELLO_RS)
    cp = t.ctl("install", "hello-rs")
    assert cp.returncode == 0, cp.stderr
    assert run(t.home / "bin" / "hello-rs", "x").strip() == "hello-rs 0.2.0 x"
    assert run(t.home / "bin" / "hr").strip() == "hr 0.2.0"
    row = installed(t)["hello-rs"]
    assert row["version"] == "0.2.0" and row["binaries"] == ["hello-rs", "hr"]
    # cargo read the fake's index and fetched the pinned version's .crate
    assert index_file in crates.paths()
    assert "/api/v1/crates/hello-rs/0.2.0/download" in crates.paths()
    assert "/api/v1/crates/hello-rs/0.1.0/download" not in crates.paths()
    binaries = completed(t)["binaries"]
    assert isinstance(binaries, dict) and binaries["hr"]["path"] == "bin/hr"
    # the build happened in the scratch directory: no target/ in the tool's directory
    tool_dir = t.home / "tools" / "hello-rs-0.2.0"
    assert sorted(p.name for p in tool_dir.iterdir()) == [".crates.toml", ".crates2.json", "bin"]

    assert t.ctl("verify", "hello-rs").returncode == 0
    assert t.ctl("remove", "hello-rs").returncode == 0
    assert installed(t) == {}
    assert tree(t.home) == []


@needs_cargo
def test_cargo_install_from_a_sparse_index(
    cargo_daemon: Callable[..., Tsuku], crates: FakeCratesIo
) -> None:
    """A cargo 1.68+ installs from the sparse index; an older one is refused up front,
    naming rustup (exit 34), nothing installed. The cargo is the one the install runs:
    as root, one that nobody can run (a rustup under /root is not: /usr/bin's then)."""
    publish_hello_rs(crates)
    t = cargo_daemon(git=False)
    program = Path(shutil.which("cargo") or "cargo")
    if confine.available():
        program = confine.toolchain_for_nobody(cargo.TOOLCHAIN, program).program
    version = cargo_version(program)
    if version is not None and version >= SPARSE_SINCE:
        check_cargo_install(t, crates, "/index/he/ll/hello-rs")
        return
    local_recipe(t, "hello-rs", HELLO_RS)
    cp = t.ctl("install", "hello-rs")
    assert cp.returncode == 34, cp.stderr
    assert "needs cargo 1.68 or newer" in cp.stderr and "rustup" in cp.stderr
    assert tree(t.home) == []


@pytest.mark.slow  # real cargo/gem installs; test_untrusted_code npm stays
@needs_cargo
def test_cargo_install_from_a_git_index(
    cargo_daemon: Callable[..., Tsuku], crates: FakeCratesIo
) -> None:
    publish_hello_rs(crates)
    t = cargo_daemon(git=True)
    check_cargo_install(t, crates, "/index.git/info/refs")


@pytest.mark.slow  # two daemons, a compile with Debian's rustc: ~11 s
@pytest.mark.skipif(not old_debian_cargo(), reason="no Debian cargo older than 1.68")
def test_debians_old_cargo_installs_from_git_and_refuses_sparse(
    cargo_daemon: Callable[..., Tsuku], crates: FakeCratesIo
) -> None:
    """Debian bookworm's cargo (1.65, with its rustc) alone on PATH."""
    publish_hello_rs(crates)
    t = cargo_daemon(git=True, path="/usr/bin:/bin")
    check_cargo_install(t, crates, "/index.git/info/refs")
    sparse = cargo_daemon(git=False, path="/usr/bin:/bin")
    local_recipe(sparse, "hello-rs", HELLO_RS)
    cp = sparse.ctl("install", "hello-rs")
    assert cp.returncode == 34, cp.stderr
    assert "/usr/bin/cargo is cargo 1.65" in cp.stderr
    assert tree(sparse.home) == []


@pytest.mark.slow  # real cargo/gem installs; test_untrusted_code npm stays
@needs_gem
def test_gem_install_recipe_installs_verifies_and_removes(
    native_inst: Tsuku, gems: FakeRubyGems, tmp_path: Path
) -> None:
    gems.publish(build_gem(tmp_path, "hello-gem", "1.0.0", {"hello": "hello 1.0.0"}))
    gems.publish(
        build_gem(tmp_path, "hello-gem", "1.2.0", {"hello": "hello 1.2.0", "hello-x": "x 1.2.0"})
    )
    local_recipe(
        native_inst, "hello-gem", recipe("hello-gem", "gem_install", "gem", "hello-gem", ["hello"])
    )

    cp = native_inst.ctl("install", "hello-gem")
    assert cp.returncode == 0, cp.stderr
    # the wrapper finds its gem whatever GEM_HOME the caller has
    out = subprocess.run(
        [str(native_inst.home / "bin" / "hello"), "a", "b"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "GEM_HOME": "/nonexistent", "GEM_PATH": "/nonexistent"},
    ).stdout
    assert out.strip() == "hello 1.2.0 a b"
    assert installed(native_inst)["hello-gem"]["version"] == "1.2.0"
    tool_dir = native_inst.home / "tools" / "hello-gem-1.2.0"
    assert (tool_dir / "gems" / "hello-gem-1.2.0" / "exe" / "hello").is_file()
    assert (tool_dir / "gem-bin" / "hello-x").is_file()  # installed, but not linked
    assert not (native_inst.home / "bin" / "hello-x").exists()
    wrapper = (tool_dir / "bin" / "hello").read_text()
    assert f"GEM_HOME={tool_dir}\n" in wrapper and f"GEM_PATH={tool_dir}\n" in wrapper
    assert gems.paths()[-2:] == [
        "GET /quick/Marshal.4.8/hello-gem-1.2.0.gemspec.rz",
        "GET /gems/hello-gem-1.2.0.gem",
    ]

    assert native_inst.ctl("verify", "hello-gem").returncode == 0
    cp = native_inst.ctl("install", "hello-gem@1.0.0")  # an exact older version replaces it
    assert cp.returncode == 0, cp.stderr
    assert run(native_inst.home / "bin" / "hello").strip() == "hello 1.0.0"
    assert native_inst.ctl("remove", "hello-gem").returncode == 0
    assert installed(native_inst) == {}
    assert tree(native_inst.home) == []


@needs_go
def test_go_install_recipe_installs_verifies_and_removes(
    native_inst: Tsuku, goproxy: FakeGoProxy
) -> None:
    goproxy.publish(go_module("example.com/Fake/hellogo", "v1.0.0", "hellogo 1.0.0"))
    goproxy.publish(go_module("example.com/Fake/hellogo", "v1.3.0", "hellogo 1.3.0"))
    local_recipe(
        native_inst,
        "hellogo",
        recipe("hellogo", "go_install", "module", "example.com/Fake/hellogo", ["hellogo"]),
    )

    cp = native_inst.ctl("install", "hellogo")
    assert cp.returncode == 0, cp.stderr
    assert run(native_inst.home / "bin" / "hellogo", "z").strip() == "hellogo 1.3.0 z"
    row = installed(native_inst)["hellogo"]
    assert row["version"] == "1.3.0" and row["binaries"] == ["hellogo"]
    paths = goproxy.paths()
    assert "/example.com/!fake/hellogo/@v/list" in paths  # the version, from the proxy
    assert "/example.com/!fake/hellogo/@v/v1.3.0.zip" in paths
    assert not any(p.startswith("/sumdb/") for p in paths)
    tool_dir = native_inst.home / "tools" / "hellogo-1.3.0"
    assert sorted(p.name for p in tool_dir.iterdir()) == ["bin"]  # caches stayed in scratch

    assert native_inst.ctl("verify", "hellogo").returncode == 0
    assert native_inst.ctl("remove", "hellogo").returncode == 0
    assert installed(native_inst) == {}
    assert tree(native_inst.home) == []


@needs_go
def test_go_install_of_a_command_inside_a_module(native_inst: Tsuku, goproxy: FakeGoProxy) -> None:
    """A package path inside a module: its versions are the module's (tsuku's /cmd/
    inference, or the recipe's [version] module), and go install builds that command."""
    for v in ("v0.9.0", "v1.1.0"):
        mains = {"cmd/kit-a": f"kit-a {v}", "tools/kit-b": f"kit-b {v}"}
        goproxy.publish(go_module("example.com/fake/kit", v, None, mains=mains))
    inferred = recipe("kit-a", "go_install", "module", "example.com/fake/kit/cmd/kit-a", ["kit-a"])
    local_recipe(native_inst, "kit-a", inferred)
    cp = native_inst.ctl("install", "kit-a")
    assert cp.returncode == 0, cp.stderr
    assert run(native_inst.home / "bin" / "kit-a").strip() == "kit-a v1.1.0"
    assert "/example.com/fake/kit/@v/list" in goproxy.paths()

    # no /cmd/ in the path: only [version] module names the module
    kit_b = recipe("kit-b", "go_install", "module", "example.com/fake/kit/tools/kit-b", ["kit-b"])
    local_recipe(native_inst, "kit-b", kit_b)
    cp = native_inst.ctl("install", "kit-b")
    assert cp.returncode == 4, cp.stderr
    assert "goproxy package example.com/fake/kit/tools/kit-b does not exist" in cp.stderr
    declared = '[version]\nsource = "goproxy"\nmodule = "example.com/fake/kit"\n\n[[steps]]'
    local_recipe(native_inst, "kit-b", kit_b.replace("[[steps]]", declared))
    cp = native_inst.ctl("install", "kit-b@0.9.0")
    assert cp.returncode == 0, cp.stderr
    assert run(native_inst.home / "bin" / "kit-b").strip() == "kit-b v0.9.0"


def test_missing_toolchains_are_named_with_their_debian_packages(
    world: FakeGitHub, crates: FakeCratesIo, gems: FakeRubyGems, goproxy: FakeGoProxy
) -> None:
    """A daemon whose PATH has none of cargo, gem, go: each recipe exits 34 naming the
    program and its Debian package, nothing installed."""
    import sys

    crates.publish(crate("hello-rs", "0.1.0", {"hello-rs": "hello-rs 0.1.0"}))
    goproxy.publish(go_module("example.com/fake/hellogo", "v1.0.0", "hellogo 1.0.0"))
    # never downloaded: the toolchain is looked for before the package manager runs
    gems.publish(Gem("hello-gem", "1.0.0", b"not fetched", b"not fetched", ("hello",)))
    t = make_tsuku(world, **crates.env(), **gems.env(), **goproxy.env())
    bare = t.home.parent / f"{t.home.name}-path"
    bare.mkdir()
    (bare / "python3").symlink_to(sys.executable)
    t.env["PATH"] = str(bare)
    t.env.pop("HOME", None)
    try:
        with running(t):
            local_recipe(
                t, "hello-rs", recipe("hello-rs", "cargo_install", "crate", "hello-rs", ["x"])
            )
            local_recipe(
                t,
                "hellogo",
                recipe("hellogo", "go_install", "module", "example.com/fake/hellogo", ["hellogo"]),
            )
            local_recipe(
                t, "hello-gem", recipe("hello-gem", "gem_install", "gem", "hello-gem", ["hello"])
            )
            for tool, program, package in (
                ("hello-rs", "cargo", "cargo"),
                ("hellogo", "go", "golang-go"),
                ("hello-gem", "gem", "ruby"),
            ):
                cp = t.ctl("install", tool)
                assert cp.returncode == 34, cp.stderr
                assert f"{program} is not on PATH" in cp.stderr
                assert f"apt-get install {package}" in cp.stderr
            assert tree(t.home) == []
    finally:
        shutil.rmtree(bare, ignore_errors=True)
