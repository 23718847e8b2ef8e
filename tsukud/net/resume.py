"""Picking up a download where a broken connection left it (HTTP range requests).

A connection that breaks in the middle of a large body should not throw away what
arrived: when the server said it serves byte ranges (``accept-ranges: bytes``), the
next try asks for the rest (``Range: bytes=N-``), guarded by ``If-Range`` with the
first answer's validator so a file that changed in between comes back whole instead
of spliced. An answer that is not the ``206`` for exactly that offset means the body
starts again from its first byte.

Pure functions over header mappings (lower-cased names, as ``Http`` gives them).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_CONTENT_RANGE = re.compile(r"^\s*bytes\s+(\d+)-(\d+)/(\d+|\*)\s*$", re.IGNORECASE)


def validator(headers: Mapping[str, str]) -> str | None:
    """What ``If-Range`` may name: a strong ETag, else ``Last-Modified``; None when the
    server offers no ranges (then a retry starts from the first byte)."""
    if headers.get("accept-ranges", "").strip().lower() != "bytes":
        return None
    etag = headers.get("etag", "").strip()
    if etag and not etag.startswith("W/"):
        return etag
    return headers.get("last-modified", "").strip() or ""


def range_headers(offset: int, guard: str | None) -> dict[str, str]:
    """The headers of a try that resumes at ``offset`` (none when it cannot resume)."""
    if offset <= 0 or guard is None:
        return {}
    headers = {"range": f"bytes={offset}-"}
    if guard:
        headers["if-range"] = guard
    return headers


def resumed_at(status: int, headers: Mapping[str, str]) -> int | None:
    """The offset a ``206`` answer's body starts at; None for a whole body (``200``) or
    a range answer we cannot read."""
    if status != 206:
        return None
    m = _CONTENT_RANGE.match(headers.get("content-range", ""))
    return int(m.group(1)) if m else None
