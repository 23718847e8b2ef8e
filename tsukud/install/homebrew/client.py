"""The Homebrew formulae API and the bottle registry (ghcr.io), as the reference uses them.

* **Version**: ``GET <api>/api/formula/<name>.json`` gives ``versions.stable``,
  ``revision`` and ``bottle.stable.rebuild``; the registry tag is
  ``<stable>[_<revision>][-<rebuild>]``. A requested older version is looked up in the
  image's tag list (``/v2/<repo>/tags/list``), newest revision first.
* **Bottle**: an anonymous pull token for ``homebrew/core/<image>`` (``<registry>/token``),
  the image index for the tag, the entry whose bottle tag this machine can run, then
  that platform's manifest (its bytes checked against the index's digest), whose one
  layer names the blob's sha256. The installer downloads
  ``<registry>/v2/<repo>/blobs/sha256:<hex>`` with the token (the HTTP layer drops it
  on the redirect to the storage host) and checks the file against that sha256.

Everything goes through the shared HTTP layer (URL policy, retries); base URLs come
from the live configuration (``homebrew.api_url``, ``homebrew.registry_url``).
"""

from __future__ import annotations

import hashlib
import json
import platform as host
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import msgspec

from tsukud.errors import TsukuError
from tsukud.install.homebrew.errors import HomebrewError
from tsukud.net.http import Http, HttpUnreachable
from tsukud.recipe import Platform, UnsupportedPlatform, VersionNotFound
from tsukud.recipe.homebrew import (
    BOTTLE_DIGEST,
    INDEX_MEDIA_TYPE,
    MANIFEST_MEDIA_TYPE,
    BottleRef,
    choose_tag,
    index_entries,
    oci_tag,
    pick_tag_for,
    pkg_version,
    platform_tags,
    repository,
    split_oci_tag,
    upstream_version,
)
from tsukud.recipe.version import ResolvedVersion

SERVICE = "ghcr.io"
JSON_MAX = 8 * 1024 * 1024


class Bottle(msgspec.Struct, frozen=True, kw_only=True):
    """A bottle found for one platform, and the pull token its blob needs (kept out of
    events: only ``ref`` is recorded)."""

    ref: BottleRef
    token: str
    available: tuple[str, ...]  # every bottle tag the image has at this version

    @property
    def headers(self) -> dict[str, str]:
        return _bearer(self.token)


