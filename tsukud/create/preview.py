"""What a person sees of a created recipe before saying yes: each standard platform's
downloads (or why it has none), the actions, the verify command and, for a recipe read
from an install page, the hosts and packages it uses.

One shape for every writer (create's GitHub pipeline, a registry's or Homebrew's
builder, the instructions builder); ``CreateResult.preview`` carries it and the client
renders it (``tsukuctl/recipe_preview.py``)."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType


class PlatformDownloads(msgspec.Struct, frozen=True, kw_only=True):
    """One platform's downloads: the assets (and their URLs, and what the recipe notes
    of that build), or ``unsupported``: why not (a Homebrew bottle missing says only
    ``true``). What a writer does not know is not sent."""

    platform: str  # os/arch, or "any" for an ecosystem's package
    assets: list[str] | UnsetType = UNSET
    urls: list[str] | UnsetType = UNSET
    notes: list[str] | UnsetType = UNSET
    unsupported: str | bool | UnsetType = UNSET


class Preview(msgspec.Struct, frozen=True, kw_only=True):
    downloads: list[PlatformDownloads]
    actions: list[str]
    verify: str | None
    verify_pattern: str | None
    # An install page's recipe: ``instructions.trust.PageUse`` values as the wire
    # carries them (create cannot import the instructions builder; ``decode_uses``
    # reads them back).
    uses: list[dict[str, Any]] | UnsetType = UNSET


def page_uses(preview: Preview | None) -> list[dict[str, Any]] | None:
    """The uses a page-derived recipe's preview lists; None for any other recipe."""
    if preview is None or isinstance(preview.uses, UnsetType):
        return None
    return preview.uses
