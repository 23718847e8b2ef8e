"""A monorepo whose newest release is another product's: the recipe is validated at
the newest release whose tag carries its ``tag_prefix`` (kustomize/v5.4.2, not
kyaml/v0.18.0), and ``{version}`` is that tag without the prefix.

The real GitHub client reads the fake GitHub on loopback; the deterministic matcher
finds the prefix from the release history and the run reports the release it checked.
"""

from __future__ import annotations

import msgspec

from tests.fakes.github import FakeGitHub
from tests.integration.create.helpers import Sink, create_in_process, human_repo
from tests.unit.create.named_recipes import KUSTOMIZE
from tsukud.create.context import gather
from tsukud.github.client import GitHub
from tsukud.net.http import Http
from tsukud.recipe import parse_recipe
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

MONO = "acme/kustomize"


def _monorepo(gh: FakeGitHub) -> None:
    """kustomize's releases with a newer kyaml release on top (kyaml's own assets)."""
    if gh.repos.get(MONO) is not None:
        return
    human = human_repo(parse_recipe(KUSTOMIZE, "kustomize.toml"))
    kyaml = FakeRelease(
        "kyaml/v0.18.0",
        [FakeAsset(f"kyaml_v0.18.0_{p}.tar.gz", b"x") for p in ("linux_amd64", "darwin_arm64")],
        created_at="2024-03-01T00:00:00Z",
    )
    gh.add_repo(
        FakeRepo(MONO, [kyaml, *human.releases], files=human.files, description="kustomize")
    )


async def test_context_scopes_to_the_tag_prefix(gh: FakeGitHub, github: GitHub) -> None:
    _monorepo(gh)
    ctx = await gather(github, MONO)
    assert ctx.tag == "kyaml/v0.18.0"  # the repository's newest, before any recipe
    scoped = ctx.for_tag_prefix("kustomize/v")
    assert (scoped.tag, scoped.version) == ("kustomize/v5.4.2", "5.4.2")
    assert scoped.release.assets == tuple(ctx.api_releases["kustomize/v5.4.2"].asset_names)
    assert scoped.api_release.tag_name == "kustomize/v5.4.2"
    assert scoped.releases == ctx.releases  # the history itself is not cut
    # No prefix (or one no release carries) leaves the newest release.
    assert scoped.for_tag_prefix(None).tag == "kyaml/v0.18.0"
    assert ctx.for_tag_prefix("helm/v").tag == "kyaml/v0.18.0"


async def test_version_pinned_release_stays(gh: FakeGitHub, github: GitHub) -> None:
    _monorepo(gh)
    ctx = await gather(github, MONO, version="kustomize/v5.4.1")
    scoped = ctx.for_tag_prefix("kustomize/v")
    assert (scoped.tag, scoped.version) == ("kustomize/v5.4.1", "5.4.1")


async def test_deterministic_recipe_is_checked_at_its_own_products_release(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    _monorepo(gh)
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="kustomize",
        repo=MONO,
        sink=Sink(),
        deterministic_only=True,
        skip_validation=True,
    )
    recipe = parse_recipe(result.recipe)
    assert recipe.version is not None and recipe.version.tag_prefix == "kustomize/v"
    assert (result.tag, result.version) == ("kustomize/v5.4.2", "5.4.2")
    linux = next(
        d
        for d in msgspec.to_builtins(result.preview)["downloads"]
        if d["platform"] == "linux/amd64"
    )
    assert linux["assets"] == ["kustomize_v5.4.2_linux_amd64.tar.gz"]
