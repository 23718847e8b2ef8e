"""The Go module proxy protocol (``/<module>/@v/list``, ``/<module>/@latest``).

Module paths are case-encoded (each upper-case letter becomes ``!`` + lower case);
``@v/list`` has one version per line, without pseudo-versions.
"""

from __future__ import annotations

import re
from typing import Any

from tsukud.registries._common import (
    Get,
    PackageFacts,
    as_dict,
    as_str,
    json_or_none,
    reachable,
)

_MODULE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._~-]*(/[A-Za-z0-9._~-]+)*")


def valid_module(module: str) -> bool:
    """A module (or package) path: dotted first element, no ``..``, no scheme."""
    first = module.split("/", 1)[0]
    return (
        _MODULE.fullmatch(module) is not None
        and "." in first
        and ".." not in module.split("/")
        and len(module) <= 500
    )


def escape(module: str) -> str:
    return "".join("!" + c.lower() if c.isupper() else c for c in module)


def list_url(base: str, module: str) -> str:
    return f"{base.rstrip('/')}/{escape(module)}/@v/list"


def latest_url(base: str, module: str) -> str:
    return f"{base.rstrip('/')}/{escape(module)}/@latest"


def versions(listing: str) -> list[str]:
    return [line.strip() for line in listing.splitlines() if line.strip()]


def info_version(info: Any) -> str | None:
    """``Version`` of an ``.info`` / ``@latest`` answer."""
    return as_str(as_dict(info).get("Version"))


def zip_url(base: str, module: str, version: str) -> str:
    return f"{base.rstrip('/')}/{escape(module)}/@v/{escape(version)}.zip"


_MAJOR = re.compile(r"v[2-9][0-9]*|v[1-9][0-9]+")


def binary_name(package: str) -> str:
    """What ``go install`` names a package's binary: the last path element, a
    trailing major-version element (``/v2``) skipped."""
    parts = package.rstrip("/").split("/")
    if len(parts) > 1 and _MAJOR.fullmatch(parts[-1]):
        return parts[-2]
    return parts[-1]


def main_packages(module_zip: bytes, module: str, version: str) -> list[str]:
    """The directories (relative to the module's root, ``""`` for the root) that hold
    a ``main`` package: a non-test ``.go`` file there says ``package main``. Read from
    the module zip; an unreadable zip has none."""
    import io
    import zipfile

    top = f"{module}@{version}/"
    found: list[str] = []
    try:
        with zipfile.ZipFile(io.BytesIO(module_zip)) as zf:
            for name in sorted(zf.namelist()):
                rel = name.removeprefix(top)
                directory, _, file = rel.rpartition("/")
                if rel == name or directory in found or "testdata" in directory.split("/"):
                    continue
                if not file.endswith(".go") or file.endswith("_test.go"):
                    continue
                text = zf.read(name)[:65536].decode("utf-8", "replace")
                if re.search(r"^package\s+main\b", text, re.M):
                    found.append(directory)
    except (zipfile.BadZipFile, OSError):
        return []
    return sorted(found)


def version_module(package: str, declared: str | None = None) -> str:
    """The module whose versions an install of ``package`` (a package path)
    installs, as tsuku reads it: the recipe's ``[version] module`` when it names one;
    else ``github.com/<owner>/<repo>`` for a GitHub path, the part before ``/cmd/``,
    or the path itself (a module whose root is the command)."""
    if declared:
        return declared
    parts = package.split("/")
    if parts[0] == "github.com" and len(parts) > 3:
        return "/".join(parts[:3])
    if "/cmd/" in package:
        return package.split("/cmd/", 1)[0]
    return package


# ---- discovery's probe: ``/<module>/@latest`` and ``/<module>/@v/list``; the listed
# versions, ``Origin.URL`` (a tool name is a module path only when it is one dotted
# element)


def probe_facts(module: str, latest_doc: Any, version_list: str) -> PackageFacts | None:
    doc = as_dict(latest_doc)
    version = as_str(doc.get("Version"))
    if version is None:
        return None
    origin_url = as_str(as_dict(doc.get("Origin")).get("URL"))
    lines = [x for x in version_list.splitlines() if x.strip()]
    return PackageFacts(
        source=module,
        version_count=len(lines),
        has_repository=origin_url is not None,
        repository_urls=(origin_url,) if origin_url else (),
        latest=version,
    )


async def probe(get: Get, name: str, base: str, downloads_base: str) -> PackageFacts | None:
    status, body = await get(latest_url(base, name))
    if reachable(status) != 200:
        return None
    l_status, l_body = await get(list_url(base, name))
    listing = l_body.decode("utf-8", "replace") if l_status == 200 else ""
    return probe_facts(name, json_or_none(body), listing)
