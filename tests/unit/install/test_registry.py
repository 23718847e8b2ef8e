"""Recipe lookup: local recipes first, then the registry (manifest + per-letter files),
both cached with a TTL, the cache used when the registry cannot be reached."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio

from tests.fakes.github import FakeGitHub
from tests.shared import recipe_text
from tsukud.clock import Clock, FixedClock, TrioClock
from tsukud.install.registry import RecipeNotFound, Registry, RegistryUnavailable
from tsukud.net.http import Http, Settings
from tsukud.net.retry import RetryPolicy
from tsukud.recipe import RecipeParseError


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as f:
        f.add_recipe("stern", recipe_text("s/stern.toml"))
        f.add_recipe("helix", recipe_text("h/helix.toml"))
        yield f


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(1_000_000.0)


@asynccontextmanager
async def open_registry(fake: FakeGitHub, home: Path, clock: Clock) -> AsyncIterator[Registry]:
    """A registry on ``fake`` with a one-hour TTL, reading ``clock``."""
    quick = Settings(retry=RetryPolicy(base_delay=0.01, max_delay=0.02))
    http = Http(settings=quick, allowed_hosts=lambda: {"127.0.0.1"}, clock=clock)
    try:
        yield Registry(
            home,
            http,
            base_url=lambda: fake.registry_url,
            manifest_url=lambda: fake.manifest_url,
            ttl=3600,
            clock=clock,
        )
    finally:
        await http.aclose()


@pytest.fixture
async def registry(fake: FakeGitHub, tmp_path: Path, clock: FixedClock) -> AsyncIterator[Registry]:
    async with open_registry(fake, tmp_path, clock) as r:
        yield r


async def test_registry_fetch_then_cache(registry: Registry, fake: FakeGitHub) -> None:
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
    registry: Registry, fake: FakeGitHub, clock: FixedClock
) -> None:
    await registry.load("stern")
    clock.advance(7200)  # both manifest and recipe are stale now
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
    registry: Registry, fake: FakeGitHub
) -> None:
    await registry.load("stern")
    await registry.load("helix")
    fake.add_recipe("stern", recipe_text("s/stern.toml").replace("Multi-pod", "Updated"))
    del fake.recipes["helix"]
    report = await registry.update()
    assert report.recipes_listed == 1
    assert report.refreshed == ["stern"] and report.removed == ["helix"]
    assert "Updated" in registry.cache_path("stern").read_text()
    assert not registry.cache_path("helix").exists()


async def test_cache_is_refreshed_exactly_when_the_ttl_passes(
    fake: FakeGitHub, tmp_path: Path, mock_clock: trio.testing.MockClock
) -> None:
    """Freshness is measured on the injected clock (the cache files carry its time), so a
    MockClock jump ages them: nothing goes out before the hour, both files right at it."""
    recipe = "/registry/recipes/s/stern.toml"
    async with open_registry(fake, tmp_path, TrioClock()) as registry:
        await registry.load("stern")
        assert len(fake.requests_to(recipe)) == 1
        mock_clock.jump(3599)
        assert not (await registry.load("stern")).stale
        assert len(fake.requests_to(recipe)) == 1 and len(fake.requests_to("recipes.json")) == 1
        fake.add_recipe("stern", recipe_text("s/stern.toml").replace("Multi-pod", "Refreshed"))
        mock_clock.jump(1)
        loaded = await registry.load("stern")
        assert "Refreshed" in (loaded.recipe.metadata.description or "")
        assert len(fake.requests_to(recipe)) == 2 and len(fake.requests_to("recipes.json")) == 2