def macos_major() -> int | None:
    """This Mac's major release (for the bottle codename), or None elsewhere."""
    release = host.mac_ver()[0]
    head = release.split(".", 1)[0]
    return int(head) if head.isdigit() else None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class HomebrewClient:
    def __init__(
        self,
        http: Http,
        *,
        api_url: Callable[[], str],
        registry_url: Callable[[], str],
        macos: Callable[[], int | None] = macos_major,
    ) -> None:
        self.http = http
        self.api_url = api_url
        self.registry_url = registry_url
        self.macos = macos

    # ---- requests ----------------------------------------------------------------------

    async def _json(
        self, url: str, what: str, *, headers: dict[str, str] | None = None
    ) -> tuple[int, Any, bytes]:
        """(status, parsed body or None, raw body); 404 is an answer, not an error."""
        try:
            resp = await self.http.get(
                url, headers=headers, max_bytes=JSON_MAX, accept_status=(404,)
            )
        except HttpUnreachable as exc:
            raise self._out_of_reach(exc, url, f"cannot read {what}") from None
        except TsukuError as exc:
            # Chained: a batch tells the bottle host's outage (a 503) from a bad formula.
            raise HomebrewError(f"cannot read {what}: {exc.message}", url=url) from exc
        if resp.status == 404:
            return 404, None, resp.body
        try:
            return resp.status, json.loads(resp.body), resp.body
        except ValueError:
            raise HomebrewError(f"{what} is not JSON", url=url) from None

    def _out_of_reach(self, exc: HttpUnreachable, url: str, doing: str) -> HttpUnreachable:
        """The formulae API or the bottle registry, whichever ``url`` is under, out of
        reach: named with its setting, as every unreachable service."""
        api = self.api_url().rstrip("/")
        if url.startswith(api + "/"):
            return exc.at("Homebrew formulae API", api, "homebrew.api_url", doing=doing)
        registry = self.registry_url().rstrip("/")
        return exc.at("Homebrew bottle registry", registry, "homebrew.registry_url", doing=doing)

    async def formula(self, name: str) -> dict[str, Any]:
        """The formula's JSON document; :class:`VersionNotFound` when there is none."""
        url = f"{self.api_url().rstrip('/')}/api/formula/{quote(name, safe='@+')}.json"
        status, data, _ = await self._json(url, f"the Homebrew formula {name}")
        if status == 404:
            raise VersionNotFound(
                f"Homebrew has no formula named {name}",
                hint="Check the recipe's formula name.",
                formula=name,
            )
        if not isinstance(data, dict):
            raise HomebrewError(f"the Homebrew formula {name} is not a JSON object", url=url)
        return data

    async def token(self, formula: str) -> str:
        """An anonymous pull token for the formula's image (ghcr.io's token endpoint)."""
        scope = f"repository:{repository(formula)}:pull"
        url = f"{self._registry()}/token?" + urlencode({"service": SERVICE, "scope": scope})
        status, data, _ = await self._json(url, f"a pull token for {formula}")
        token = data.get("token") if isinstance(data, dict) else None
        if status == 404 or not isinstance(token, str) or not token:
            raise HomebrewError(f"the bottle registry gave no pull token for {formula}", url=url)
        return token

    def _registry(self) -> str:
        return self.registry_url().rstrip("/")

    def _v2(self, formula: str) -> str:
        return f"{self._registry()}/v2/{repository(formula)}"

    # ---- versions ----------------------------------------------------------------------

    async def resolve(self, formula: str, requested: str | None) -> ResolvedVersion:
        """The version to install (upstream, as ``{version}`` means it) and its
        registry tag: the formula's current one, or ``requested`` when a bottle of it
        exists."""
        data = await self.formula(formula)
        versions = data.get("versions") if isinstance(data.get("versions"), dict) else {}
        stable = versions.get("stable") if isinstance(versions, dict) else None
        if not isinstance(stable, str) or not stable:
            raise VersionNotFound(f"the Homebrew formula {formula} has no stable version")
        bottle = (data.get("bottle") or {}).get("stable") or {}
        rebuild = _int(bottle.get("rebuild")) if isinstance(bottle, dict) else 0
        current = pkg_version(stable, _int(data.get("revision")))
        wanted = (requested or "").removeprefix("v")
        if not wanted or wanted in (stable, current):
            return ResolvedVersion(stable, oci_tag(current, rebuild))
        token = await self.token(formula)
        url = f"{self._v2(formula)}/tags/list"
        _status, listing, _ = await self._json(
            url, f"the bottle tags of {formula}", headers=_bearer(token)
        )
        tags = listing.get("tags") if isinstance(listing, dict) else None
        names = [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []
        tag = pick_tag_for(wanted, names)
        if tag is None:
            shown = ", ".join(sorted({upstream_version(split_oci_tag(t)[0]) for t in names}))
            raise VersionNotFound(
                f"there is no Homebrew bottle of {formula} {wanted}; "
                f"the registry has: {shown or '(none)'}",
                hint=f"Install the current version ({stable}) or one the registry lists.",
                formula=formula,
                requested=wanted,
            )
        return ResolvedVersion(wanted, tag)

    # ---- bottles -----------------------------------------------------------------------

    async def entries(self, formula: str, tag: str) -> tuple[str, dict[str, dict[str, Any]]]:
        """(pull token, the image index's entries at ``tag`` by bottle tag)."""
        token = await self.token(formula)
        status, index, _ = await self._json(
            f"{self._v2(formula)}/manifests/{tag}",
            f"the bottle index of {formula} {tag}",
            headers={**_bearer(token), "accept": INDEX_MEDIA_TYPE},
        )
        if status == 404 or not isinstance(index, dict):
            raise VersionNotFound(
                f"the bottle registry has no {formula} {tag}",
                formula=formula,
                tag=tag,
            )
        pkg, rebuild = split_oci_tag(tag)
        return token, index_entries(index, pkg, rebuild)

    async def bottle(self, formula: str, tag: str, target: Platform) -> Bottle:
        """The bottle of ``formula`` at registry tag ``tag`` this platform can run."""
        token, entries = await self.entries(formula, tag)
        auth = _bearer(token)
        v2 = self._v2(formula)
        pkg, _rebuild = split_oci_tag(tag)
        wanted = platform_tags(target, self.macos() if target.os == "darwin" else None)
        chosen = choose_tag(list(entries), wanted)
        if chosen is None:
            raise UnsupportedPlatform(
                f"{formula} {pkg} has no bottle for {target} "
                f"({', '.join(wanted) or 'no bottle tag'}); "
                f"bottles exist for: {', '.join(sorted(entries)) or '(none)'}",
                hint="Use a recipe step for this platform, or another version.",
                formula=formula,
                platforms=sorted(entries),
            )
        entry = entries[chosen]
        sha256 = await self._layer_sha256(formula, entry, auth)
        announced = (entry.get("annotations") or {}).get(BOTTLE_DIGEST)
        if isinstance(announced, str) and announced and announced.lower() != sha256:
            raise HomebrewError(
                f"the bottle index of {formula} {tag} says sha256 {announced} for "
                f"{chosen}, its manifest says {sha256}"
            )
        ref = BottleRef(
            formula=formula,
            pkg_version=pkg,
            platform_tag=chosen,
            url=f"{v2}/blobs/sha256:{sha256}",
            sha256=sha256,
        )
        return Bottle(ref=ref, token=token, available=tuple(sorted(entries)))

    async def _layer_sha256(self, formula: str, entry: dict[str, Any], auth: dict[str, str]) -> str:
        """The platform manifest's one layer digest; the manifest's own bytes must
        hash to the digest the index gave for it."""
        digest = entry.get("digest")
        if not isinstance(digest, str) or not digest.startswith("sha256:"):
            raise HomebrewError(f"the bottle index of {formula} names no manifest digest")
        url = f"{self._v2(formula)}/manifests/{digest}"
        status, manifest, raw = await self._json(
            url,
            f"the bottle manifest of {formula}",
            headers={**auth, "accept": MANIFEST_MEDIA_TYPE},
        )
        if status == 404:
            raise HomebrewError(f"the bottle registry has no manifest {digest} of {formula}")
        actual = hashlib.sha256(raw).hexdigest()
        if "sha256:" + actual != digest.lower():
            raise HomebrewError(
                f"the bottle manifest of {formula} has sha256 {actual}, "
                f"the index says {digest.removeprefix('sha256:')}"
            )
        layers = manifest.get("layers") if isinstance(manifest, dict) else None
        layer = layers[0] if isinstance(layers, list) and len(layers) == 1 else None
        blob = layer.get("digest") if isinstance(layer, dict) else None
        hex_part = blob.removeprefix("sha256:").lower() if isinstance(blob, str) else ""
        if not blob or not blob.startswith("sha256:") or len(hex_part) != 64:
            raise HomebrewError(f"the bottle manifest of {formula} names no sha256 layer")
        return hex_part


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}
