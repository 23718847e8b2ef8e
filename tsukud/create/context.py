"""What a create run learns about a repository before any model sees it.

One round of GitHub requests: the repository (description, homepage, canonical name
after a rename), its recent releases, the file names at the root of the release tag and
the README there. The releases are the five newest published ones (drafts are never
used); the version the recipe is checked, validated and pinned at is chosen from the
first page of releases by the installer's own rule
(:func:`~tsukud.recipe.version.newest_release`): the newest release that is not a
pre-release, by GitHub's flag or by its tag (``v2.0.0-beta.1`` is one whatever the flag
says), the newest pre-release only when nothing else exists (the reference used whatever
came first, prereleases included). One rule, so ``install`` later installs the release
validated here.

Everything here is untrusted text from strangers. Asset names are filtered later
(``tsukud.create.assets``); the description and homepage are cleaned here before they
can reach a prompt or a recipe.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, TypeVar

import msgspec
import trio

from tsukud.create.assets import strip_invisible, with_tag_prefix
from tsukud.create.errors import NoReleases
from tsukud.errors import TsukuError
from tsukud.github.client import LATEST_PAGE
from tsukud.recipe.release import Release
from tsukud.source import BadSource, parse_github

if TYPE_CHECKING:
    from tsukud.github.client import GitHub
    from tsukud.github.client import Release as ApiRelease
    from tsukud.recipe import Recipe

MAX_RELEASES = 5
_R = TypeVar("_R")
README_MAX_BYTES = 512 * 1024
MAX_ROOT_FILES = 60
MAX_DESCRIPTION = 200

_README = re.compile(r"(?i)^readme(?:\.(md|markdown|rst|txt|adoc|org))?$")
_FILE_NAME = re.compile(r"^(?!\.\.?$)[A-Za-z0-9._][A-Za-z0-9._+~-]{0,99}$")
_URL = re.compile(r"^https?://[A-Za-z0-9.-]+(?::\d+)?(?:/[A-Za-z0-9._~:/?#@!$&'()*+,;=%-]*)?$")


class RepoContext(msgspec.Struct, frozen=True, kw_only=True):
    repo: str  # canonical owner/name (after a rename)
    description: str | None
    homepage: str | None
    releases: tuple[Release, ...]  # newest first, drafts removed, at most MAX_RELEASES
    api_releases: dict[str, ApiRelease]  # by tag: download URLs, sizes, digests
    tag: str  # the release the recipe is validated at
    readme: str | None = None
    readme_name: str | None = None
    root_files: tuple[str, ...] = ()
    # ``create --version``: ``tag`` is the release asked for, whatever the recipe says.
    pinned: bool = False
    # The tag prefix ``tag`` was chosen by; ``release.version`` is read without it.
    tag_prefix: str | None = None

    @property
    def version(self) -> str:
        return self.release.version

    @property
    def release(self) -> Release:
        return next(r for r in with_tag_prefix(self.releases, self.tag_prefix) if r.tag == self.tag)

    def for_tag_prefix(self, prefix: str | None) -> RepoContext:
        """The context a recipe with ``tag_prefix`` = ``prefix`` is validated in.

        In a monorepo the newest release may be another product's (``kyaml/v0.17.0``
        above ``kustomize/v5.4.2``): the recipe is validated at the newest release whose
        tag carries its prefix, and ``{version}`` is that tag without it. Unchanged when
        no listed release carries the prefix (the static checks say so) or when the
        release asked for with ``--version`` does not."""
        if self.pinned:
            if prefix and not self.releases[0].tag.startswith(prefix):
                return self
            return msgspec.structs.replace(self, tag_prefix=prefix or None)
        chosen = latest_of(self.releases, prefix)
        if chosen is None:
            return self
        return msgspec.structs.replace(self, tag=chosen, tag_prefix=prefix or None)

    def for_recipe(self, recipe: Recipe) -> RepoContext:
        """:meth:`for_tag_prefix` with the prefix the installer honours for ``recipe``."""
        from tsukud.recipe import RecipeError
        from tsukud.recipe.version import version_source

        try:
            prefix = version_source(recipe).tag_prefix
        except RecipeError:
            prefix = None
        return self.for_tag_prefix(prefix)

    @property
    def api_release(self) -> ApiRelease:
        return self.api_releases[self.tag]


def clean_description(text: str | None) -> str | None:
    """One printable line, at most 200 characters: safe in a prompt and in TOML."""
    if not text:
        return None
    line = " ".join(strip_invisible(text).split())
    line = "".join(c for c in line if c.isprintable())
    if len(line) > MAX_DESCRIPTION:
        line = line[: MAX_DESCRIPTION - 1].rstrip() + "…"
    return line or None


def clean_homepage(url: str | None) -> str | None:
    """An http(s) URL without spaces or quotes, else nothing."""
    if not url:
        return None
    url = url.strip()
    if len(url) > 200 or not _URL.match(url):
        return None
    return url


def latest_of(releases: Iterable[Release], prefix: str | None) -> str | None:
    """The tag of the release a recipe is validated at: the installer's rule
    (:func:`~tsukud.recipe.version.newest_release`), so the release installed later is
    the release validated now."""
    from tsukud.recipe.version import PublishedRelease, newest_release

    chosen = newest_release(
        (PublishedRelease(r.tag, r.draft, r.prerelease) for r in releases), tag_prefix=prefix
    )
    return chosen.tag if chosen is not None else None


def release_window(
    published: Sequence[_R], tag: str, tag_of: Callable[[_R], str], max_releases: int = MAX_RELEASES
) -> list[_R]:
    """The releases a create run reads (newest first): the newest ``max_releases``, the
    one validated at (``tag``) kept last when newer pre-releases pushed it out. The
    benchmark reads the same window, so it scores the recipe a run would write."""
    kept = list(published[:max_releases])
    if all(tag_of(r) != tag for r in kept):
        kept = [*kept[: max_releases - 1], next(r for r in published if tag_of(r) == tag)]
    return kept


def to_release(api: ApiRelease) -> Release:
    digests = {a.name: a.sha256 for a in api.assets if a.sha256}
    return Release(
        tag=api.tag_name,
        assets=tuple(a.name for a in api.assets),
        prerelease=api.prerelease,
        draft=api.draft,
        digests={k: v for k, v in digests.items() if v is not None},
    )


async def gather(
    github: GitHub,
    repo: str,
    *,
    max_releases: int = MAX_RELEASES,
    version: str | None = None,
) -> RepoContext:
    """Repository, releases, root listing and README. Raises the GitHub client's
    typed errors (:class:`~tsukud.github.client.RepoNotFound`, rate limits) and
    :class:`NoReleases`.

    With ``version`` (``create --version``) the recipe is built for that release: it
    leads the releases, the newer ones are left out, and it is the one validated, even
    a prerelease. A version matches a tag as the installer matches it
    (``1.2.0`` ↔ ``v1.2.0``, ``kustomize/v1.2.0``); one older than the listed releases
    is fetched by tag. Raises :class:`~tsukud.recipe.VersionNotFound` when no release
    has it."""
    from tsukud.github.client import Repo

    meta: list[Repo] = []
    listed: list[list[ApiRelease]] = []
    failed: dict[str, TsukuError] = {}

    # Both at once; a missing repository fails both, and the caller gets one error.
    async def get_repo() -> None:
        try:
            meta.append(await github.repo(repo))
        except TsukuError as exc:
            failed["repo"] = exc

    async def get_releases() -> None:
        try:
            page = max(LATEST_PAGE, max_releases)
            listed.append(await github.releases(repo, per_page=page, max_pages=1))
        except TsukuError as exc:
            failed["releases"] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(get_repo)
        nursery.start_soon(get_releases)
    if failed:
        raise failed.get("repo") or failed["releases"]
    info = meta[0]
    try:  # the name after a rename, when it is a repository's name at all
        canonical = parse_github(info.full_name or "").slug
    except BadSource:
        canonical = repo
    published = [r for r in listed[0] if not r.draft and r.tag_name]
    if version is not None:
        published = await _from_version(github, canonical, published, version)
        tag = published[0].tag_name if published else ""
    else:
        tag = latest_of([to_release(r) for r in published], None) or ""
    if not published:
        raise NoReleases(f"{canonical} has no published releases")
    if not tag:
        raise NoReleases(
            f"{canonical} has no published release whose tag is a version "
            f"(newest: {published[0].tag_name[:60]!r})",
            hint="tsuku installs releases by version; give one with --version if a "
            "release has one, or write the recipe by hand.",
        )
    published = release_window(published, tag, lambda r: r.tag_name, max_releases)
    releases = tuple(to_release(r) for r in published)
    files, readme, readme_name = await _readme(github, canonical, tag)
    return RepoContext(
        repo=canonical,
        description=clean_description(info.description),
        homepage=clean_homepage(info.homepage) or clean_homepage(info.html_url),
        releases=releases,
        api_releases={r.tag_name: r for r in published},
        tag=tag,
        readme=readme,
        readme_name=readme_name,
        root_files=files,
        pinned=version is not None,
    )


async def _from_version(
    github: GitHub, repo: str, published: list[ApiRelease], version: str
) -> list[ApiRelease]:
    """``published`` from the release of ``version`` on (newest first)."""
    from tsukud.github.client import ReleaseNotFound
    from tsukud.recipe import VersionNotFound, find_version
    from tsukud.recipe.version import candidate_tags

    try:
        tag = find_version(version, [r.tag_name for r in published], repo=repo).tag
    except VersionNotFound:
        tag = None
    if tag is not None:
        index = next(i for i, r in enumerate(published) if r.tag_name == tag)
        return published[index:]
    for candidate in candidate_tags(version):
        try:
            found = await github.release_by_tag(repo, candidate)
        except ReleaseNotFound:
            continue
        if not found.draft:
            return [found]
    raise VersionNotFound(
        f"{repo} has no release for version {version}",
        hint="Give the version of one of its GitHub releases, or leave out --version "
        "for the newest.",
        requested=version,
        repo=repo,
    )


async def _readme(
    github: GitHub, repo: str, tag: str
) -> tuple[tuple[str, ...], str | None, str | None]:
    """Root file names at ``tag`` (safe ones only) and the README's text. Failures
    here only cost context, never the run."""
    from tsukud.github.client import ContentFile

    try:
        listing = await github.contents(repo, "", ref=tag)
    except TsukuError:
        return (), None, None
    if not isinstance(listing, list):
        return (), None, None
    names = sorted(
        (e.name + ("/" if e.type == "dir" else "") for e in listing if _FILE_NAME.match(e.name)),
        key=str.lower,
    )
    readmes = sorted(
        (e for e in listing if e.type == "file" and _README.match(e.name)),
        key=lambda e: (0 if e.name.lower().endswith((".md", ".markdown")) else 1, e.name),
    )
    if not readmes:
        return tuple(names[:MAX_ROOT_FILES]), None, None
    entry = readmes[0]
    try:
        got = await github.contents(repo, entry.path, ref=tag)
    except TsukuError:
        return tuple(names[:MAX_ROOT_FILES]), None, None
    text = None
    if (
        isinstance(got, ContentFile)
        and got.content is not None
        and len(got.content) <= README_MAX_BYTES
    ):
        text = got.content.decode("utf-8", errors="replace")
    return tuple(names[:MAX_ROOT_FILES]), text, entry.name
