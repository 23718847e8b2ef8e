"""RPC methods for the shell hooks: rebuilding the binary index they read."""

from __future__ import annotations

from typing import Any

from tsukud.daemon import Daemon
from tsukud.rpc.registry import NoParams, method
from tsukud.rpc.server import Call


@method("hooks.reindex", NoParams)
async def hooks_reindex(d: Daemon, p: NoParams, call: Call) -> dict[str, Any]:
    """Rewrite $TSUKU_HOME/share/binary-index.tsv from recipes and installed tools."""
    return await d.services.hook_index.rebuild()
