"""Homebrew recipes install through a real daemon from the fake formulae API and bottle
registry, as a new user runs them: bottles compiled in the test (a real executable
linked against a library from a dependency bottle, placeholder RPATH and interpreter),
relocated so the tool runs; the dependency is installed first and cannot be removed
while the tool needs it; a tampered blob and a platform without a bottle are refused."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes import bottles
from tests.fakes.github import FakeGitHub
from tests.integration.install.conftest import (
    events,
    from_the_registry,
    installed,
    make_tsuku,
    running,
    tree,
)
from tests.integration.install.test_recipe_errors import local_recipe
from tsukud.recipe import host_platform
from tsukud.recipe.homebrew import platform_tags
from tsukud.testing.homebrew import FakeHomebrew

HOST_TAG = platform_tags(host_platform())[0]
pytestmark = pytest.mark.skipif(
    host_platform().os != "linux" or not bottles.have_gcc(), reason="needs Linux and gcc"
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> bottles.Built:
    return bottles.build(tmp_path_factory.mktemp("bottles"))


@pytest.fixture
def brew() -> Iterator[FakeHomebrew]:
    with FakeHomebrew() as fake:
        yield fake


@pytest.fixture
def t(world: FakeGitHub, brew: FakeHomebrew) -> Iterator[Tsuku]:
    tsuku = make_tsuku(world, **brew.env())
    try:
        tsuku.start()
        local_recipe(tsuku, "libgreet", bottles.libgreet_recipe())
        local_recipe(tsuku, "hello", bottles.hello_recipe())
        yield tsuku
    finally:
        tsuku.stop_all()
        shutil.rmtree(tsuku.home, ignore_errors=True)


@pytest.fixture
def new_user(world: FakeGitHub, brew: FakeHomebrew) -> Iterator[Tsuku]:
    """A daemon with no recipe of its own: every recipe comes from the registry."""
    with running(make_tsuku(world, **brew.env())) as t:
        yield t


def publish(brew: FakeHomebrew, built: bottles.Built) -> None:
    brew.publish("libgreet", bottles.LIB_VERSION, {HOST_TAG: bottles.libgreet_bottle(built)})
    brew.publish("hello", "1.5", {HOST_TAG: bottles.hello_bottle(built, "1.5")}, current=False)
    brew.publish(
        "hello",
        "2.0",
        {HOST_TAG: bottles.hello_bottle(built, "2.0", "2.0_1"), "arm64_sonoma": b"mac"},
        revision=1,
        dependencies=["libgreet"],
    )


def run(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(path), *args], capture_output=True, text=True, check=False)


def test_a_bottle_with_a_dependency_installs_runs_verifies_and_guards_its_dependency(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    cp = t.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr

    rows = installed(t)
    assert rows["hello"]["version"] == "2.0" and rows["libgreet"]["version"] == "1.0"
    ran = run(t.home / "bin" / "hello")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"{bottles.GREETING} (2.0)")
    tool = Path(rows["hello"]["install_dir"])
    lib = Path(rows["libgreet"]["install_dir"])
    # Text placeholders point at the tools' own directories; the binary blob is intact.
    assert (tool / "bin" / "hello-config").read_text() == f"#!/bin/sh\necho {tool}/share/hello\n"
    assert (lib / "lib" / "pkgconfig" / "greet.pc").read_text().startswith(f"prefix={lib}\n")
    assert (tool / "share" / "hello" / "blob.bin").read_bytes() == bottles.BLOB
    assert (lib / "lib" / "libgreet.so").is_symlink()

    done = {
        e["payload"]["tool"]: e["payload"] for e in events(t) if e["type"] == "install.completed"
    }
    assert done["hello"]["runtime_dependencies"] == ["libgreet"]
    # Placeholders relocation could not rewrite are recorded and said, not dropped.
    assert done["hello"]["relocation"] == bottles.HELLO_RELOCATION
    assert done["libgreet"]["relocation"]["left_alone"] == []
    warnings = [line for line in cp.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        "warning: hello: 2 files keep a Homebrew placeholder that could not be rewritten "
        "(@@HOMEBREW_PREFIX@@): bin/hello, share/hello/blob.bin"
    ]
    (asset,) = done["hello"]["assets"]
    tarball = bottles.hello_bottle(built, "2.0", "2.0_1")
    assert asset["sha256"] == hashlib.sha256(tarball).hexdigest()
    assert asset["checked_against"] == ["bottle_digest"]
    assert asset["name"] == f"hello--2.0_1.{HOST_TAG}.bottle.tar.gz"
    assert all(r.headers.get("authorization") is None for r in brew.blob_requests())

    assert t.ctl("verify", "hello").returncode == 0

    refused = t.ctl("remove", "libgreet")
    assert refused.returncode == 1, refused.stderr
    assert "libgreet is needed by hello" in refused.stderr
    assert run(t.home / "bin" / "hello").returncode == 0

    removed = t.ctl("remove", "hello")
    assert removed.returncode == 0
    assert "libgreet is no longer needed by any tool: tsukuctl remove libgreet" in removed.stderr
    assert t.ctl("remove", "libgreet").returncode == 0, "nothing needs it any more"
    assert installed(t) == {}


def removed_cleanly(t: Tsuku, tools: list[str]) -> None:
    """``tsukuctl remove`` of each tool in turn: its directory and its bin links are gone,
    and the install tree is empty at the end."""
    rows = installed(t)
    for tool in tools:
        tool_dir = Path(rows[tool]["install_dir"])
        links = [t.home / "bin" / name for name in rows[tool]["binaries"]]
        cp = t.ctl("remove", tool)
        assert cp.returncode == 0, cp.stderr
        assert not tool_dir.exists()
        assert not any(link.exists() or link.is_symlink() for link in links)
    assert installed(t) == {}
    assert tree(t.home) == []


def test_a_new_user_installs_a_bottle_and_its_dependency_both_from_the_registry(
    new_user: Tsuku,
    world: FakeGitHub,
    registry: Callable[[str, str], None],
    brew: FakeHomebrew,
    built: bottles.Built,
) -> None:
    """``tsukuctl install hello`` with nothing but the registry: hello's recipe names
    libgreet, whose recipe is fetched from the registry too, installed first, and
    hello's binary loads its library."""
    t = new_user
    publish(brew, built)
    registry("hello", bottles.hello_recipe())
    registry("libgreet", bottles.libgreet_recipe())
    assert not (t.home / "recipes").exists() or not any((t.home / "recipes").iterdir())

    cp = t.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr
    from_the_registry(t, world, "hello", bottles.hello_recipe())
    from_the_registry(t, world, "libgreet", bottles.libgreet_recipe())
    rows = installed(t)
    assert rows["hello"]["version"] == "2.0" and rows["libgreet"]["version"] == "1.0"
    ran = run(t.home / "bin" / "hello")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"{bottles.GREETING} (2.0)")

    verified = t.ctl("verify", "hello")
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("hello 2.0 ok: ")
    assert t.ctl("verify", "libgreet").returncode == 0
    removed_cleanly(t, ["hello", "libgreet"])


