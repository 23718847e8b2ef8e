"""Version resolution against the fake GitHub: latest skips drafts and prereleases,
tags are the fallback, specific versions resolve to their real tags, results cache."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from tests.fakes.github import RECIPES_DIR, RELEASES_DIR, FakeGitHub
from tests.fakes.releases import FakeRelease, FakeRepo, recipe_repo, recorded_repo
from tests.shared import require
from tsukud.clock import FixedClock, TrioClock
from tsukud.github.client import GitHub
from tsukud.install.versions import VersionResolver
from tsukud.net.http import Http
from tsukud.recipe import VersionNotFound, load_recipe, parse_recipe


def recipe_for(repo: str, *, prefix: str | None = None, asset: str = "x-{version}.tar.gz") -> str:
    version = ""
    if prefix is not None:
        version = f'[version]\ngithub_repo = "{repo}"\ntag_prefix = "{prefix}"\n'
    return (
        f'[metadata]\nname = "x"\n{version}\n[[steps]]\naction = "github_archive"\n'
        f'repo = "{repo}"\nasset_pattern = "{asset}"\nbinaries = ["x"]\n'
    )


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as f:
        for path in sorted(require(RELEASES_DIR).glob("*.json")):
            f.add_repo(recorded_repo(path))
        age = load_recipe(RECIPES_DIR / "a" / "age.toml")
        f.add_repo(
            recipe_repo(
                age, ["1.1.1", "1.2.0", "1.2.1"], prerelease=["1.3.0-rc.1"], draft=["1.4.0"]
            )
        )
        f.add_repo(
            FakeRepo(
                "acme/tags-only", extra_tags=["v0.9.0", "v1.0.0", "v1.1.0-beta.1", "weekly.2024"]
            )
        )
        f.add_repo(
            FakeRepo(
                "acme/mono",
                [
                    FakeRelease("other/v9.0.0"),
                    FakeRelease("tool/v2.0.0-rc1", prerelease=True),
                    FakeRelease("tool/v1.29.3"),
                    FakeRelease("tool/v1.29.0"),
                    FakeRelease("tool/v1.290.0", draft=True),
                ],
            )
        )
        yield f


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(1_000.0)


@pytest.fixture
async def resolver(fake: FakeGitHub, clock: FixedClock) -> AsyncIterator[VersionResolver]:
    http = Http(allowed_hosts=lambda: {"127.0.0.1"}, clock=clock)
    yield VersionResolver(GitHub(http, fake.api_url), ttl=600, clock=clock)
    await http.aclose()


async def test_latest_skips_drafts_and_prereleases(resolver: VersionResolver) -> None:
    res = await resolver.resolve(load_recipe(RECIPES_DIR / "a" / "age.toml"))
    assert (res.version, res.tag, res.how) == ("1.2.1", "v1.2.1", "latest-release")
    assert res.release is not None and "age-v1.2.1-linux-amd64.tar.gz" in res.release.asset_names


async def test_latest_of_recorded_repos(resolver: VersionResolver) -> None:
    gotty = await resolver.resolve(parse_recipe(recipe_for("yudai/gotty")))
    assert gotty.tag == "v1.0.1"  # v2.0.0-alpha.3 is a prerelease
    piknik = await resolver.resolve(parse_recipe(recipe_for("jedisct1/piknik")))
    assert (piknik.version, piknik.tag) == ("0.10.2", "0.10.2")


async def test_tags_fallback(resolver: VersionResolver) -> None:
    res = await resolver.resolve(parse_recipe(recipe_for("acme/tags-only")))
    assert (res.version, res.tag, res.how, res.release) == ("1.0.0", "v1.0.0", "latest-tag", None)


async def test_specific_versions(resolver: VersionResolver) -> None:
    age = load_recipe(RECIPES_DIR / "a" / "age.toml")
    older = await resolver.resolve(age, "1.1.1")
    assert (older.version, older.tag, older.how) == ("1.1.1", "v1.1.1", "tag")
    assert (await resolver.resolve(age, "v1.2.0")).tag == "v1.2.0"
    pre = await resolver.resolve(age, "1.3.0-rc.1")  # asked for explicitly: allowed
    assert pre.tag == "v1.3.0-rc.1"
    jid = await resolver.resolve(parse_recipe(recipe_for("simeji/jid")), "0.7.2")
    assert jid.tag == "0.7.2"  # this era's tags had no "v"
    with pytest.raises(VersionNotFound, match=r"9\.9\.9"):
        await resolver.resolve(age, "9.9.9")
    with pytest.raises(VersionNotFound):
        await resolver.resolve(age, "1.4.0")  # a draft


async def test_tag_prefix(resolver: VersionResolver) -> None:
    recipe = parse_recipe(recipe_for("acme/mono", prefix="tool/v"))
    latest = await resolver.resolve(recipe)
    assert (latest.version, latest.tag) == ("1.29.3", "tool/v1.29.3")
    fuzzy = await resolver.resolve(recipe, "1.29")
    assert fuzzy.tag == "tool/v1.29.3"
    exact = await resolver.resolve(recipe, "1.29.0")
    assert exact.tag == "tool/v1.29.0"


async def test_results_are_refreshed_exactly_when_the_ttl_passes(
    fake: FakeGitHub, mock_clock: trio.testing.MockClock
) -> None:
    clock = TrioClock()
    http = Http(allowed_hosts=lambda: {"127.0.0.1"}, clock=clock)
    resolver = VersionResolver(GitHub(http, fake.api_url), ttl=600, clock=clock)
    recipe = parse_recipe(recipe_for("yudai/gotty"))
    try:
        await resolver.resolve(recipe, "1.0.0")
        before = len(fake.requests)
        mock_clock.jump(599)
        await resolver.resolve(recipe, "1.0.0")
        assert len(fake.requests) == before
        mock_clock.jump(1)
        await resolver.resolve(recipe, "1.0.0")
        assert len(fake.requests) > before
    finally:
        await http.aclose()
