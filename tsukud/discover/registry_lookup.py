"""Stage 1: the registry. A recipe wins; else a tsuku discovery entry names the source.

Discovery entries use tsuku's on-disk format (reference ``recipes/discovery``): one JSON
file per name at ``<l>/<l2>/<name>.json`` (a one-letter name: ``<l>/_/<l>.json``) with
``builder`` and ``source`` required and ``description``, ``homepage``, ``repo``,
``binary``, ``disambiguation``, ``downloads``, ``version_count``, ``has_repository``
optional. They are fetched from ``<registry.url>/recipes/discovery/<path>`` and cached
under ``$TSUKU_HOME/registry/discovery/<path>`` for the registry's TTL (1 h); a 404 is
cached too (a ``.<name>.missing`` marker), and when the registry cannot be reached a
stale copy is used. An entry that does not parse, or lacks builder/source, or whose
GitHub source is not a safe ``owner/repo``, is a miss.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import msgspec

from tsukud.clock import Clock, SystemClock
from tsukud.fsutil import fresh, write_atomic
from tsukud.source import BadSource, parse_github

DEFAULT_TTL = 3600.0
MAX_ENTRY_BYTES = 64 * 1024


class Entry(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    builder: str
    source: str
    binary: str | None = None
    description: str | None = None
    homepage: str | None = None
    repo: str | None = None
    disambiguation: bool = False
    downloads: int | None = None
    version_count: int | None = None
    has_repository: bool | None = None


def entry_path(name: str) -> str:
    """``s/st/stripe-cli.json``; ``x/_/x.json`` for one letter."""
    n = name.lower()
    second = n[:2] if len(n) > 1 else "_"
    return f"{n[0]}/{second}/{n}.json"


def parse_entry(data: bytes) -> Entry | None:
    try:
        entry = msgspec.json.decode(data, type=Entry)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    builder, source = entry.builder.strip().lower(), entry.source.strip()
    if not builder or not source:
        return None
    if builder == "github":
        try:
            source = parse_github(source).slug
        except BadSource:
            return None
    return msgspec.structs.replace(entry, builder=builder, source=source)


@dataclass(frozen=True)
class Lookup:
    entry: Entry | None
    origin: str  # network | cache | stale_cache | missing_cache | none
    error: str | None = None


Get = Callable[[str], Awaitable[tuple[int, bytes]]]


class DiscoveryRegistry:
    def __init__(
        self,
        cache_dir: Path,
        get: Get,
        base_url: Callable[[], str],
        *,
        ttl: float = DEFAULT_TTL,
        clock: Clock | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self._get = get
        self._base_url = base_url
        self.ttl = ttl
        self._clock = clock or SystemClock()

    def url(self, name: str) -> str:
        return f"{self._base_url().rstrip('/')}/recipes/discovery/{entry_path(name)}"

    def _paths(self, name: str) -> tuple[Path, Path]:
        path = self.cache_dir / entry_path(name)
        return path, path.with_name(f".{path.name}.missing")

    def _fresh(self, path: Path) -> bool:
        return fresh(path, self._clock.now(), self.ttl)

    async def lookup(self, name: str) -> Lookup:
        path, missing = self._paths(name)
        if self._fresh(path):
            return Lookup(parse_entry(path.read_bytes()), "cache")
        if self._fresh(missing):
            return Lookup(None, "missing_cache")
        try:
            status, body = await self._get(self.url(name))
        except Exception as exc:
            error = str(getattr(exc, "message", None) or type(exc).__name__)
            if path.is_file():
                return Lookup(parse_entry(path.read_bytes()), "stale_cache", error)
            return Lookup(None, "none", error)
        if status in (404, 410):
            write_atomic(missing, b"", mtime=self._clock.now())
            path.unlink(missing_ok=True)
            return Lookup(None, "network")
        if status != 200 or len(body) > MAX_ENTRY_BYTES:
            error = f"HTTP {status}" if status != 200 else "entry too large"
            if path.is_file():
                return Lookup(parse_entry(path.read_bytes()), "stale_cache", error)
            return Lookup(None, "none", error)
        entry = parse_entry(body)
        if entry is not None:
            write_atomic(path, body, mtime=self._clock.now())
            missing.unlink(missing_ok=True)
        return Lookup(entry, "network", None if entry else "entry does not parse")

    def cached_names(self) -> list[str]:
        if not self.cache_dir.is_dir():
            return []
        return sorted(p.stem for p in self.cache_dir.glob("*/*/*.json"))
