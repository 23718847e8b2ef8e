"""Helpers the registry readers share: tolerant access to decoded JSON, and what a
reader's discovery probe answers (:class:`PackageFacts`)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

# ``await get(url) -> (status, body)``: any status comes back; network errors raise.
# Discovery passes it in, so the readers' probes make no request of their own.
Get = Callable[[str], Awaitable[tuple[int, bytes]]]


@dataclass(frozen=True)
class PackageFacts:
    """What a registry says about the package of an exact name, in the terms every
    registry shares: discovery turns it into its ``Probe`` (GitHub slugs included)."""

    source: str  # the package name as the registry spells it (module path for go)
    downloads: int = 0
    version_count: int = 0
    has_repository: bool = False
    repository_urls: tuple[str, ...] = ()  # where the source may be, in preference order
    description: str | None = None
    latest: str | None = None
    executables: tuple[str, ...] | None = None  # None: the registry does not say
    first_published: str | None = None  # ISO date
    maintainers: tuple[str, ...] = ()


class RegistryUnreachable(Exception):
    """A registry that answered with an outage (5xx) or a rate limit: unknown, not absent."""


def reachable(status: int) -> int:
    """``status``, unless it says the registry is down or limiting (then raise)."""
    if status >= 500 or status == 429:
        raise RegistryUnreachable(f"HTTP {status}")
    return status


def json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def same_name(a: Any, name: str) -> bool:
    return isinstance(a, str) and a.lower() == name.lower()


def bins(value: Any) -> tuple[str, ...] | None:
    """A manifest's executables: a path, names to paths, or a list of names."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, dict):
        return tuple(str(k) for k in value)
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, str))
    return None


def iso_date(value: Any) -> str | None:
    """The ``YYYY-MM-DD`` of an ISO timestamp a registry gave, else None."""
    text = as_str(value)
    return text[:10] if text and re.match(r"\d{4}-\d\d-\d\d", text) else None


def earliest(values: Iterable[Any]) -> str | None:
    dates = [d for v in values if (d := iso_date(v))]
    return min(dates) if dates else None


def people(*values: Any) -> tuple[str, ...]:
    """Names from a registry's people fields: a string (``"A, B"``), ``{"name"}`` or
    ``{"login"}`` objects, or lists of those; in order, once each."""
    names: list[str] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                item = item.get("name") or item.get("login")
            text = as_str(item)
            if text:
                names += [n.strip() for n in text.split(",") if n.strip()]
    return tuple(dict.fromkeys(n[:80] for n in names))[:5]