def test_a_formula_with_an_at_sign_installs_from_its_image_and_is_found_under_opt(
    new_user: Tsuku,
    world: FakeGitHub,
    registry: Callable[[str, str], None],
    brew: FakeHomebrew,
    built: bottles.Built,
) -> None:
    """A dependency recipe ``libgreet`` whose formula is ``libgreet@1`` (as tsuku's
    ``openssl`` installs ``openssl@3``): its bottle comes from the image
    ``homebrew/core/libgreet/1`` (Homebrew's ``@`` → ``/``), and the tool's text files
    naming ``opt/libgreet@1`` (Homebrew's key) or ``opt/libgreet`` point at it."""
    t = new_user
    brew.publish(
        "libgreet@1",
        bottles.LIB_VERSION,
        {HOST_TAG: bottles.libgreet_bottle(built, formula="libgreet@1")},
    )
    paths = (
        b"formula=@@HOMEBREW_PREFIX@@/opt/libgreet@1/lib\n"
        b"recipe=@@HOMEBREW_PREFIX@@/opt/libgreet/lib\n"
    )
    tarball = bottles.hello_bottle(built, "2.0", extra={"share/hello/greet.paths": paths})
    brew.publish("hello", "2.0", {HOST_TAG: tarball}, dependencies=["libgreet@1"])
    lib_recipe = bottles.libgreet_recipe().replace(
        '[version]\nsource = "homebrew"\nformula = "libgreet"\n\n', ""
    )
    lib_recipe = lib_recipe.replace('formula = "libgreet"', 'formula = "libgreet@1"')
    assert 'formula = "libgreet@1"' in lib_recipe and "[version]" not in lib_recipe
    registry("hello", bottles.hello_recipe())
    registry("libgreet", lib_recipe)

    cp = t.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr
    from_the_registry(t, world, "libgreet", lib_recipe)
    rows = installed(t)
    assert rows["libgreet"]["version"] == "1.0"
    lib = Path(rows["libgreet"]["install_dir"])
    tool = Path(rows["hello"]["install_dir"])
    ran = run(t.home / "bin" / "hello")
    assert ran.returncode == 0 and ran.stdout.startswith(bottles.GREETING), ran.stderr
    assert (tool / "share" / "hello" / "greet.paths").read_text() == (
        f"formula={lib}/lib\nrecipe={lib}/lib\n"
    )
    assert (lib / "lib" / "pkgconfig" / "greet.pc").read_text().startswith(f"prefix={lib}\n")
    # The image path is Homebrew's, written out here rather than through image_name.
    routes = [r.route for r in brew.registry.requests]
    assert "/v2/homebrew/core/libgreet/1/manifests/1.0" in routes
    scopes = [r.query.get("scope") for r in brew.registry.requests if r.route == "/token"]
    assert ["repository:homebrew/core/libgreet/1:pull"] in scopes
    assert "/api/formula/libgreet@1.json" in [r.route for r in brew.api.requests]
    lib_done = [
        e["payload"]
        for e in events(t)
        if e["type"] == "install.completed" and e["payload"]["tool"] == "libgreet"
    ]
    assert lib_done[-1]["assets"][0]["name"] == f"libgreet@1--1.0.{HOST_TAG}.bottle.tar.gz"

    assert t.ctl("verify", "hello").returncode == 0
    assert t.ctl("verify", "libgreet").returncode == 0
    removed_cleanly(t, ["hello", "libgreet"])


