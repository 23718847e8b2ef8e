"""``fetch_file``: which paths the model may ask for, and every answer it can get.

The path comes from the model, which read it from release assets and a README written
by strangers, so it is validated before any request is built from it. The rules run in
a fixed order (control characters, ``%``, ``..`` or backslashes, absolute, trailing or
doubled slashes and URLs, then the allowed shape and length), and each failure says
which rule it broke, so the model can correct the path instead of guessing. The result
builders are the only way a ``fetch_file`` result is made, so every outcome has one
shape and one wording.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

import msgspec

MAX_FILE_BYTES = 50 * 1024
TOO_LARGE_MESSAGE = "File exceeds 50KB limit. Try a more specific path or request a summary."

PATH_VALIDATION = "path_validation"
FILE_NOT_FOUND = "file_not_found"
FILE_TOO_LARGE = "file_too_large"
API_ERROR = "api_error"

_SHAPE = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9/_.-]{0,199}")


class FetchOk(msgspec.Struct, frozen=True, kw_only=True):
    ok: Literal[True] = True
    content: str
    bytes: int


class FetchError(msgspec.Struct, frozen=True, kw_only=True):
    ok: Literal[False] = False
    error_type: str
    message: str


FetchResult = FetchOk | FetchError


# --------------------------------------------------------------------------- rules


def _has_control(text: str) -> bool:
    return any(unicodedata.category(c) == "Cc" for c in text)


def validate_path(raw: str) -> str | FetchError:
    """The trimmed path, or the first rule it breaks."""
    path = raw.strip()
    if _has_control(path):
        return path_error("Path contains control characters or NUL bytes.")
    if "%" in path:
        return path_error("Path must not contain '%': percent-encoding is not allowed.")
    if ".." in path or "\\" in path:
        return path_error("Path must not contain '..' or '\\': no directory traversal.")
    if path.startswith("/"):
        return path_error("Path must be relative to the repository root (no leading '/').")
    if path.endswith("/"):
        return path_error("Path must name a file, not a directory (no trailing '/').")
    if "//" in path:
        if "://" in path:
            return path_error(
                "Path must be a file path in the repository (e.g. 'docs/INSTALL.md'), not a URL."
            )
        return path_error("Path must not contain empty segments ('//').")
    if not _SHAPE.fullmatch(path):
        if not path:
            return path_error("Path is empty.")
        if len(path) > 200:
            return path_error("Path is longer than 200 characters.")
        return path_error(
            "Path must start with a letter or digit and use only letters, digits, "
            "'/', '_', '.' and '-'."
        )
    return path


# ---------------------------------------------------------------------- results


def path_error(message: str) -> FetchError:
    return FetchError(error_type=PATH_VALIDATION, message=message)


def file_not_found(path: str) -> FetchError:
    return FetchError(error_type=FILE_NOT_FOUND, message=f"File not found: {path}")


def not_a_file(path: str) -> FetchError:
    return FetchError(error_type=API_ERROR, message=f"Path is not a file: {path}")


def missing_size(path: str) -> FetchError:
    return FetchError(
        error_type=API_ERROR,
        message=f"Failed to read file: the contents API gave no size for {path}",
    )


def too_large() -> FetchError:
    return FetchError(error_type=FILE_TOO_LARGE, message=TOO_LARGE_MESSAGE)


def api_error(message: str) -> FetchError:
    return FetchError(error_type=API_ERROR, message=f"Failed to read file: {message}")


def success(content: str) -> FetchOk:
    """``bytes`` is the UTF-8 size of what the model receives."""
    return FetchOk(content=content, bytes=len(content.encode("utf-8")))


def from_contents(path: str, meta: dict[str, object], content: str | None) -> FetchResult:
    """The result for a contents-API answer already fetched: ``meta`` is its JSON
    (``type``, ``size``), ``content`` the decoded text (``None`` if not yet fetched).

    Size is judged on the API's ``size`` (decoded bytes) before any content is used,
    so an oversized file is refused whole, never truncated.
    """
    if meta.get("type") != "file":
        return not_a_file(path)
    size = meta.get("size")
    if not isinstance(size, int) or isinstance(size, bool):
        return missing_size(path)
    if size > MAX_FILE_BYTES:
        return too_large()
    if size == 0:
        return success("")
    if content is None:
        return api_error(f"no content returned for {path}")
    return success(content)
