"""Where recipes come from: ``$TSUKU_HOME/recipes/<name>.toml``, then a remote registry.

The remote registry has tsuku's layout: ``<base>/recipes/<first letter>/<name>.toml``
(base: ``registry.url`` / ``TSUKU_REGISTRY_URL``, default tsuku's public registry) and a
manifest, ``recipes.json`` (tsuku's schema_version 1: ``{schema_version, generated_at,
recipes: [{name, description, homepage, satisfies, ...}]}``; URL from
``TSUKU_MANIFEST_URL``). Both are cached under ``$TSUKU_HOME/registry/`` (the
reference's layout: ``<letter>/<name>.toml`` and ``manifest.json``) and reused for
``ttl`` seconds; after that they are fetched again, and when the network fails the
stale copy is used (with ``stale`` set), so installs keep working offline.

A fresh manifest that does not list a name answers "not found" without a request per
name, and maps aliases (``satisfies``: ``hx`` → ``helix``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec

from tsukud import log
from tsukud.clock import Clock, SystemClock
from tsukud.errors import TsukuError
from tsukud.fsutil import fresh, write_atomic
from tsukud.install.results import RegistryUpdated
from tsukud.net.http import Http, HttpError, HttpStatusError, HttpUnreachable
from tsukud.recipe import Recipe, RecipeError, parse_recipe

DEFAULT_REGISTRY_URL = "https://raw.githubusercontent.com/tsukumogami/tsuku/main"
DEFAULT_MANIFEST_URL = "https://tsuku.dev/recipes.json"
DEFAULT_TTL = 3600.0
MAX_RECIPE_BYTES = 1024 * 1024
MAX_MANIFEST_BYTES = 10 * 1024 * 1024
_NAME = re.compile(r"^[a-z0-9][a-z0-9._+-]{0,99}$")


class RecipeNotFound(TsukuError):
    code = "recipe_not_found"


class AmbiguousAlias(TsukuError):
    """A name no recipe has that several recipes ``satisfy``."""

    code = "recipe_alias_ambiguous"


class RegistryUnavailable(TsukuError):
    """The registry was reached and failed (a 5xx after the retries, a broken
    connection). One out of reach is :class:`HttpUnreachable`, placed at the registry
    (``network_unreachable``, as every unreachable service)."""

    code = "registry_unavailable"


#: The recipe registry could not be asked: it failed, or it is out of reach.
NOT_ASKED = (RegistryUnavailable, HttpUnreachable)


class ManifestInvalid(TsukuError):
    """The registry answered, with something that is not a manifest we can read.

    Not a network failure: falling back to a per-name fetch (and, for install, to paid
    discovery) would hide a captive portal, a proxy's error page or a wrong URL.
    """

    code = "registry_manifest_invalid"


class ManifestRecipe(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    description: str | None = None
    homepage: str | None = None
    satisfies: dict[str, list[str]] | None = None


class Manifest(msgspec.Struct, frozen=True, kw_only=True):
    schema_version: str | int
    generated_at: str | None = None
    recipes: list[ManifestRecipe] = msgspec.field(default_factory=list)

    def names(self) -> set[str]:
        return {r.name.lower() for r in self.recipes}

    def claimants(self, name: str) -> list[str]:
        """The recipes that ``satisfy`` ``name`` (an alias: ``hx`` → helix), in order."""
        out: list[str] = []
        for r in self.recipes:
            for names in (r.satisfies or {}).values():
                if name in (n.lower() for n in names) and r.name not in out:
                    out.append(r.name)
        return out


class LoadedRecipe(msgspec.Struct, frozen=True, kw_only=True):
    recipe: Recipe
    name: str
    source: str  # local | registry
    path: str  # the file it was read from (local file or registry cache)
    url: str | None
    sha256: str
    stale: bool = False  # a cached copy used because the registry could not be reached


def check_name(name: str) -> str:
    lowered = name.strip().lower()
    if not _NAME.match(lowered) or ".." in lowered:
        raise RecipeNotFound(
            f"{name!r} is not a valid tool name",
            hint="Tool names are lowercase letters, digits, '.', '_', '+' and '-'.",
        )
    return lowered


def _read_or_none(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _parse_manifest(data: bytes, where: str) -> Manifest:
    try:
        manifest = msgspec.json.decode(data, type=Manifest)
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        start = data[:200].lstrip().lower()
        looks = " (it looks like a web page)" if start.startswith((b"<!doctype", b"<html")) else ""
        raise ManifestInvalid(
            f"{where}: not a tsuku recipe manifest{looks}: {exc}", url=where
        ) from None
    if str(manifest.schema_version) != "1":
        raise ManifestInvalid(
            f"{where}: manifest schema_version {manifest.schema_version} is not supported (1 is)",
            hint="A newer tsuku may read it; or point registry.manifest_url at a version 1 "
            "manifest.",
            url=where,
        )
    return manifest


class Registry:
    def __init__(
        self,
        home: Path,
        http: Http,
        *,
        base_url: Callable[[], str] = lambda: DEFAULT_REGISTRY_URL,
        manifest_url: Callable[[], str] = lambda: DEFAULT_MANIFEST_URL,
        ttl: float = DEFAULT_TTL,
        clock: Clock | None = None,
    ) -> None:
        self.home = home
        self.http = http
        self._base_url = base_url
        self._manifest_url = manifest_url
        self.ttl = ttl
        self._clock = clock or SystemClock()

    # ---- paths -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return (self._base_url() or DEFAULT_REGISTRY_URL).rstrip("/")

    @property
    def manifest_url(self) -> str:
        return self._manifest_url() or DEFAULT_MANIFEST_URL

    @property
    def cache_dir(self) -> Path:
        return self.home / "registry"

    def local_path(self, name: str) -> Path:
        return self.home / "recipes" / f"{name}.toml"

    def cache_path(self, name: str) -> Path:
        return self.cache_dir / name[0] / f"{name}.toml"

    def recipe_url(self, name: str) -> str:
        return f"{self.base_url}/recipes/{name[0]}/{name}.toml"

    @property
    def manifest_path(self) -> Path:
        return self.cache_dir / "manifest.json"

    def _fresh(self, path: Path) -> bool:
        return fresh(path, self._clock.now(), self.ttl)

    def _keep(self, path: Path, data: bytes) -> None:
        """Cache ``data``, stamped with this clock's time (the TTL is measured on it)."""
        write_atomic(path, data, mtime=self._clock.now())

    # ---- manifest ----------------------------------------------------------------------

    def cached_manifest(self) -> tuple[Manifest, bool] | None:
        """The cached manifest and whether it is still fresh, or None."""
        try:
            data = self.manifest_path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            return _parse_manifest(data, str(self.manifest_path)), self._fresh(self.manifest_path)
        except ManifestInvalid:
            return None  # a damaged cache is no cache: the registry is asked again

    async def fetch_manifest(self) -> Manifest:
        url = self.manifest_url
        doing = "cannot fetch the recipe manifest"
        try:
            resp = await self.http.get(url, max_bytes=MAX_MANIFEST_BYTES)
        except HttpUnreachable as exc:
            raise exc.at("recipe manifest", url, "registry.manifest_url", doing=doing) from None
        except HttpError as exc:
            raise RegistryUnavailable(f"{doing}: {exc.message}") from None
        manifest = _parse_manifest(resp.body, url)
        self._keep(self.manifest_path, resp.body)
        return manifest

    async def manifest(self) -> tuple[Manifest | None, bool]:
        """The manifest (refetched once stale) and whether it is fresh. None when there
        is neither a cache nor a reachable manifest. A registry that answers garbage
        raises :class:`ManifestInvalid` (only an unreachable one falls back)."""
        cached = self.cached_manifest()
        if cached is not None and cached[1]:
            return cached
        try:
            return await self.fetch_manifest(), True
        except NOT_ASKED as exc:
            log.get().warning("registry.manifest_unavailable", error=exc.message)
            return (cached[0], False) if cached is not None else (None, False)

    # ---- recipes -----------------------------------------------------------------------

    def _loaded(
        self, name: str, data: bytes, path: Path, source: str, url: str | None, stale: bool
    ) -> LoadedRecipe:
        try:
            recipe = parse_recipe(data.decode("utf-8"), source=str(path))
        except UnicodeDecodeError:
            raise RecipeError(f"{path}: not UTF-8 text") from None
        return LoadedRecipe(
            recipe=recipe,
            name=name,
            source=source,
            path=str(path),
            url=url,
            sha256=hashlib.sha256(data).hexdigest(),
            stale=stale,
        )

    async def load(self, name: str) -> LoadedRecipe:
        """The recipe for ``name``: local file, fresh cache, registry, or stale cache."""
        name = check_name(name)
        local = self.local_path(name)
        if local.is_file():
            return self._loaded(name, local.read_bytes(), local, "local", None, False)
        cache = self.cache_path(name)
        if self._fresh(cache):
            return self._loaded(
                name, cache.read_bytes(), cache, "registry", self.recipe_url(name), False
            )
        manifest, fresh = await self.manifest()
        if manifest is not None and fresh and name not in manifest.names():
            claimants = manifest.claimants(name)
            if len(claimants) > 1:
                # Which one is meant is the person's to say, not the manifest's order's.
                raise AmbiguousAlias(
                    f"{name} is no recipe's name, and several recipes claim it: "
                    + ", ".join(claimants),
                    hint="Install the one you mean by its name: tsukuctl install "
                    + " or ".join(claimants)
                    + "; nothing was installed.",
                    tool=name,
                    claimants=claimants,
                )
            if claimants and claimants[0] != name:
                return await self.load(claimants[0])
            if not cache.is_file():
                raise self._not_found(name)
        return await self._fetch(name, cache)

    async def _fetch(self, name: str, cache: Path) -> LoadedRecipe:
        url = self.recipe_url(name)
        try:
            resp = await self.http.get(url, max_bytes=MAX_RECIPE_BYTES, accept_status=(404,))
        except HttpError as exc:
            stale = _read_or_none(cache)
            if stale is not None:
                log.get().warning("registry.stale_recipe", recipe=name, error=exc.message)
                return self._loaded(name, stale, cache, "registry", url, True)
            instead = f"A recipe in {self.local_path(name)} is used without the registry."
            if isinstance(exc, HttpUnreachable):
                raise exc.at(
                    "recipe registry",
                    self.base_url,
                    "registry.url",
                    doing=f"cannot fetch the recipe for {name}",
                    instead=instead,
                ) from None
            status = exc.status if isinstance(exc, HttpStatusError) else None
            raise RegistryUnavailable(
                f"cannot fetch the recipe for {name} from {self.base_url}: {exc.message}",
                hint=f"Try again later. {instead}",
                status=status,
            ) from None
        if resp.status == 404:
            raise self._not_found(name)
        loaded = self._loaded(name, resp.body, cache, "registry", url, False)
        self._keep(cache, resp.body)
        return loaded

    def _not_found(self, name: str) -> RecipeNotFound:
        hint = (
            "`tsukuctl update-registry` refreshes the registry's recipe list; a recipe "
            f"written to {self.local_path(name)} is used first."
        )
        data: dict[str, Any] = {"tool": name}
        meant = self.closest(name)
        if meant is not None:  # `info stren`: the recipe it was most likely meant for
            hint = f"Did you mean {meant}? A recipe by that name exists. {hint}"
            data["did_you_mean"] = meant
        return RecipeNotFound(
            f"no recipe for {name} (looked in {self.home / 'recipes'} and {self.base_url})",
            hint=hint,
            **data,
        )

    def closest(self, name: str) -> str | None:
        """The recipe name ``name`` most likely misspells, from what is known without the
        network (the cached manifest, local recipes); None when none is close."""
        import difflib

        cached = self.cached_manifest()
        names = set(cached[0].names()) if cached is not None else set()
        local = self.home / "recipes"
        if local.is_dir():
            names |= {p.stem for p in local.glob("*.toml")}
        close = difflib.get_close_matches(name, sorted(names - {name}), n=1, cutoff=0.75)
        return close[0] if close else None

    def cached_names(self) -> list[str]:
        if not self.cache_dir.is_dir():
            return []
        return sorted(p.stem for p in self.cache_dir.glob("*/*.toml"))

    async def update(self) -> RegistryUpdated:
        """Refetch the manifest and every cached recipe (``tsukuctl update-registry``)."""
        manifest = await self.fetch_manifest()
        refreshed: list[str] = []
        removed: list[str] = []
        failed: dict[str, str] = {}
        for name in self.cached_names():
            path = self.cache_path(name)
            try:
                resp = await self.http.get(
                    self.recipe_url(name), max_bytes=MAX_RECIPE_BYTES, accept_status=(404,)
                )
                if resp.status == 404:
                    path.unlink(missing_ok=True)
                    removed.append(name)
                    continue
                self._loaded(name, resp.body, path, "registry", None, False)  # validate
                self._keep(path, resp.body)
                refreshed.append(name)
            except (HttpError, RecipeError) as exc:
                failed[name] = exc.message
        return RegistryUpdated(
            manifest_url=self.manifest_url,
            registry_url=self.base_url,
            recipes_listed=len(manifest.recipes),
            generated_at=manifest.generated_at,
            refreshed=refreshed,
            removed=removed,
            failed=failed,
        )
