"""RPC methods for measuring the builder: ``eval.create`` and ``eval.compare``
(docs/eval.md). The run, which spans create and the ledger, is ``tsukud.flows.eval_run``.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tsukud.daemon import Daemon
from tsukud.flows.eval_run import EvalOptions
from tsukud.rpc.registry import method
from tsukud.rpc.server import Call


class CompareParams(msgspec.Struct, forbid_unknown_fields=True):
    run_a: str
    run_b: str


@method("eval.create", EvalOptions)
async def eval_create(d: Daemon, p: EvalOptions, call: Call) -> dict[str, Any]:
    """Create a recipe for each corpus item, check it against the known answer, and
    answer with the run's figures (each item in the ledger as ``eval.item``)."""
    return await d.services.eval_run.run(p, progress=call.progress)


@method("eval.compare", CompareParams)
async def eval_compare(d: Daemon, p: CompareParams, call: Call) -> dict[str, Any]:
    """Two runs' figures and the difference in success rate with its significance."""
    return await d.services.eval_run.compare(p.run_a, p.run_b)
