"""RubyGems' versions API (``/api/v1/versions/<name>.json``): an array of
``{number, platform, prerelease, ...}``, newest first."""

from __future__ import annotations

import re
from typing import Any

from tsukud.registries._common import as_str

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
