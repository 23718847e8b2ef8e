"""The npm registry: packuments (``GET {registry}/{name}``).

A packument lists every published version under ``versions`` (version → manifest) and
the install default under ``dist-tags.latest`` (not necessarily the highest semver).
A manifest's ``bin`` is an object ``{command: path}`` or a string, which names one
command after the package without its scope (``@scope/tool`` → ``tool``); npm links
commands from the packument's manifest, so that is what a recipe's executables follow.
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
    bins,
    earliest,
    iso_date,
    json_or_none,
    people,
    reachable,
    same_name,
)

# npm's rules for new names (validate-npm-package-name), plus the upper case that
# legacy names still carry: no URL, path, git or file specs ever reach `npm install`.
_NAME = re.compile(r"(@[a-z0-9][a-z0-9._~-]*/)?[A-Za-z0-9][A-Za-z0-9._~-]*")
_COMMAND = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def valid_name(name: str) -> bool:
    return len(name) <= 214 and _NAME.fullmatch(name) is not None


def escaped_name(name: str) -> str:
    """The path segment npm requests: ``@scope/pkg`` → ``@scope%2fpkg``."""
    return name.replace("/", "%2f")


def packument_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/{escaped_name(name)}"


def latest(packument: Any) -> str | None:
    return as_str(as_dict(as_dict(packument).get("dist-tags")).get("latest"))


def versions(packument: Any) -> list[str]:
    return [v for v in as_dict(as_dict(packument).get("versions")) if isinstance(v, str)]


def manifest(packument: Any, version: str) -> dict[str, Any]:
    return as_dict(as_dict(as_dict(packument).get("versions")).get(version))


def executables(manifest: Any, package: str) -> list[str]:
    """The commands a version installs, from its ``bin`` (either form); names that
    could not be a file in ``bin/`` are left out."""
    bin_field = as_dict(manifest).get("bin")
    if isinstance(bin_field, str) and bin_field.strip():
        names = [package.rsplit("/", 1)[-1]]
    elif isinstance(bin_field, dict):
        names = [k for k, v in bin_field.items() if isinstance(v, str)]
    else:
        names = []
    return [n for n in names if _COMMAND.fullmatch(n)]


# ---- discovery's probe: the packument and ``/downloads/point/last-week/<n>``
# (api.npmjs.org): weekly downloads, ``len(versions)``, ``repository.url``


def probe_facts(name: str, packument: Any, downloads: Any) -> PackageFacts | None:
    doc = as_dict(packument)
    if not same_name(doc.get("name"), name):
        return None
    repo = doc.get("repository")
    repo_url = as_str(repo.get("url")) if isinstance(repo, dict) else as_str(repo)
    listed = doc.get("versions")
    newest = as_str(as_dict(doc.get("dist-tags")).get("latest"))
    manifest = as_dict(as_dict(listed).get(newest or ""))
    times = as_dict(doc.get("time"))
    return PackageFacts(
        source=str(doc["name"]),
        downloads=as_int(as_dict(downloads).get("downloads")),
        version_count=len(listed) if isinstance(listed, dict) else 0,
        has_repository=repo_url is not None,
        repository_urls=(repo_url,) if repo_url else (),
        description=as_str(doc.get("description")),
        latest=newest,
        # A published version's manifest without ``bin`` installs no command.
        executables=(bins(manifest.get("bin")) or ()) if manifest.get("version") else None,
        first_published=iso_date(times.get("created"))
        or earliest(v for k, v in times.items() if k != "modified"),
        maintainers=people(doc.get("author"), doc.get("maintainers")),
    )


async def probe(get: Get, name: str, base: str, downloads_base: str) -> PackageFacts | None:
    import trio

    results: dict[str, tuple[int, bytes] | None] = {}
    failed: list[Exception] = []

    async def fetch(key: str, url: str) -> None:
        try:
            results[key] = await get(url)
        except Exception as exc:
            results[key] = None  # the download count is optional; a failure is 0
            if key == "doc":  # the package's document is not: the registry was not asked
                failed.append(exc)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetch, "doc", f"{base}/{quote(name, safe='@')}")
        nursery.start_soon(
            fetch, "dl", f"{downloads_base}/downloads/point/last-week/{quote(name, safe='@')}"
        )
    if failed:
        raise failed[0]
    doc = results.get("doc")
    if doc is None or reachable(doc[0]) != 200:
        return None
    dl = results.get("dl")
    counts = json_or_none(dl[1]) if dl and dl[0] == 200 else None
    return probe_facts(name, json_or_none(doc[1]), counts)
