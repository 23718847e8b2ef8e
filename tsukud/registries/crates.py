"""crates.io's web API (``/api/v1/crates/<name>``).

``crate.max_stable_version`` is the highest version neither yanked nor a pre-release
(null when there is none); each entry of ``versions`` has ``num``, ``yanked`` and, for
crates analysed since 2024, ``bin_names`` (null means unknown, not "no binaries").
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
    iso_date,
    json_or_none,
    people,
    reachable,
    same_name,
)

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")


def valid_name(name: str) -> bool:
    return _NAME.fullmatch(name) is not None


def crate_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/api/v1/crates/{name}"


def latest(crate: Any) -> str | None:
    info = as_dict(as_dict(crate).get("crate"))
    return as_str(info.get("max_stable_version")) or as_str(info.get("max_version"))


def _entries(crate: Any) -> list[dict[str, Any]]:
    entries = as_dict(crate).get("versions")
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def versions(crate: Any) -> list[str]:
    return [n for e in _entries(crate) if not e.get("yanked") and (n := as_str(e.get("num")))]


def bin_names(crate: Any, version: str) -> list[str] | None:
    """The binaries of ``version``, or None when crates.io does not know them."""
    for entry in _entries(crate):
        if entry.get("num") == version:
            names = entry.get("bin_names")
            if isinstance(names, list):
                return [n for n in names if isinstance(n, str) and n]
            return None
    return None


def download_url(base: str, name: str, version: str) -> str:
    """The API host's download path (``dl_path``), which redirects to the static host."""
    return f"{base.rstrip('/')}/api/v1/crates/{name}/{version}/download"


def manifest_bins(cargo_toml: str, files: list[str]) -> list[str]:
    """The binaries a published crate builds, from its Cargo.toml and its file list
    (paths inside the package, ``src/main.rs``...): each ``[[bin]] name``, plus
    cargo's auto-discovery unless ``autobins = false`` (``src/main.rs`` is named after
    the package, ``src/bin/<name>.rs`` and ``src/bin/<name>/main.rs`` after the file
    or directory). An unreadable manifest builds nothing we can name."""
    import tomllib

    try:
        doc = tomllib.loads(cargo_toml)
    except tomllib.TOMLDecodeError:
        return []
    package = as_dict(doc.get("package"))
    names: list[str] = []
    declared = doc.get("bin")
    for entry in declared if isinstance(declared, list) else []:
        name = as_str(as_dict(entry).get("name"))
        if name:
            names.append(name)
    if package.get("autobins") is not False:
        if "src/main.rs" in files and (pkg := as_str(package.get("name"))):
            names.append(pkg)
        for f in files:
            parts = f.split("/")
            if parts[:2] == ["src", "bin"] and len(parts) == 3 and parts[2].endswith(".rs"):
                names.append(parts[2].removesuffix(".rs"))
            elif parts[:2] == ["src", "bin"] and len(parts) == 4 and parts[3] == "main.rs":
                names.append(parts[2])
    return list(dict.fromkeys(n for n in names if _NAME.fullmatch(n)))


# ---- discovery's probe: ``crate.recent_downloads`` (90 days), ``len(versions)``,
# ``crate.repository``


def probe_facts(name: str, body: Any) -> PackageFacts | None:
    crate = as_dict(as_dict(body).get("crate"))
    if not same_name(crate.get("name") or crate.get("id"), name):
        return None
    repo_url = as_str(crate.get("repository"))
    entries = as_dict(body).get("versions")
    count = len(entries) if isinstance(entries, list) else len(crate.get("versions") or [])
    newest = as_dict(entries[0]) if isinstance(entries, list) and entries else {}
    return PackageFacts(
        source=str(crate.get("name") or name),
        downloads=as_int(crate.get("recent_downloads")),
        version_count=count,
        has_repository=repo_url is not None,
        repository_urls=(repo_url,) if repo_url else (),
        description=as_str(crate.get("description")),
        latest=as_str(crate.get("max_stable_version")) or as_str(crate.get("max_version")),
        executables=bins(newest.get("bin_names")) if "bin_names" in newest else None,
        first_published=iso_date(crate.get("created_at")),
        maintainers=people(
            [as_dict(v).get("published_by") for v in entries] if isinstance(entries, list) else []
        ),
    )


async def probe(get: Get, name: str, base: str, downloads_base: str) -> PackageFacts | None:
    status, body = await get(f"{base}/api/v1/crates/{quote(name, safe='')}")
    return probe_facts(name, json_or_none(body)) if reachable(status) == 200 else None
