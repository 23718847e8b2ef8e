"""GitHub REST: releases (paginated), latest, by tag, tags, repository, contents.

Shapes follow GitHub's REST API (v2022-11-28); only the fields tsuku uses are
decoded. Every GET goes through the shared :class:`~tsukud.net.http.Http`
with caching on, so repeated lookups within five minutes cost nothing and later ones
are ETag revalidations (a 304 does not count against an authenticated rate limit).

Errors are typed: :class:`RepoNotFound`, :class:`ReleaseNotFound`,
:class:`GitHubFileNotFound`, :class:`GitHubBadCredentials` (401: the token is wrong),
:class:`GitHubRateLimited` (the primary limit; its hint says how to raise it with
``GITHUB_TOKEN``), :class:`GitHubSecondaryRateLimited` (too many requests too fast; a
token does not help, only waiting ``retry_after`` seconds does), :class:`GitHubError`
for the rest. Tokens live only in
the ``Authorization`` header the HTTP layer adds for the API origin.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

import msgspec

from tsukud.errors import TsukuError
from tsukud.net.http import Http, HttpRateLimited, HttpStatusError, HttpUnreachable, Response

DEFAULT_API_URL = "https://api.github.com"
API_HEADERS = {
    "accept": "application/vnd.github+json",
    "x-github-api-version": "2022-11-28",
}
_LINK_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


# ------------------------------------------------------------------------------ errors


class GitHubError(TsukuError):
    code = "github_error"


class RepoNotFound(GitHubError):
    code = "github_repo_not_found"


class ReleaseNotFound(GitHubError):
    code = "github_release_not_found"


class GitHubFileNotFound(GitHubError):
    code = "github_file_not_found"


class GitHubBadCredentials(GitHubError):
    """401 "Bad credentials": GitHub refuses the token itself, whatever the request."""

    code = "github_bad_credentials"


class GitHubRateLimited(HttpRateLimited):
    code = "github_rate_limited"


class GitHubSecondaryRateLimited(GitHubRateLimited):
    """GitHub's secondary limit (requests too many or too fast), which tokens share."""

    code = "github_secondary_rate_limited"


def secondary_limit_hint(retry_after: int | None) -> str:
    when = f"wait {retry_after} seconds" if retry_after is not None else "wait a few minutes"
    return (
        f"GitHub's secondary rate limit: too many requests in a short time; {when} and try "
        "again (a token does not lift this limit)."
    )


def rate_limit_hint(token_set: bool, retry_at: str | None) -> str:
    when = f" (it resets at {retry_at})" if retry_at else ""
    if token_set:
        return f"The GITHUB_TOKEN's rate limit is used up{when}; wait, or use another token."
    return (
        "Unauthenticated requests get 60 per hour. Set GITHUB_TOKEN (or GH_TOKEN) to a "
        f"GitHub token for 5,000 per hour{when}: export GITHUB_TOKEN=... or "
        "`tsukuctl config set secrets.github_token`."
    )


# ------------------------------------------------------------------------------ values


# The page of releases "the latest release" is chosen from, by ``create`` (the release it
# validates and pins) and by the installer (the release it installs) alike: the same
# rule over the same page gives the same answer, and the HTTP cache shares the request.
LATEST_PAGE = 10


