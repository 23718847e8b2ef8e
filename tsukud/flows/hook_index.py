"""The shell hook's command index, built from the registry right away.

``tsukuctl hook install`` on a fresh home has no registry manifest yet: the index would
know no command until the first ``update-registry``. This fetches the manifest when
none is cached (telling the client, it is the one slow step) and then rebuilds the
index, so the hook suggests tools from its first prompt. An unreachable registry is
not an error: the index is built from what is on disk and the result says why it has
no registry names.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from tsukud.errors import TsukuError
from tsukud.progress import Progress

if TYPE_CHECKING:
    from tsukud.hooks.service import HookIndex, IndexBuilt
    from tsukud.install.registry import Registry


async def reindex(
    hook_index: HookIndex, registry: Registry | None, progress: Progress
) -> IndexBuilt:
    """Rebuild the index; first fetch the manifest if ``registry`` is given and none is
    cached. The index's stats, plus ``manifest``: ``cached``, ``fetched`` or the error."""
    manifest = "not asked"
    if registry is not None:
        manifest = "cached"
        if registry.cached_manifest() is None:
            await progress(
                {"stage": "fetching the registry's recipe list", "url": registry.manifest_url}
            )
            try:
                await registry.fetch_manifest()
                manifest = "fetched"
            except TsukuError as e:
                manifest = f"unavailable: {e.message}"
    await progress({"stage": "building the command index"})
    return msgspec.structs.replace(await hook_index.rebuild(), manifest=manifest)
