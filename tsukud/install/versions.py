"""Which release a recipe installs: the latest, or the version a user asked for.

* **Latest**: the first page of releases (the page ``create`` reads: one request that
  also brings the asset lists and digests) and the one rule create validates with,
  ``tsukud.recipe.version.newest_release``: the newest release that is neither a draft
  nor a pre-release, a tag such as ``v2.0.0-beta.1`` counting as a pre-release whatever
  GitHub's flag says (GitHub's ``releases/latest`` trusts the flag alone, so it is not
  used). With a tag prefix (monorepos, ``[version] github_repo`` + ``tag_prefix``) up to
  three pages are read and only tags with the prefix count. When no release qualifies,
  the tags are listed and the highest stable version wins
  (``tsukud.recipe.version.latest_version``).
* **http_json** (``[version] source = "http_json"``, ``url``, ``version_path``): one
  GET of the URL through the shared HTTP layer (its URL policy and cache); the value
  at ``version_path`` is the tag and its normalised form the version. The source
  lists no history, so a requested version is taken as given.
* **homebrew** (``[version] source = "homebrew"``, or a recipe whose downloads are
  all ``homebrew`` steps): the formula's version from the formulae API, a requested
  one from the bottle registry's tags (``install/homebrew/client.py``).
* **A specific version** (``tool@1.2.3``): the likely tags (``v1.2.3``, ``1.2.3``, or
  ``<prefix>1.2.3``) are fetched directly; if none exists, releases and tags are listed
  and matched with the reference's rules (``find_version``), so ``Release_1_2_3`` or a
  prefix's fuzzy ``1.29`` → ``1.29.3`` still resolve.

Results are cached in memory for ``ttl`` seconds (the HTTP layer below also caches and
revalidates each API response with its ETag).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

import msgspec

from tsukud.clock import Clock, SystemClock
from tsukud.errors import TsukuError
from tsukud.github.client import LATEST_PAGE, GitHub, Release, ReleaseNotFound
from tsukud.net.http import HttpUnreachable
from tsukud.recipe import (
    CpanInstallStep,
    EcosystemStep,
    Recipe,
    RecipeError,
    ResolvedVersion,
    VersionNotFound,
    find_version,
    latest_version,
    pinned_version,
    tag_to_version,
    version_source,
)
from tsukud.recipe.homebrew import formula_of
from tsukud.recipe.model import HTTP_JSON_SOURCE, METACPAN_SOURCE, VersionSection
from tsukud.recipe.version import (
    PublishedRelease,
    candidate_tags,
    check_version,
    json_path_value,
    newest_release,
    normalize_version,
)

if TYPE_CHECKING:
    from tsukud.install.homebrew.client import HomebrewClient

DEFAULT_TTL = 600.0


class Resolution(msgspec.Struct, frozen=True, kw_only=True):
    """A resolved version and, when the tag has a GitHub release, that release."""

    resolved: ResolvedVersion
    repo: str
    requested: str | None
    # latest-release | latest-listed | latest-tag | tag | listed | requested | registry |
    # homebrew | pinned (the recipe has no version source: it names one version)
    how: str
    release: Release | None = None

    @property
    def version(self) -> str:
        return self.resolved.version

    @property
    def tag(self) -> str:
        return self.resolved.tag


class VersionResolver:
    def __init__(
        self,
        github: GitHub,
        *,
        ttl: float = DEFAULT_TTL,
        clock: Clock | None = None,
        ecosystem_urls: Callable[[], Mapping[str, str]] = dict,
        homebrew: HomebrewClient | None = None,
    ) -> None:
        self.github = github
        self.ecosystem_urls = ecosystem_urls
        self.homebrew = homebrew
        self.ttl = ttl
        self._clock = clock or SystemClock()
        self._cache: dict[tuple[str, str, str], tuple[float, Resolution]] = {}

    def forget(self) -> None:
        self._cache.clear()

    async def resolve(self, recipe: Recipe, requested: str | None = None) -> Resolution:
        requested = (requested or "").strip() or None
        pinned = pinned_version(recipe)
        if pinned is not None:
            return _pinned(recipe.metadata.name, pinned, requested)
        if recipe.version is not None and recipe.version.source == HTTP_JSON_SOURCE:
            return await self._http_json(recipe, requested)
        if recipe.version is not None and recipe.version.source == METACPAN_SOURCE:
            return await self._cpan(recipe, requested)
        eco = _ecosystem_step(recipe)
        if eco is not None:
            return await self._ecosystem(eco, requested, recipe.version)
        formula = formula_of(recipe)
        if formula is not None and self.homebrew is not None:
            # The formulae API answers with its own cache headers; no second cache here.
            resolved = await self.homebrew.resolve(formula, requested)
            return Resolution(resolved=resolved, repo="", requested=requested, how="homebrew")
        source = version_source(recipe)
        stable = recipe.version.stable_qualifiers if recipe.version is not None else None
        key = (source.repo.lower(), source.tag_prefix or "", requested or "")
        hit = self._cache.get(key)
        now = self._clock.now()
        if hit is not None and hit[0] > now:
            return hit[1]
        if requested is None:
            res = await self._latest(source.repo, source.tag_prefix, stable)
        else:
            res = await self._specific(source.repo, source.tag_prefix, requested)
        check_version(res.resolved, source.repo)
        self._cache[key] = (now + self.ttl, res)
        return res

    async def _ecosystem(
        self, step: EcosystemStep, requested: str | None, section: VersionSection | None
    ) -> Resolution:
        from tsukud.install.ecosystem import versions as eco_versions

        base = self.ecosystem_urls().get(step.record.version_source)
        if not base:
            raise RecipeError(
                f"no registry URL is configured for {step.record.version_source}",
                hint="Set it with tsukuctl config set (the discover.*_url settings).",
            )
        package = eco_versions.version_package(step, section)
        key = (step.record.version_source, f"{base} {package}", requested or "")
        hit = self._cache.get(key)
        now = self._clock.now()
        if hit is not None and hit[0] > now:
            return hit[1]
        try:
            resolved = await eco_versions.resolve(self.github.http, step, base, requested, section)
        except HttpUnreachable as exc:
            doing = f"cannot list the versions of {package}"
            raise eco_versions.registry_unreachable(exc, step.record, base, doing) from None
        res = Resolution(resolved=resolved, repo="", requested=requested, how="registry")
        self._cache[key] = (now + self.ttl, res)
        return res

    async def _cpan(self, recipe: Recipe, requested: str | None) -> Resolution:
        """``metacpan``: the release of the recipe's ``cpan_install`` distribution the
        CPAN mirror indexes, the only one it serves (``install/cpan.py``)."""
        from tsukud.install.cpan import MIRROR_KEY, newest_release

        name = recipe.metadata.name
        step = next((s for s in recipe.steps if isinstance(s, CpanInstallStep)), None)
        if step is None:
            raise RecipeError(
                f"{name}: version source metacpan needs a cpan_install step", recipe=name
            )
        base = step.mirror or self.ecosystem_urls().get(MIRROR_KEY, "")
        version = await newest_release(self.github.http, base, step)
        if requested is not None and normalize_version(requested) != normalize_version(version):
            raise VersionNotFound(
                f"{name}: the CPAN mirror indexes {step.distribution} {version}, not {requested}",
                hint=f"A CPAN mirror serves a distribution's newest release only: install "
                f"{name}@{version}; nothing was installed.",
                requested=requested,
                available=[version],
            )
        resolved = ResolvedVersion(version, version)
        return Resolution(resolved=resolved, repo="", requested=requested, how="cpan-index")

    async def _http_json(self, recipe: Recipe, requested: str | None) -> Resolution:
        name = recipe.metadata.name
        section = recipe.version
        assert section is not None
        if not section.url or not section.version_path:
            raise RecipeError(
                f"{name}: version source http_json needs [version] url and version_path",
                recipe=name,
            )
        if requested is not None:
            resolved = ResolvedVersion(requested.removeprefix("v"), requested)
            how = "requested"
        else:
            key = ("http_json", section.url, section.version_path)
            hit = self._cache.get(key)
            now = self._clock.now()
            if hit is not None and hit[0] > now:
                return hit[1]
            try:
                resp = await self.github.http.get(
                    section.url, headers={"accept": "application/json"}, cache=True
                )
                tag = json_path_value(json.loads(resp.body), section.version_path)
            except HttpUnreachable as exc:
                doing = f"{name}: cannot read the version"
                raise exc.at("recipe's version URL", section.url, doing=doing) from None
            except TsukuError as exc:
                raise VersionNotFound(
                    f"{name}: cannot read the version from {section.url}: {exc.message}",
                    recipe=name,
                ) from None
            except ValueError:
                tag = None
            if tag is None:
                raise VersionNotFound(
                    f"{name}: {section.url} has no version at {section.version_path}",
                    hint="The recipe's [version] version_path does not name a value in the "
                    "answer; nothing was installed.",
                    recipe=name,
                )
            prefix = section.tag_prefix or None
            version = tag_to_version(tag, prefix) if prefix else normalize_version(tag)
            resolved = ResolvedVersion(version or tag, tag)
            how = "http_json"
        check_version(resolved, section.url)
        res = Resolution(resolved=resolved, repo="", requested=requested, how=how)
        if requested is None:
            self._cache[key] = (self._clock.now() + self.ttl, res)
        return res

    async def _release_or_none(self, repo: str, tag: str) -> Release | None:
        try:
            return await self.github.release_by_tag(repo, tag)
        except ReleaseNotFound:
            return None

    async def _latest(
        self, repo: str, prefix: str | None, stable: tuple[str, ...] | None
    ) -> Resolution:
        """The newest release by the one rule create validates with
        (:func:`~tsukud.recipe.version.newest_release`), over the same page create
        reads; tags when no release qualifies."""
        if prefix:
            listed = await self.github.releases(repo)
        else:
            listed = await self.github.releases(repo, per_page=LATEST_PAGE, max_pages=1)
        resolved = newest_release(
            (PublishedRelease(r.tag_name, r.draft, r.prerelease) for r in listed),
            tag_prefix=prefix,
            stable_qualifiers=stable,
        )
        if resolved is not None:
            return Resolution(
                resolved=resolved,
                repo=repo,
                requested=None,
                how="latest-listed" if prefix else "latest-release",
                release=next(r for r in listed if r.tag_name == resolved.tag),
            )
        tags = await self.github.tags(repo)
        resolved = latest_version(tags, tag_prefix=prefix, stable_qualifiers=stable, repo=repo)
        return Resolution(
            resolved=resolved,
            repo=repo,
            requested=None,
            how="latest-tag",
            release=await self._release_or_none(repo, resolved.tag),
        )

    async def _specific(self, repo: str, prefix: str | None, requested: str) -> Resolution:
        for tag in candidate_tags(requested.removeprefix("v") if not prefix else requested, prefix):
            release = await self._release_or_none(repo, tag)
            if release is not None and not release.draft:
                version = tag_to_version(tag, prefix) or requested
                return Resolution(
                    resolved=ResolvedVersion(version, tag),
                    repo=repo,
                    requested=requested,
                    how="tag",
                    release=release,
                )
        releases = [r for r in await self.github.releases(repo) if not r.draft]
        listed = [r.tag_name for r in releases]
        try:
            resolved = find_version(requested, listed, tag_prefix=prefix, repo=repo)
        except VersionNotFound:
            tags = await self.github.tags(repo)
            resolved = find_version(requested, [*listed, *tags], tag_prefix=prefix, repo=repo)
        release = next((r for r in releases if r.tag_name == resolved.tag), None)
        if release is None:
            release = await self._release_or_none(repo, resolved.tag)
        return Resolution(
            resolved=resolved, repo=repo, requested=requested, how="listed", release=release
        )


def _pinned(name: str, pinned: str, requested: str | None) -> Resolution:
    """A recipe with no version source installs its one version; another is not there."""
    if requested is not None and normalize_version(requested) != normalize_version(pinned):
        raise VersionNotFound(
            f"{name}: its recipe is pinned at {pinned} (no version source: its URLs name "
            f"that version), so {requested} cannot be installed from it",
            hint=f"Install {name}@{pinned}, or write a recipe with a [version] source.",
            requested=requested,
            available=[pinned],
        )
    resolved = ResolvedVersion(pinned, pinned)
    return Resolution(resolved=resolved, repo="", requested=requested, how="pinned")


def _ecosystem_step(recipe: Recipe) -> EcosystemStep | None:
    """The recipe's ecosystem step when its versions come from that registry: no
    ``[version]`` source (or the ecosystem's own) and no GitHub repository named."""
    section = recipe.version
    if section is not None and (section.github_repo or section.url):
        return None
    for step in recipe.steps:
        if isinstance(step, EcosystemStep) and (
            section is None or section.source in (None, step.record.version_source)
        ):
            return step
    return None