class Asset(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    size: int = 0
    browser_download_url: str = ""
    url: str = ""  # the API URL (Accept: application/octet-stream downloads it)
    content_type: str | None = None
    digest: str | None = None  # "sha256:<hex>" or null for old assets
    state: str | None = None

    @property
    def sha256(self) -> str | None:
        """The lowercase hex sha256 from ``digest``, when GitHub computed one."""
        if self.digest and self.digest.lower().startswith("sha256:"):
            return self.digest[7:].lower()
        return None


class Release(msgspec.Struct, frozen=True, kw_only=True):
    tag_name: str
    id: int = 0
    name: str | None = None
    draft: bool = False
    prerelease: bool = False
    created_at: str | None = None
    published_at: str | None = None
    html_url: str | None = None
    assets: tuple[Asset, ...] = ()

    def asset(self, name: str) -> Asset | None:
        for a in self.assets:
            if a.name == name:
                return a
        return None

    @property
    def asset_names(self) -> list[str]:
        return [a.name for a in self.assets]


class Owner(msgspec.Struct, frozen=True, kw_only=True):
    login: str
    type: str | None = None


class License(msgspec.Struct, frozen=True, kw_only=True):
    spdx_id: str | None = None
    name: str | None = None


class Parent(msgspec.Struct, frozen=True, kw_only=True):
    """The repository a fork was forked from (GitHub sends ``parent`` only for forks)."""

    full_name: str
    stargazers_count: int = 0


class Repo(msgspec.Struct, frozen=True, kw_only=True):
    full_name: str
    name: str = ""
    owner: Owner | None = None
    description: str | None = None
    homepage: str | None = None
    html_url: str | None = None
    default_branch: str = "main"
    archived: bool = False
    disabled: bool = False
    fork: bool = False
    parent: Parent | None = None
    private: bool = False
    stargazers_count: int = 0
    language: str | None = None
    topics: tuple[str, ...] = ()
    license: License | None = None
    created_at: str | None = None
    pushed_at: str | None = None


class ContentEntry(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    path: str
    type: str  # file | dir | symlink | submodule
    size: int | None = None


class ContentFile(msgspec.Struct, frozen=True, kw_only=True):
    """One file from the contents API. ``size`` is the decoded size GitHub reports;
    ``content`` is the decoded bytes (``None`` when the API sent no inline content,
    e.g. files over 1 MB)."""

    path: str
    type: str
    size: int | None
    content: bytes | None
    sha: str | None = None


class _Tag(msgspec.Struct, frozen=True):
    name: str


# ------------------------------------------------------------------------------ client


def check_repo(repo: str) -> str:
    if not _REPO.match(repo) or ".." in repo:
        raise GitHubError(f"not a GitHub repository name: {repo!r} (expected owner/repo)")
    return repo


def _q(segment: str) -> str:
    return quote(segment, safe="")


class GitHub:
    def __init__(
        self,
        http: Http,
        api_url: str | Callable[[], str] = DEFAULT_API_URL,
        *,
        token_set: bool | Callable[[], bool] = False,
    ) -> None:
        self.http = http
        self._api_url = api_url
        self._token_set = token_set

    @property
    def api_url(self) -> str:
        url = self._api_url() if callable(self._api_url) else self._api_url
        return url.rstrip("/")

    @property
    def token_set(self) -> bool:
        return self._token_set() if callable(self._token_set) else self._token_set

    def _url(self, repo: str, *parts: str) -> str:
        owner, _, name = check_repo(repo).partition("/")
        tail = "".join("/" + p for p in parts)
        return f"{self.api_url}/repos/{_q(owner)}/{_q(name)}{tail}"

    async def _get(
        self,
        url: str,
        *,
        what: str,
        not_found: type[GitHubError] = RepoNotFound,
        headers: Mapping[str, str] | None = None,
    ) -> Response:
        try:
            return await self.http.get(url, headers=headers or API_HEADERS, cache=True)
        except HttpUnreachable as exc:
            doing = f"cannot fetch {what}"
            raise exc.at("GitHub API", self.api_url, "github.api_url", doing=doing) from None
        except HttpRateLimited as exc:
            retry_at = exc.data.get("retry_at")
            if "secondary rate limit" in str(exc.data.get("body", "")):
                retry_after = exc.data.get("retry_after")
                raise GitHubSecondaryRateLimited(
                    f"GitHub's secondary rate limit was hit while fetching {what}",
                    url=exc.url,
                    retry_at=exc.retry_at,
                    status=exc.status,
                    retry_after=retry_after,
                    hint=secondary_limit_hint(retry_after),
                ) from None
            raise GitHubRateLimited(
                f"GitHub API rate limit exceeded while fetching {what}",
                url=exc.url,
                retry_at=exc.retry_at,
                status=exc.status,
                hint=rate_limit_hint(self.token_set, retry_at),
            ) from None
        except HttpStatusError as exc:
            if exc.status == 404:
                raise not_found(f"{what}: not found on GitHub (HTTP 404)", url=exc.url) from None
            if exc.status == 401:
                raise GitHubBadCredentials(
                    f"{what}: GitHub rejected the token (HTTP 401 Bad credentials)", status=401
                ) from None
            if exc.status == 403:
                raise GitHubError(
                    f"{what}: GitHub refused the request (HTTP {exc.status})",
                    hint="Check GITHUB_TOKEN: it may be invalid or lack access.",
                    status=exc.status,
                ) from None
            raise GitHubError(
                f"{what}: GitHub answered HTTP {exc.status}", status=exc.status
            ) from None

    @staticmethod
    def _decode(resp: Response, typ: Any, what: str) -> Any:
        try:
            return msgspec.json.decode(resp.body, type=typ)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            raise GitHubError(f"{what}: unexpected response from GitHub ({exc})") from None

    async def _paged(self, url: str, typ: Any, what: str, max_pages: int) -> list[Any]:
        out: list[Any] = []
        for _page in range(max_pages):
            resp = await self._get(url, what=what)
            out.extend(self._decode(resp, list[typ], what))
            match = _LINK_NEXT.search(resp.headers.get("link", ""))
            if match is None:
                break
            url = match.group(1)
        return out

    # ---- releases ----------------------------------------------------------------------

    async def releases(
        self, repo: str, *, per_page: int = 100, max_pages: int = 3
    ) -> list[Release]:
        """Newest first, as GitHub lists them (drafts included when visible)."""
        url = self._url(repo, "releases") + f"?per_page={per_page}"
        return await self._paged(url, Release, f"releases of {repo}", max_pages)

    async def latest_release(self, repo: str) -> Release:
        """GitHub's latest: newest non-draft, non-prerelease. :class:`ReleaseNotFound`
        when the repository has none (it may still have tags)."""
        resp = await self._get(
            self._url(repo, "releases", "latest"),
            what=f"latest release of {repo}",
            not_found=ReleaseNotFound,
        )
        return self._decode(resp, Release, f"latest release of {repo}")  # type: ignore[no-any-return]

    async def release_by_tag(self, repo: str, tag: str) -> Release:
        resp = await self._get(
            self._url(repo, "releases", "tags", _q(tag)),
            what=f"release {tag} of {repo}",
            not_found=ReleaseNotFound,
        )
        return self._decode(resp, Release, f"release {tag} of {repo}")  # type: ignore[no-any-return]

    async def tags(self, repo: str, *, per_page: int = 100, max_pages: int = 5) -> list[str]:
        url = self._url(repo, "tags") + f"?per_page={per_page}"
        tags = await self._paged(url, _Tag, f"tags of {repo}", max_pages)
        return [t.name for t in tags]

    # ---- repository --------------------------------------------------------------------

    async def repo(self, repo: str) -> Repo:
        resp = await self._get(self._url(repo), what=f"repository {repo}")
        return self._decode(resp, Repo, f"repository {repo}")  # type: ignore[no-any-return]

    async def contents(
        self, repo: str, path: str, *, ref: str | None = None
    ) -> ContentFile | list[ContentEntry]:
        """A file (decoded) or a directory listing. A missing path raises
        :class:`GitHubFileNotFound`; ``path`` must already be validated by the caller."""
        url = self._url(repo, "contents", *(_q(p) for p in path.strip("/").split("/")))
        if ref:
            url += f"?ref={_q(ref)}"
        what = f"{path} in {repo}" + (f"@{ref}" if ref else "")
        resp = await self._get(url, what=what, not_found=GitHubFileNotFound)
        data = resp.json()
        if isinstance(data, list):
            return [msgspec.convert(e, ContentEntry) for e in data if isinstance(e, dict)]
        if not isinstance(data, dict):
            raise GitHubError(f"{what}: unexpected response from GitHub")
        content: bytes | None = None
        raw = data.get("content")
        if data.get("encoding") == "base64" and isinstance(raw, str):
            try:
                content = base64.b64decode(raw.replace("\n", ""), validate=False)
            except (binascii.Error, ValueError) as exc:
                raise GitHubError(f"{what}: cannot decode content ({exc})") from None
        size = data.get("size")
        return ContentFile(
            path=str(data.get("path", path)),
            type=str(data.get("type", "")),
            size=size if isinstance(size, int) else None,
            content=content,
            sha=data.get("sha") if isinstance(data.get("sha"), str) else None,
        )
