"""The GitHub client against the fake GitHub (real httpx2 over loopback): pagination,
latest, tags, renamed repositories, contents, digests, rate limits, ETags, tokens."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fakes.github import RELEASES_DIR, FakeGitHub, Req
from tests.fakes.releases import FakeRepo, recorded_repo
from tests.shared import require
from tsukud.clock import FixedClock
from tsukud.github.client import (
    GitHub,
    GitHubBadCredentials,
    GitHubFileNotFound,
    GitHubRateLimited,
    GitHubSecondaryRateLimited,
    ReleaseNotFound,
    RepoNotFound,
)
from tsukud.net.http import Http, HttpStatusError, Settings, origin

TOKEN = "ghp_fakeTokenForTests0123456789"


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(tokens={TOKEN}) as f:
        for path in sorted(require(RELEASES_DIR).glob("*.json")):
            f.add_repo(recorded_repo(path))
        f.aliases["zricethezav/gitleaks"] = "gitleaks/gitleaks"
        f.add_repo(FakeRepo("acme/tags-only", extra_tags=["v0.9.0", "v1.0.0", "v1.1.0-beta.1"]))
        f.add_repo(
            FakeRepo(
                "acme/docs",
                files={
                    "README.md": b"# acme\n",
                    "docs/a.md": b"A",
                    "docs/b.md": b"",
                    "go.mod": b"module x\n",
                },
            )
        )
        yield f


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(2_000_000_000.0)


@contextlib.asynccontextmanager
async def loopback_http(clock: FixedClock, credentials: dict[str, str]) -> AsyncIterator[Http]:
    """A real Http that sends ``credentials`` (origin -> Authorization) and reads ``clock``."""
    h = Http(
        settings=Settings(max_wait=0.1),
        allowed_hosts=lambda: {"127.0.0.1"},
        credentials=lambda: credentials,
        clock=clock,
    )
    try:
        yield h
    finally:
        await h.aclose()


@pytest.fixture
async def http(clock: FixedClock, fake: FakeGitHub) -> AsyncIterator[Http]:
    async with loopback_http(clock, {origin(fake.api_url): f"Bearer {TOKEN}"}) as h:
        yield h


@pytest.fixture
def gh(http: Http, fake: FakeGitHub) -> GitHub:
    fake.reset_quota()
    fake.clear_overrides()
    return GitHub(http, fake.api_url, token_set=False)


async def test_releases_are_paginated(gh: GitHub, fake: FakeGitHub) -> None:
    releases = await gh.releases("gitleaks/gitleaks", per_page=10)
    assert len(releases) == 30
    assert releases[0].tag_name == "v8.30.0" and releases[-1].tag_name == "v8.19.0"
    pages = [r.path for r in fake.requests_to("/repos/gitleaks/gitleaks/releases?")]
    assert any("page=2" in p for p in pages) and any("page=3" in p for p in pages)
    capped = await gh.releases("bufbuild/buf", per_page=10, max_pages=2)
    assert len(capped) == 20


async def test_latest_skips_prereleases(gh: GitHub) -> None:
    assert (await gh.latest_release("yudai/gotty")).tag_name == "v1.0.1"
    assert (await gh.latest_release("simeji/jid")).tag_name == "v0.7.6"


async def test_release_by_tag_and_missing(gh: GitHub) -> None:
    rel = await gh.release_by_tag("simeji/jid", "0.7.2")
    assert rel.tag_name == "0.7.2" and "jid_linux_amd64.zip" in rel.asset_names
    with pytest.raises(ReleaseNotFound):
        await gh.release_by_tag("simeji/jid", "v9.9.9")
    with pytest.raises(ReleaseNotFound):
        await gh.latest_release("acme/tags-only")


async def test_tags(gh: GitHub) -> None:
    assert await gh.tags("acme/tags-only") == ["v0.9.0", "v1.0.0", "v1.1.0-beta.1"]
    tags = await gh.tags("jedisct1/piknik", per_page=3)
    assert tags[:3] == ["0.10.2", "0.10.1", "0.9.1"] and len(tags) == 10


async def test_digests(gh: GitHub, fake: FakeGitHub) -> None:
    rel = await gh.release_by_tag("gitleaks/gitleaks", "v8.30.0")
    asset = rel.asset("gitleaks_8.30.0_linux_x64.tar.gz")
    assert asset is not None
    assert asset.sha256 == fake.release_asset("gitleaks/gitleaks", "v8.30.0", asset.name).sha256
    old = await gh.release_by_tag("simeji/jid", "v0.7.6")
    assert all(a.digest is None and a.sha256 is None for a in old.assets)


async def test_renamed_repository_is_followed(gh: GitHub, fake: FakeGitHub) -> None:
    rel = await gh.latest_release("zricethezav/gitleaks")
    assert rel.tag_name == "v8.30.0"
    assert fake.requests_to("/repositories/")


async def test_repo_metadata_and_not_found(gh: GitHub) -> None:
    repo = await gh.repo("simeji/jid")
    assert repo.full_name == "simeji/jid" and repo.default_branch == "main"
    assert repo.license is not None and repo.license.spdx_id == "MIT"
    with pytest.raises(RepoNotFound):
        await gh.repo("nobody/nothing")


async def test_repo_carries_dates_owner_type_and_fork_parent(gh: GitHub, fake: FakeGitHub) -> None:
    body = {
        "full_name": "evil/stripe-cli",
        "name": "stripe-cli",
        "owner": {"login": "evil", "id": 7, "type": "User"},
        "fork": True,
        "archived": False,
        "disabled": False,
        "stargazers_count": 2,
        "created_at": "2026-11-20T00:00:00Z",
        "updated_at": "2026-11-21T00:00:00Z",
        "pushed_at": "2026-11-21T00:00:00Z",
        "parent": {"full_name": "stripe/stripe-cli", "stargazers_count": 1800, "fork": False},
        "source": {"full_name": "stripe/stripe-cli", "stargazers_count": 1800},
    }
    fake.override(r"^/repos/evil/stripe-cli$", json_body=body, role="api")
    try:
        repo = await gh.repo("evil/stripe-cli")
    finally:
        fake.clear_overrides()
    assert repo.owner is not None and repo.owner.type == "User"
    assert (repo.created_at, repo.pushed_at) == ("2026-11-20T00:00:00Z", "2026-11-21T00:00:00Z")
    assert repo.fork and repo.parent is not None
    assert (repo.parent.full_name, repo.parent.stargazers_count) == ("stripe/stripe-cli", 1800)
    assert not repo.archived and not repo.disabled


async def test_contents(gh: GitHub) -> None:
    f = await gh.contents("acme/docs", "README.md", ref="v1.0.0")
    assert not isinstance(f, list)
    assert f.type == "file" and f.content == b"# acme\n" and f.size == 7
    empty = await gh.contents("acme/docs", "docs/b.md")
    assert not isinstance(empty, list) and empty.content == b"" and empty.size == 0
    listing = await gh.contents("acme/docs", "docs")
    assert isinstance(listing, list) and [e.name for e in listing] == ["a.md", "b.md"]
    with pytest.raises(GitHubFileNotFound):
        await gh.contents("acme/docs", "missing.txt")


async def test_etag_revalidation(gh: GitHub, fake: FakeGitHub, clock: FixedClock) -> None:
    def repo_requests() -> list[Req]:
        return [
            r
            for r in fake.requests_to("/repos/yudai/gotty", role="api")
            if r.path == "/repos/yudai/gotty"
        ]

    await gh.repo("yudai/gotty")
    await gh.repo("yudai/gotty")
    assert len(repo_requests()) == 1
    clock.advance(600)
    await gh.repo("yudai/gotty")
    reqs = repo_requests()
    assert len(reqs) == 2 and reqs[-1].headers.get("if-none-match", "").startswith('"')
    assert gh.http.stats["revalidated"] >= 1


@pytest.mark.parametrize("status", [403, 429])
async def test_rate_limit_is_typed_with_a_token_hint(
    http: Http, fake: FakeGitHub, status: int
) -> None:
    gh = GitHub(http, fake.api_url, token_set=False)
    fake.clear_overrides()
    fake.rate_limit_remaining = 0
    fake.rate_limit_status = status
    try:
        with pytest.raises(GitHubRateLimited) as err:
            await gh.releases("stern/stern")
    finally:
        fake.rate_limit_remaining = None
        fake.rate_limit_status = 403
    e = err.value
    assert e.code == "github_rate_limited" and e.exit_code == 5
    assert "GITHUB_TOKEN" in e.hint and e.retry_at is not None
    assert TOKEN not in e.message and TOKEN not in e.hint


async def test_rate_limit_hint_with_a_token(http: Http, fake: FakeGitHub) -> None:
    gh = GitHub(http, fake.api_url, token_set=True)
    fake.override(
        "/repos/",
        status=403,
        json_body={"message": "API rate limit exceeded"},
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": "2000003600"},
        times=1,
    )
    with pytest.raises(GitHubRateLimited) as err:
        await gh.repo("simeji/jid")
    assert "GITHUB_TOKEN" in err.value.hint and "5,000" not in err.value.hint


async def test_token_goes_to_the_api_only(gh: GitHub, http: Http, fake: FakeGitHub) -> None:
    rel = await gh.release_by_tag("gitleaks/gitleaks", "v8.29.0")
    asset = rel.asset("gitleaks_8.29.0_linux_x64.tar.gz")
    assert asset is not None
    async with http.stream(asset.browser_download_url, max_bytes=10**6) as s:
        body = b"".join([c async for c in s.chunks()])
    assert len(body) == asset.size
    api = fake.requests_to("/releases/tags/v8.29.0", role="api")
    assert api[-1].headers["authorization"] == f"Bearer {TOKEN}"
    hops = fake.requests_to("gitleaks_8.29.0_linux_x64.tar.gz")
    assert [r.role for r in hops] == ["web", "assets"]  # github.com, then the asset host
    assert all("authorization" not in r.headers for r in hops)


async def test_bad_credentials_are_typed_with_a_token_hint(
    fake: FakeGitHub, clock: FixedClock
) -> None:
    wrong = "ghp_revokedToken000000000000000"
    async with loopback_http(clock, {origin(fake.api_url): f"Bearer {wrong}"}) as http:
        with pytest.raises(GitHubBadCredentials) as err:
            await GitHub(http, fake.api_url, token_set=True).repo("simeji/jid")
    e = err.value
    assert e.code == "github_bad_credentials" and e.exit_code == 5 and not e.retryable
    assert "GITHUB_TOKEN" in e.hint and "GH_TOKEN" in e.hint
    assert wrong not in e.message and wrong not in e.hint and wrong not in str(e.data)
    (refused,) = fake.take_violations()
    assert "Bad credentials" in refused.reason and refused.request.route == "/repos/simeji/jid"


async def test_secondary_rate_limit_is_typed_and_carries_retry_after(
    gh: GitHub, fake: FakeGitHub, clock: FixedClock
) -> None:
    fake.secondary_retry_after = 60
    try:
        with pytest.raises(GitHubSecondaryRateLimited) as err:
            await gh.repo("simeji/jid")
        asked = len(fake.requests_to("/repos/", role="api"))
        with pytest.raises(GitHubSecondaryRateLimited) as again:  # refused locally until then
            await gh.releases("simeji/jid")
        assert len(fake.requests_to("/repos/", role="api")) == asked
    finally:
        fake.secondary_retry_after = None
    for e in (err.value, again.value):
        assert e.code == "github_secondary_rate_limited" and e.exit_code == 5 and e.retryable
        assert e.data["retry_after"] == 60 and e.retry_at == clock.now() + 60
        assert "60 seconds" in e.hint and "5,000" not in e.hint


async def test_primary_limit_counts_304s_like_github(fake: FakeGitHub, clock: FixedClock) -> None:
    """Every answer costs one; a 304 is free only when the request is authenticated."""
    fake.reset_quota()

    async def fetch_twice(credentials: dict[str, str]) -> None:
        async with loopback_http(clock, credentials) as http:
            gh = GitHub(http, fake.api_url)
            await gh.repo("yudai/gotty")
            clock.advance(600)  # past the cache's freshness: revalidated with If-None-Match
            await gh.repo("yudai/gotty")
            assert http.stats["revalidated"] == 1

    await fetch_twice({})
    assert fake.quota_used() == 2 and fake.rate_limit_remaining == 58
    await fetch_twice({origin(fake.api_url): f"Bearer {TOKEN}"})
    assert fake.quota_used(TOKEN) == 1
    fake.rate_limit_remaining = 0
    try:
        with pytest.raises(GitHubRateLimited) as err:
            await fetch_twice({})
    finally:
        fake.rate_limit_remaining = None
    assert "60 per hour" in err.value.hint and err.value.retry_at is not None


async def test_a_token_forwarded_to_the_asset_host_is_refused_loudly(
    gh: GitHub, fake: FakeGitHub, clock: FixedClock
) -> None:
    """The fake's own strictness: a client that sent the GitHub token on to the asset
    host gets S3's refusal, and the test would fail unless it claims the violation."""
    rel = await gh.release_by_tag("gitleaks/gitleaks", "v8.29.0")
    asset = rel.asset("gitleaks_8.29.0_linux_x64.tar.gz")
    assert asset is not None
    async with loopback_http(clock, {origin(fake.assets_url): f"Bearer {TOKEN}"}) as leaky:
        with pytest.raises(HttpStatusError) as err:
            async with leaky.stream(asset.browser_download_url, max_bytes=10**6):
                pass
    assert err.value.status == 400
    (refused,) = fake.take_violations()
    assert refused.request.role == "assets" and "Authorization" in refused.reason
