"""``create --version V``: the recipe is built for release V and validated there.

The context comes from the real GitHub client against the fake GitHub on loopback; the
version matches a tag as the installer matches it, an older release than the listed
page is fetched by tag, and a version no release has is a typed error with a hint.
The full run validates in a real container at V.
"""

from __future__ import annotations

import pytest

from tests.fakes.github import FakeGitHub
from tests.integration.create.helpers import Sink, create_in_process, tags_for
from tsukud.create.context import gather
from tsukud.github.client import GitHub
from tsukud.net.http import Http
from tsukud.recipe import VersionNotFound, parse_recipe
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo
from tsukud.validation.validator import Validator

MANY = "acme/many"


def _many_releases(gh: FakeGitHub) -> None:
    """Fifteen releases, v1.15.0 newest: more than one listing page of create."""
    if gh.repos.get(MANY) is not None:
        return
    releases = [
        FakeRelease(f"v1.{n}.0", [FakeAsset(f"many_1.{n}.0_linux_amd64.tar.gz", b"x")])
        for n in range(15, 0, -1)
    ]
    gh.add_repo(FakeRepo(MANY, releases))


async def test_version_leads_the_releases_and_is_the_validated_tag(
    gh: FakeGitHub, github: GitHub
) -> None:
    tags = tags_for("stern")
    ctx = await gather(github, "stern/stern", version=tags[1].removeprefix("v"))
    assert ctx.tag == tags[1]
    assert [r.tag for r in ctx.releases] == list(tags[1:])
    newest = await gather(github, "stern/stern")
    assert newest.tag == tags[0]


async def test_an_older_release_is_fetched_by_tag(gh: FakeGitHub, github: GitHub) -> None:
    _many_releases(gh)
    ctx = await gather(github, MANY, version="1.2.0")
    assert ctx.tag == "v1.2.0"
    assert [r.tag for r in ctx.releases] == ["v1.2.0"]
    assert ctx.release.assets == ("many_1.2.0_linux_amd64.tar.gz",)
    # A tag spelled as given is found too.
    assert (await gather(github, MANY, version="v1.14.0")).tag == "v1.14.0"


async def test_a_version_no_release_has_is_a_typed_error(gh: FakeGitHub, github: GitHub) -> None:
    _many_releases(gh)
    with pytest.raises(VersionNotFound) as info:
        await gather(github, MANY, version="9.9.9")
    assert info.value.code == "version_not_found"
    assert "acme/many has no release for version 9.9.9" in info.value.message
    assert info.value.hint is not None and "--version" in info.value.hint


@pytest.mark.docker
async def test_create_builds_and_validates_for_the_given_version(
    gh: FakeGitHub, github: GitHub, http: Http, validator: Validator
) -> None:
    tags = tags_for("stern")
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="stern",
        repo="stern/stern",
        sink=Sink(),
        validator=validator,
        deterministic_only=True,
        version=tags[1].removeprefix("v"),
    )
    assert (result.tag, result.version) == (tags[1], tags[1].removeprefix("v"))
    assert result.validation.status == "passed", result.validation
    recipe = parse_recipe(result.recipe)
    assert recipe.metadata.validated_version == tags[1].removeprefix("v")
    assert recipe.metadata.asset_sha256 is not None
    assert all(tags[1].removeprefix("v") in name for name in recipe.metadata.asset_sha256)
