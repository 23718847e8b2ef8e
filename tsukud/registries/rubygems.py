"""RubyGems' versions API (``/api/v1/versions/<name>.json``): an array of
``{number, platform, prerelease, ...}``, newest first."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from tsukud.registries._common import (
    Get,
    PackageFacts,
    as_dict,
    as_int,
    as_str,
    earliest,
    json_or_none,
    people,
    reachable,
    same_name,
)

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def valid_name(name: str) -> bool:
    return len(name) <= 100 and _NAME.fullmatch(name) is not None


def versions_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/api/v1/versions/{name}.json"


def _entries(body: Any) -> list[dict[str, Any]]:
    return [e for e in body if isinstance(e, dict)] if isinstance(body, list) else []


def versions(body: Any) -> list[str]:
    """Versions built for any platform (``ruby``) gem; platform-specific builds of the
    same number are the same version."""
    out: list[str] = []
    for entry in _entries(body):
        number = as_str(entry.get("number"))
        if number and number not in out:
            out.append(number)
    return out


def latest(body: Any) -> str | None:
    """The newest version that is not a pre-release (the API lists newest first)."""
    for entry in _entries(body):
        if not entry.get("prerelease") and (number := as_str(entry.get("number"))):
            return number
    return None


def gem_info_url(base: str, name: str) -> str:
    """The gems API's document for ``name`` (its description, downloads, homepage)."""
    return f"{base.rstrip('/')}/api/v1/gems/{name}.json"


def gem_url(base: str, name: str, version: str) -> str:
    return f"{base.rstrip('/')}/gems/{name}-{version}.gem"


def gemspec_executables(metadata_yaml: str) -> list[str]:
    """``executables`` of a ``.gem``'s ``metadata.gz`` (the YAML ``Gem::Specification``
    RubyGems writes: a block list of plain or quoted names, or ``[]``). No YAML library:
    only this key of RubyGems' own regular output is read."""
    out: list[str] = []
    lines = metadata_yaml.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("executables:"):
            continue
        for item in lines[i + 1 :]:
            if not item.startswith("- "):
                break
            name = item[2:].strip().strip("'\"")
            if _NAME.fullmatch(name):
                out.append(name)
        break
    return out


# ---- discovery's probe: ``/api/v1/gems/<n>.json`` and the versions API; total
# ``downloads``, the versions' count, ``source_code_uri``


def probe_facts(name: str, gem: Any, listed: Any) -> PackageFacts | None:
    doc = as_dict(gem)
    if not same_name(doc.get("name"), name):
        return None
    source_uri = as_str(doc.get("source_code_uri"))
    home = as_str(doc.get("homepage_uri"))
    return PackageFacts(
        source=str(doc["name"]),
        downloads=as_int(doc.get("downloads")),
        version_count=len(listed) if isinstance(listed, list) else 0,
        has_repository=source_uri is not None,
        repository_urls=tuple(u for u in (source_uri, home) if u),
        description=as_str(doc.get("info")),
        latest=as_str(doc.get("version")),
        first_published=earliest(
            as_dict(v).get("created_at") for v in (listed if isinstance(listed, list) else ())
        ),
        maintainers=people(doc.get("authors")),
    )


async def probe(get: Get, name: str, base: str, downloads_base: str) -> PackageFacts | None:
    status, body = await get(gem_info_url(base, quote(name, safe="")))
    if reachable(status) != 200:
        return None
    v_status, v_body = await get(versions_url(base, quote(name, safe="")))
    return probe_facts(name, json_or_none(body), json_or_none(v_body) if v_status == 200 else None)
