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

from tsukud.registries._common import as_dict, as_str

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
