"""The made-up Quokka registry's reader: pure functions over its JSON documents and
discovery's ``probe``, what a real ``tsukud/registries/<name>.py`` holds.

``/pouches/<name>.json``: ``{"name", "latest", "versions": [...], "downloads",
"repository", "description"}``.
"""

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
    json_or_none,
    reachable,
)

_NAME = re.compile(r"[a-z][a-z0-9-]{0,63}")


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def pouch_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/pouches/{quote(name, safe='')}.json"


def versions(doc: Any) -> list[str]:
    listed = as_dict(doc).get("versions")
    return [v for v in listed if isinstance(v, str)] if isinstance(listed, list) else []


def latest(doc: Any) -> str | None:
    return as_str(as_dict(doc).get("latest"))


async def probe(get: Get, name: str, base: str, downloads_base: str) -> PackageFacts | None:
    status, body = await get(pouch_url(base, name))
    if reachable(status) != 200:
        return None
    doc = as_dict(json_or_none(body))
    repository = as_str(doc.get("repository"))
    return PackageFacts(
        source=name,
        downloads=as_int(doc.get("downloads")),
        version_count=len(versions(doc)),
        has_repository=repository is not None,
        repository_urls=(repository,) if repository else (),
        description=as_str(doc.get("description")),
        latest=latest(doc),
    )
