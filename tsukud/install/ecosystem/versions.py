"""Versions of ecosystem packages, from each registry's API through the shared HTTP
layer (its URL policy, cache and retries).

Each ecosystem's record (registries/ecosystems.py) names the JSON document that lists
its versions and its reader's functions for the versions and the latest (a
``latest`` tag, the highest stable version, ...); the Go proxy's is a
text list, ``/<module>/@v/list``, whose latest is the highest stable version listed, or
``@latest`` when the list is empty.

A requested version must be one the registry lists, exactly (``1.2.3`` or ``v1.2.3``);
otherwise :class:`VersionNotFound` names the nearest ones. The exact version found is
what the runner pins.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tsukud.errors import TsukuError
from tsukud.recipe import EcosystemStep, VersionNotFound
from tsukud.recipe.model import VersionSection
from tsukud.recipe.version import ResolvedVersion, check_version, find_version, latest_version
from tsukud.registries import goproxy
from tsukud.registries.ecosystems import ECOSYSTEMS, Ecosystem, VersionsDocument

if TYPE_CHECKING:
    from tsukud.net.http import Http, HttpUnreachable

# (versions listed, the registry's latest or None)
Listing = tuple[list[str], str | None]
Fetcher = Callable[["Http", str, str], Awaitable[Listing]]
# What the JSON endpoints are asked for (a registry may send its full document anyway).
_JSON = {"accept": "application/json"}
_MAX_BYTES = 64 * 1024 * 1024  # large version documents (~15 MB seen)


async def _json(http: Http, url: str) -> Any:
    return (await http.get(url, headers=_JSON, cache=True, max_bytes=_MAX_BYTES)).json()


def _from_json(document: VersionsDocument) -> Fetcher:
    """A fetcher for a registry whose one JSON document lists the versions."""

    async def fetch(http: Http, base: str, name: str) -> Listing:
        doc = await _json(http, document.url(base, name))
        return document.versions(doc), document.latest(doc)

    return fetch


async def _goproxy(http: Http, base: str, module: str) -> Listing:
    resp = await http.get(goproxy.list_url(base, module), cache=True)
    listed = goproxy.versions(resp.body.decode("utf-8", "replace"))
    if listed:
        return listed, None
    return [], goproxy.info_version(await _json(http, goproxy.latest_url(base, module)))


FETCHERS: dict[str, Fetcher] = {
    **{e.version_source: _from_json(e.versions) for e in ECOSYSTEMS if e.versions is not None},
    "goproxy": _goproxy,
}


def choose(listing: Listing, requested: str | None, label: str) -> ResolvedVersion:
    """The version to pin, from what the registry lists (pure)."""
    listed, latest = listing
    if requested is not None:
        found = find_version(requested, listed, repo=label)
        # The registry's own spelling is what its client accepts (go: v1.2.3).
        return ResolvedVersion(found.version, found.tag)
    if latest:
        return ResolvedVersion(latest.removeprefix("v"), latest)
    return latest_version(listed, repo=label)


def version_package(step: EcosystemStep, section: VersionSection | None) -> str:
    """Whose versions ``step`` installs: its package, except for ``go_install``, whose
    package path may lie inside a module (``goproxy.version_module``)."""
    if step.record.version_source != "goproxy":
        return step.package_name
    declared = None
    if section is not None and section.source == step.record.version_source:
        module = section.module
        declared = module if module and goproxy.valid_module(module) else None
    return goproxy.version_module(step.package_name, declared)


async def resolve(
    http: Http,
    step: EcosystemStep,
    base_url: str,
    requested: str | None,
    section: VersionSection | None = None,
) -> ResolvedVersion:
    """The exact version of ``step``'s package to install (``tag`` is the registry's
    spelling, ``version`` the directory's); ``section`` is the recipe's ``[version]``."""
    package = version_package(step, section)
    label = f"{step.record.version_source} package {package}"
    try:
        listing = await FETCHERS[step.record.version_source](http, base_url, package)
    except TsukuError as exc:
        status = getattr(exc, "status", None)
        if status in (404, 410):
            raise VersionNotFound(
                f"{label} does not exist at {base_url}",
                hint="Check the recipe's package name; nothing was installed.",
                package=package,
            ) from None
        raise
    return check_version(choose(listing, requested, label), label)


def registry_unreachable(
    exc: HttpUnreachable, record: Ecosystem, base: str, doing: str
) -> HttpUnreachable:
    """An ecosystem's registry out of reach, named with its setting (install's version
    look-up and create's drafter both read it)."""
    return exc.at(f"{record.label} registry", base, record.registry.key, doing=doing)
