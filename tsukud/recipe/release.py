"""A release as a recipe sees it: its tag, its asset names and their published digests.

The matcher, the static checks and validation all read releases this way; it lives with
the recipe format because ``{version}`` is the recipe's own rule for a tag.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from tsukud.recipe.version import normalize_version, tag_to_version


class Release(msgspec.Struct, frozen=True, kw_only=True):
    """One GitHub release as the create pipeline sees it: tag and asset names.

    ``version`` is what ``{version}`` expands to for this tag (tsukud.recipe's
    normalisation), so templates are inferred and replayed with the same rule the
    installer uses to build the download URL.
    """

    tag: str
    assets: tuple[str, ...]
    prerelease: bool = False
    draft: bool = False
    # Optional sha256 digests from the API (``digest: "sha256:..."``), by asset name.
    digests: Mapping[str, str] = msgspec.field(default_factory=dict)
    # The recipe's ``[version] tag_prefix``, when it has one: stripped as the version
    # source strips it, with no further normalisation.
    tag_prefix: str | None = None

    @property
    def version(self) -> str:
        if self.tag_prefix:
            return tag_to_version(self.tag, self.tag_prefix) or normalize_version(self.tag)
        return normalize_version(self.tag)
