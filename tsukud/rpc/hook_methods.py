"""RPC methods for the shell hooks: rebuilding the binary index they read."""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from tsukud.flows.hook_index import reindex
from tsukud.rpc.registry import method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.hooks.service import IndexBuilt


class ReindexParams(msgspec.Struct, forbid_unknown_fields=True):
    fetch: bool = False  # fetch the registry's manifest first when none is cached


@method("hooks.reindex", ReindexParams)
async def hooks_reindex(s: Services, p: ReindexParams, call: Call) -> IndexBuilt:
    """Rewrite $TSUKU_HOME/share/binary-index.tsv from recipes and installed tools."""
    registry = s.installer.registry if p.fetch else None
    return await reindex(s.hook_index, registry, call.progress)
