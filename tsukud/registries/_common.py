"""Helpers the registry readers share: tolerant access to decoded JSON."""

from __future__ import annotations

from typing import Any


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
