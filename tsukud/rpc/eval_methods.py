"""RPC methods for measuring the builder and discovery: ``eval.create``,
``eval.discover`` and ``eval.compare`` (docs/eval.md). The runs, which span create or
discovery and the ledger, are ``tsukud.flows.eval_run`` and ``eval_discover``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from tsukud.flows.eval_run import DiscoverOptions, EvalOptions
from tsukud.rpc.registry import method
from tsukud.rpc.server import Call
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.flows.eval_discover import DiscoverEvalReport
    from tsukud.flows.eval_run import CreateEvalReport, RunsCompared


class CompareParams(msgspec.Struct, forbid_unknown_fields=True):
    run_a: str
    run_b: str


@method("eval.create", EvalOptions)
async def eval_create(s: Services, p: EvalOptions, call: Call) -> CreateEvalReport:
    """Create a recipe for each corpus item, check it against the known answer, and
    answer with the run's figures (each item in the ledger as ``eval.item``)."""
    replaying = {"TSUKU_LLM_REPLAY_DIR": p.replay} if p.replay else {}
    with s.settings_for(replaying):  # the model's answers from the recording, this run only
        return await s.eval_run.run(p, progress=call.progress)


@method("eval.discover", DiscoverOptions)
async def eval_discover(s: Services, p: DiscoverOptions, call: Call) -> DiscoverEvalReport:
    """Discover each corpus tool's source, score it against the known one, and answer
    with the run's figures (each item in the ledger as ``eval.item``, kind discover)."""
    return await s.eval_discover.run(p, progress=call.progress)


@method("eval.compare", CompareParams)
async def eval_compare(s: Services, p: CompareParams, call: Call) -> RunsCompared:
    """Two runs' figures and the difference in success rate with its significance."""
    return await s.eval_run.compare(p.run_a, p.run_b)
