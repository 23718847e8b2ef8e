"""Fixtures for install tests: the fake GitHub world (shared per module) and a real
tsukud pointed at it in an isolated TSUKU_HOME."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub, fixture_world
from tsukud.testing.crates import FakeCratesIo
from tsukud.testing.gems import FakeRubyGems
from tsukud.testing.goproxy import FakeGoProxy


@pytest.fixture(scope="module")
def gh() -> Iterator[FakeGitHub]:
    with fixture_world() as fake:
        yield fake


@pytest.fixture
def world(gh: FakeGitHub) -> Iterator[FakeGitHub]:
    """The module's fake, with per-test knobs reset before and after."""

    def reset() -> None:
        gh.clear_overrides()
        gh.rate_limit_remaining = None  # a new rate-limit window
        gh.rate_limit_status = 403
        gh.secondary_retry_after = None
        gh.download_rate = None
        gh.stall_after = None
        gh.cdn_replacements.clear()

    reset()
    yield gh
    reset()


def make_tsuku(fake: FakeGitHub, **extra: str) -> Tsuku:
    home = short_home()
    return Tsuku(home, {**base_env(home), **fake.env(), **extra})


@contextmanager
def running(t: Tsuku) -> Iterator[Tsuku]:
    """``t``'s daemon started, and stopped with its TSUKU_HOME deleted afterwards."""
    try:
        t.start()
        yield t
    finally:
        RETIRING.retire(t)  # stopped and removed in the background (tests/conftest.py)


#: The caller's PATH for installs whose binaries a test machine may also have (java,
#: aws): a shell with no commands, so whether the shadowing question is asked
#: (docs/install.md) never depends on what this machine happens to have installed.
NO_SYSTEM_COMMANDS = {"PATH": "/nonexistent/tsuku-test-bin"}


needs_cargo = pytest.mark.skipif(shutil.which("cargo") is None, reason="cargo is not installed")
needs_gem = pytest.mark.skipif(
    shutil.which("gem") is None or shutil.which("ruby") is None, reason="ruby is not installed"
)
needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")


@pytest.fixture
def inst(world: FakeGitHub) -> Iterator[Tsuku]:
    """A running tsukud whose GitHub, downloads and registry are the fake."""
    with running(make_tsuku(world)) as t:
        yield t


@pytest.fixture
def eco() -> Iterator[FakeEcosystems]:
    """Fake npm, PyPI, ... registries (tests publish real packages on them)."""
    with FakeEcosystems() as fake:
        yield fake


@pytest.fixture
def eco_inst(world: FakeGitHub, eco: FakeEcosystems) -> Iterator[Tsuku]:
    """A running tsukud whose GitHub and package registries are the fakes."""
    with running(make_tsuku(world, **eco.env())) as t:
        yield t


@pytest.fixture
def registry(world: FakeGitHub) -> Iterator[Callable[[str, str], None]]:
    """Publish a recipe on the fake recipe registry for one test, where tsuku's public
    registry serves it to a new user: ``registry(name, toml_text)``. The registry is the
    module's shared fake, so what it held before is put back afterwards."""
    before = dict(world.recipes)
    yield world.add_recipe
    world.recipes.clear()
    world.recipes.update(before)


def from_the_registry(t: Tsuku, world: FakeGitHub, name: str, text: str) -> None:
    """``name`` was installed from the registry's recipe, as a new user gets it: no
    local recipe file, the registry asked for it, and the install recorded that recipe
    (its source and the sha256 of the registry's text)."""
    assert not (t.home / "recipes" / f"{name}.toml").exists()
    assert world.requests_to(f"/registry/recipes/{name[0]}/{name}.toml")
    done = [e for e in events(t) if e["type"] == "install.completed"]
    payload = [e["payload"] for e in done if e["payload"]["tool"] == name][-1]
    assert payload["recipe_source"] == "registry"
    assert payload["recipe_sha256"] == hashlib.sha256(text.encode()).hexdigest()


def events(t: Tsuku, prefix: str = "install.") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with t.client() as c:
        c.call(
            "events.list",
            {"filter": {"types": [prefix + "*"]}, "limit": 0},
            on_progress=lambda p: out.extend(p["events"]),
        )
    return out


def installed(t: Tsuku) -> dict[str, dict[str, Any]]:
    cp = t.ctl("list", "--json", check=True)
    return {row["tool"]: row for row in json.loads(cp.stdout)["tools"]}


def tree(home: Path) -> list[str]:
    """What the install tree holds: tools/ entries and bin/ links. ``.trash-*``
    directories (renamed away, being deleted in the background) are not listed."""
    out = []
    for sub in ("tools", "bin"):
        d = home / sub
        if d.is_dir():
            out += [
                f"{sub}/{p.name}" for p in sorted(d.iterdir()) if not p.name.startswith(".trash-")
            ]
    return out


@pytest.fixture
def crates() -> Iterator[FakeCratesIo]:
    with FakeCratesIo() as fake:
        yield fake


@pytest.fixture
def gems() -> Iterator[FakeRubyGems]:
    with FakeRubyGems() as fake:
        yield fake


@pytest.fixture
def goproxy() -> Iterator[FakeGoProxy]:
    with FakeGoProxy() as fake:
        yield fake


@pytest.fixture
def native_inst(
    world: FakeGitHub, crates: FakeCratesIo, gems: FakeRubyGems, goproxy: FakeGoProxy
) -> Iterator[Tsuku]:
    """A running tsukud whose crates.io, RubyGems and Go proxy are the fakes."""
    with running(make_tsuku(world, **crates.env(), **gems.env(), **goproxy.env())) as t:
        yield t