def test_a_dependency_cannot_move_to_another_version_under_the_tools_that_need_it(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)  # libgreet 1.0, hello 2.0 needing it
    brew.publish("libgreet", "1.1", {HOST_TAG: bottles.libgreet_bottle(built, "1.1")})
    assert t.ctl("install", "libgreet@1.0").returncode == 0
    assert t.ctl("install", "hello").returncode == 0  # reuses the installed 1.0
    old_dir = Path(installed(t)["libgreet"]["install_dir"])

    refused = t.ctl("install", "libgreet@1.1")
    assert refused.returncode == 1, refused.stderr
    assert "libgreet 1.0 is needed by hello" in refused.stderr
    assert "installing libgreet 1.1 would delete it" in refused.stderr
    assert "tsukuctl remove hello" in refused.stderr  # how to proceed
    forced = t.ctl("install", "--force", "libgreet@1.1")
    assert forced.returncode == 1 and "needed by hello" in forced.stderr
    upgrade = t.ctl("upgrade", "libgreet")
    assert upgrade.returncode == 1, upgrade.stderr
    assert "libgreet was not upgraded: libgreet 1.0 is needed by hello" in upgrade.stderr
    assert installed(t)["libgreet"]["version"] == "1.0" and old_dir.is_dir()
    ran = run(t.home / "bin" / "hello")
    assert ran.returncode == 0 and ran.stdout.startswith(bottles.GREETING), ran.stderr
    failed = [e["payload"] for e in events(t) if e["type"] == "install.failed"]
    assert [f["error_code"] for f in failed] == ["dependency_in_use"] * 3
    # A reinstall of the same version keeps the path the RPATH names: allowed.
    assert t.ctl("install", "--force", "libgreet@1.0").returncode == 0
    assert run(t.home / "bin" / "hello").returncode == 0

    # The way the hint gives: remove the dependent, move the dependency, reinstall.
    removed = t.ctl("remove", "hello")
    assert removed.returncode == 0, removed.stderr
    assert "libgreet is no longer needed by any tool: tsukuctl remove libgreet" in removed.stderr
    assert t.ctl("upgrade", "libgreet").returncode == 0
    assert not old_dir.exists()
    assert t.ctl("install", "hello").returncode == 0
    ran = run(t.home / "bin" / "hello")
    assert ran.returncode == 0 and ran.stdout.startswith(bottles.GREETING), ran.stderr
    assert installed(t)["libgreet"]["version"] == "1.1"


