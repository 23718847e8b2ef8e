"""Recipe lookup: local recipes first, then the registry (manifest + per-letter files),
both cached with a TTL, the cache used when the registry cannot be reached."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes.github import FakeGitHub
from tests.shared import recipe_text
from tsukud.install.registry import RecipeNotFound, Registry, RegistryUnavailable
from tsukud.net.http import Http
from tsukud.recipe import RecipeParseError


class Clock:
    now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as f:
        f.add_recipe("stern", recipe_text("s/stern.toml"))
        f.add_recipe("helix", recipe_text("h/helix.toml"))
        yield f


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def registry(fake: FakeGitHub, tmp_path: Path, clock: Clock) -> AsyncIterator[Registry]:
    http = Http(allowed_hosts=lambda: {"127.0.0.1"}, clock=clock)
    yield Registry(
        tmp_path,
        http,
        base_url=lambda: fake.registry_url,
        manifest_url=lambda: fake.manifest_url,
        ttl=3600,
        clock=clock,
    )
    await http.aclose()


def age(mtime: float, *paths: Path) -> None:
    import os

    for p in paths:
        os.utime(p, (mtime, mtime))


async def test_registry_fetch_then_cache(
    registry: Registry, fake: FakeGitHub, clock: Clock
) -> None:
    clock.now = __import__("time").time()
    loaded = await registry.load("stern")
    assert loaded.source == "registry" and loaded.recipe.metadata.name == "stern"
    assert Path(loaded.path) == registry.cache_path("stern")
    assert registry.cache_path("stern").read_text() == recipe_text("s/stern.toml")
    assert fake.requests_to("/registry/recipes/s/stern.toml")
    n = len(fake.requests)
    again = await registry.load("stern")
    assert again.sha256 == loaded.sha256 and len(fake.requests) == n  # fresh cache


async def test_local_recipe_wins(registry: Registry, fake: FakeGitHub, tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "stern.toml").write_text(
        recipe_text("s/stern.toml").replace("Multi-pod", "Local")
    )
    loaded = await registry.load("stern")
    assert loaded.source == "local" and "Local" in (loaded.recipe.metadata.description or "")
    assert fake.requests == []


async def test_unknown_name_is_answered_by_the_manifest(
    registry: Registry, fake: FakeGitHub
) -> None:
    with pytest.raises(RecipeNotFound) as err:
        await registry.load("no-such-tool")
    assert err.value.exit_code == 3 and "update-registry" in err.value.hint
    assert fake.requests_to("recipes.json") and not fake.requests_to("no-such-tool")


async def test_alias_from_the_manifest(registry: Registry) -> None:
    loaded = await registry.load("hx")
    assert loaded.name == "helix"


async def test_stale_cache_is_used_offline(
    registry: Registry, fake: FakeGitHub, clock: Clock
) -> None:
    import time

    clock.now = time.time()
    await registry.load("stern")
    clock.now += 7200  # both manifest and recipe are stale now
    fake.override("/registry/", status=503, body=b"down")
    loaded = await registry.load("stern")
    assert loaded.stale and loaded.recipe.metadata.name == "stern"
    with pytest.raises(RegistryUnavailable):
        await registry.load("helix")  # never cached


async def test_no_manifest_falls_back_to_the_file(registry: Registry, fake: FakeGitHub) -> None:
    fake.override("recipes.json", status=404)
    assert (await registry.load("stern")).recipe.metadata.name == "stern"
    with pytest.raises(RecipeNotFound):
        await registry.load("nope")
    assert fake.requests_to("/registry/recipes/n/nope.toml")


async def test_bad_names_and_bad_recipes(registry: Registry, fake: FakeGitHub) -> None:
    for bad in ("../etc/passwd", "a/b", "", "Ünïcode"):
        with pytest.raises(RecipeNotFound):
            await registry.load(bad)
    fake.add_recipe("broken", '[metadata]\nname = "broken"\n[[steps]]\naction = "github_archive"\n')
    with pytest.raises(RecipeParseError):
        await registry.load("broken")
    assert not registry.cache_path("broken").exists()


async def test_update_refreshes_manifest_and_cached_recipes(
    registry: Registry, fake: FakeGitHub, clock: Clock
) -> None:
    import time

    clock.now = time.time()
    await registry.load("stern")
    await registry.load("helix")
    fake.add_recipe("stern", recipe_text("s/stern.toml").replace("Multi-pod", "Updated"))
    del fake.recipes["helix"]
    report = await registry.update()
    assert report["recipes_listed"] == 1
    assert report["refreshed"] == ["stern"] and report["removed"] == ["helix"]
    assert "Updated" in registry.cache_path("stern").read_text()
    assert not registry.cache_path("helix").exists()
