"""The Go module proxy protocol (``/<module>/@v/list``, ``/<module>/@latest``).

Module paths are case-encoded (each upper-case letter becomes ``!`` + lower case);
``@v/list`` has one version per line, without pseudo-versions.
"""

from __future__ import annotations

import re
from typing import Any

from tsukud.registries._common import as_dict, as_str

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