def test_two_tools_share_a_dependency_until_neither_needs_it(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    brew.publish("hola", "1.0", {HOST_TAG: bottles.hola_bottle(built)}, dependencies=["libgreet"])
    local_recipe(t, "hola", bottles.hola_recipe())
    assert t.ctl("install", "hello").returncode == 0
    assert t.ctl("install", "hola").returncode == 0
    lib_installs = [
        e
        for e in events(t)
        if e["type"] == "install.completed" and e["payload"]["tool"] == "libgreet"
    ]
    assert len(lib_installs) == 1  # shared, installed once

    removed = t.ctl("remove", "hello")
    assert removed.returncode == 0, removed.stderr
    assert "no longer needed" not in removed.stderr  # hola still needs it
    ran = run(t.home / "bin" / "hola")
    assert ran.returncode == 0 and ran.stdout.startswith(bottles.GREETING), ran.stderr
    refused = t.ctl("remove", "libgreet")
    assert refused.returncode == 1 and "libgreet is needed by hola" in refused.stderr

    removed = t.ctl("remove", "hola", "--json")
    assert json.loads(removed.stdout)["unneeded_dependencies"] == ["libgreet"]
    assert t.ctl("remove", "libgreet").returncode == 0
    assert installed(t) == {}


def test_an_older_version_installs_when_its_bottle_exists(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    cp = t.ctl("install", "hello@1.5")
    assert cp.returncode == 0, cp.stderr
    assert run(t.home / "bin" / "hello", "--version").stdout == "hello 1.5\n"

    missing = t.ctl("install", "hello@0.9")
    assert missing.returncode != 0
    assert "there is no Homebrew bottle of hello 0.9; the registry has: 1.5, 2.0" in (
        missing.stderr
    )


def test_a_tampered_blob_is_refused_with_the_digest_mismatch(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    good = hashlib.sha256(bottles.hello_bottle(built, "2.0", "2.0_1")).hexdigest()
    brew.tamper(good, bottles.hello_bottle(built, "1.5", "2.0_1"))
    cp = t.ctl("install", "hello")
    assert cp.returncode == 6, cp.stderr
    assert f"the bottle's manifest digest says sha256 {good}" in cp.stderr
    assert "hello" not in installed(t)
    assert not (t.home / "bin" / "hello").exists()


def test_a_platform_without_a_bottle_names_the_platforms_that_have_one(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    brew.publish("libgreet", bottles.LIB_VERSION, {HOST_TAG: bottles.libgreet_bottle(built)})
    brew.publish("hello", "2.0", {"arm64_sonoma": b"mac", "sonoma": b"intel mac"})
    cp = t.ctl("install", "hello")
    assert cp.returncode == 6, cp.stderr
    assert f"hello 2.0 has no bottle for {host_platform()}" in cp.stderr
    assert "bottles exist for: arm64_sonoma, sonoma" in cp.stderr


def test_missing_and_cyclic_dependencies_are_clear_errors(t: Tsuku, brew: FakeHomebrew) -> None:
    local_recipe(t, "hello", bottles.hello_recipe(deps='["nosuchlib"]'))
    cp = t.ctl("install", "hello")
    assert cp.returncode == 8, cp.stderr
    assert "hello needs nosuchlib, which has no recipe" in cp.stderr

    local_recipe(t, "hello", bottles.hello_recipe(deps='["libgreet"]'))
    cyclic = bottles.libgreet_recipe().replace(
        'type = "library"', 'type = "library"\nruntime_dependencies = ["hello"]'
    )
    local_recipe(t, "libgreet", cyclic)
    cp = t.ctl("install", "hello")
    assert cp.returncode == 8, cp.stderr
    assert "cycle: hello → libgreet → hello" in cp.stderr
    assert installed(t) == {}


def test_plan_shows_the_bottle_url_digest_and_relocation(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    cp = t.ctl("plan", "hello", "--json")
    assert cp.returncode == 0, cp.stderr
    plan = json.loads(cp.stdout)
    digest = hashlib.sha256(bottles.hello_bottle(built, "2.0", "2.0_1")).hexdigest()
    fetch, unpack, relocate, binaries = plan["steps"]
    assert fetch["url"] == f"{brew.registry.url}/v2/homebrew/core/hello/blobs/sha256:{digest}"
    assert fetch["checksum"] == digest == fetch["params"]["checksum"]
    # The work file is named as tsuku names it (<formula>.tar.gz), not after the blob.
    assert fetch["params"]["dest"] == "hello.tar.gz"
    assert unpack["params"] == {"archive": "hello.tar.gz", "format": "tar.gz", "strip_dirs": 2}
    assert relocate["action"] == "homebrew_relocate"
    assert relocate["params"] == {"formula": "hello"} and relocate["evaluable"] is False
    assert binaries["action"] == "install_binaries" and plan["unsupported"] == []
    text = t.ctl("plan", "hello")
    assert text.returncode == 0 and digest in text.stdout and "homebrew_relocate" in text.stdout

    other = json.loads(t.ctl("plan", "hello", "--platform", "linux/arm64", "--json").stdout)
    (why,) = other["unsupported"]
    assert "bottles exist for: arm64_sonoma, x86_64_linux" in why["reason"]
    assert brew.blob_requests() == []  # a plan downloads nothing


def test_create_from_homebrew_writes_a_recipe_that_installs(
    t: Tsuku, brew: FakeHomebrew, built: bottles.Built
) -> None:
    publish(brew, built)
    (t.home / "recipes" / "hello.toml").unlink()
    # Validation in the container: tests/integration/create/test_create_homebrew.py.
    create = ("create", "hello", "--from", "homebrew:hello", "--skip-validation")
    printed = t.ctl(*create, "-o", "-")
    assert printed.returncode == 0, printed.stderr
    again = t.ctl(*create, "-o", "-")
    assert again.stdout == printed.stdout  # deterministic
    recipe = printed.stdout
    assert 'action = "homebrew"\nformula = "hello"' in recipe
    assert 'binaries = ["bin/hello", "bin/hello-config"]' in recipe
    assert 'runtime_dependencies = ["libgreet"]' in recipe
    assert 'unsupported_platforms = ["linux/arm64"' in recipe  # no arm64_linux bottle
    assert '"darwin/arm64"' not in recipe  # arm64_sonoma serves it

    cp = t.ctl(*create, "--yes")
    assert cp.returncode == 0, cp.stderr
    assert (t.home / "recipes" / "hello.toml").read_text() == recipe
    cp = t.ctl("install", "hello")
    assert cp.returncode == 0, cp.stderr
    assert run(t.home / "bin" / "hello").stdout.startswith(bottles.GREETING)
    started = [e for e in events(t, "create.") if e["type"] == "create.started"]
    assert started[-1]["payload"]["repo"] == "homebrew:hello"

    missing = t.ctl("create", "nope", "--from", "homebrew:nope", "--skip-validation", "-o", "-")
    assert missing.returncode == 4 and "Homebrew has no formula named nope" in missing.stderr
