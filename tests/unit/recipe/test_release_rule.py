"""The one rule for "the latest release" (``recipe/version.newest_release``), which both
``create`` (the release it validates and pins) and the installer (the release it
installs) use, table-driven over the tag shapes publishers use; and the proof that the
two callers agree on every row."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from tsukud.clock import FixedClock
from tsukud.create.context import gather, latest_of, to_release
from tsukud.create.errors import NoReleases
from tsukud.github.client import GitHub
from tsukud.install.versions import VersionResolver
from tsukud.net.http import Http
from tsukud.recipe import VersionNotFound, parse_recipe
from tsukud.recipe.version import PublishedRelease, is_prerelease, newest_release
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeRelease, FakeRepo

R = PublishedRelease


@pytest.mark.parametrize(
    ("version", "flagged", "pre"),
    [
        ("1.2.3", False, False),
        ("1.2.3", True, True),  # GitHub's flag alone is enough
        ("1.2.3-rc1", False, True),  # a semver pre-release, whatever the flag says
        ("2.0.0-beta.1", False, True),
        ("2.0.0-alpha", False, True),
        ("1.0.0-preview.3", False, True),
        ("1.2.3.dev0", False, True),
        ("1.2.3rc1", False, True),
        ("1.0.0a1", False, True),  # PEP 440 spellings
        ("2.1b3", False, True),
        ("nightly-2024-01-01", False, True),
        ("1.0.0-nightly", False, True),
        ("2024.01.weekly", False, True),
        ("1.0-lts", False, False),  # a stable qualifier after the dash
        ("3.3.10", False, False),
        ("1.2.3+build.5", False, False),  # build metadata is not a pre-release
    ],
)
def test_is_prerelease(version: str, flagged: bool, pre: bool) -> None:
    assert is_prerelease(version, flagged=flagged) is pre


CASES: list[tuple[str, list[PublishedRelease], str | None, str | None]] = [
    # (case, releases newest first, tag prefix, expected tag)
    ("plain", [R("v1.2.3"), R("v1.2.2")], None, "v1.2.3"),
    ("no v", [R("1.2.3"), R("1.2.2")], None, "1.2.3"),
    # The attack: the newest is a beta by its tag, not flagged on GitHub.
    ("unflagged beta", [R("v2.0.0-beta.1"), R("v1.9.0")], None, "v1.9.0"),
    ("flagged beta", [R("v2.0.0-beta.1", prerelease=True), R("v1.9.0")], None, "v1.9.0"),
    ("flag on a plain tag", [R("v2.0.0", prerelease=True), R("v1.9.0")], None, "v1.9.0"),
    ("unflagged rc", [R("1.2.3-rc1"), R("1.2.2")], None, "1.2.2"),
    ("alpha", [R("v3.0.0-alpha"), R("v2.9.1")], None, "v2.9.1"),
    ("dev", [R("v1.3.0.dev1"), R("v1.2.0")], None, "v1.2.0"),
    ("nightly", [R("nightly-20240101"), R("v0.9.0")], None, "v0.9.0"),
    ("draft", [R("v2.0.0", draft=True), R("v1.9.0")], None, "v1.9.0"),
    ("draft and beta", [R("v3.0.0", draft=True), R("v2.0.0-beta.1"), R("v1.0.0")], None, "v1.0.0"),
    ("only pre-releases", [R("v0.2.0-beta"), R("v0.1.0-alpha")], None, "v0.2.0-beta"),
    ("only flagged", [R("v0.2.0", prerelease=True), R("v0.1.0")], None, "v0.1.0"),
    ("only drafts", [R("v1.0.0", draft=True)], None, None),
    ("no digit", [R("latest"), R("v1.0.0")], None, "v1.0.0"),
    ("lts qualifier", [R("v2.0-lts"), R("v1.9")], None, "v2.0-lts"),
    ("listing order wins", [R("v1.9.1"), R("v2.0.0")], None, "v1.9.1"),
    (
        "prefix",
        [R("other/v9.0.0"), R("tool/v2.0.0-rc1"), R("tool/v1.29.3"), R("tool/v1.29.0")],
        "tool/v",
        "tool/v1.29.3",
    ),
    ("prefix unflagged beta", [R("tool/v2.0.0-beta.1"), R("tool/v1.0.0")], "tool/v", "tool/v1.0.0"),
    ("prefix none", [R("other/v1.0.0")], "tool/v", None),
]


@pytest.mark.parametrize(("case", "releases", "prefix", "tag"), CASES, ids=[c[0] for c in CASES])
def test_newest_release(
    case: str, releases: list[PublishedRelease], prefix: str | None, tag: str | None
) -> None:
    chosen = newest_release(releases, tag_prefix=prefix)
    assert (chosen.tag if chosen else None) == tag


# ---- create and install agree on every row ----------------------------------------------


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub() as f:
        for i, (_case, releases, _prefix, _tag) in enumerate(CASES):
            f.add_repo(
                FakeRepo(
                    f"acme/case{i}",
                    [
                        FakeRelease(r.tag, [], prerelease=r.prerelease, draft=r.draft)
                        for r in releases
                    ],
                    extra_tags=["v0.0.1"],  # the installer's fallback when nothing qualifies
                )
            )
        yield f


@pytest.fixture
async def github(fake: FakeGitHub) -> AsyncIterator[GitHub]:
    http = Http(allowed_hosts=lambda: {"127.0.0.1"}, clock=FixedClock(1_000.0))
    yield GitHub(http, fake.api_url)
    await http.aclose()


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
async def test_create_validates_what_install_installs(github: GitHub, i: int) -> None:
    _case, _releases, prefix, tag = CASES[i]
    repo = f"acme/case{i}"
    version = f'[version]\ngithub_repo = "{repo}"\ntag_prefix = "{prefix}"\n' if prefix else ""
    recipe = parse_recipe(
        f'[metadata]\nname = "x"\n{version}\n[[steps]]\naction = "github_archive"\n'
        f'repo = "{repo}"\nasset_pattern = "x-{{version}}.tar.gz"\nbinaries = ["x"]\n'
    )
    listed = await github.releases(repo, per_page=10, max_pages=1)
    validated = latest_of([to_release(r) for r in listed if not r.draft], prefix)
    assert validated == tag
    if tag is None:
        # No release to validate: create refuses; install falls back to the tags, which
        # installs nothing a generated recipe pinned (none could have been generated).
        with contextlib.suppress(VersionNotFound):
            assert (await VersionResolver(github).resolve(recipe)).how == "latest-tag"
    else:
        assert (await VersionResolver(github).resolve(recipe)).tag == validated


async def test_create_refuses_a_repository_without_a_version_tag(
    fake: FakeGitHub, github: GitHub
) -> None:
    fake.add_repo(FakeRepo("acme/continuous", [FakeRelease("continuous", [])]))
    with pytest.raises(NoReleases, match="no published release whose tag is a version"):
        await gather(github, "acme/continuous")


async def test_create_keeps_the_chosen_release_behind_newer_pre_releases(
    fake: FakeGitHub, github: GitHub
) -> None:
    betas = [FakeRelease(f"v2.0.0-beta.{n}", []) for n in range(9, 0, -1)]
    fake.add_repo(FakeRepo("acme/betas", [*betas, FakeRelease("v1.0.0", [])]))
    ctx = await gather(github, "acme/betas")
    assert (ctx.tag, ctx.version) == ("v1.0.0", "1.0.0")
    assert [r.tag for r in ctx.releases][-1] == "v1.0.0" and len(ctx.releases) == 5
