"""What a generation reads of an LLM run: typed, so no caller reads it with ``getattr``.

The daemon's :meth:`tsukud.llm.service.LLM.run` yields a :class:`~tsukud.llm.service.Run`
(budget, ceiling, failover); a test may open a run straight on a provider. Either way the
writer of a recipe sees the same four things: the providers in order, what was spent,
how many turns had no known price, and the warnings a person should read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from decimal import Decimal
from typing import Protocol

from tsukud.llm.types import Request, Response


class LlmRun(Protocol):
    @property
    def names(self) -> Sequence[str]:
        """The providers the run may call, the first one first."""
        ...

    @property
    def spent(self) -> Decimal:
        """USD spent by the run's priced turns."""
        ...

    @property
    def unpriced_turns(self) -> int:
        """Turns of a model with no known price: the run's cost is then unknown."""
        ...

    @property
    def warnings(self) -> Sequence[str]: ...

    async def complete(self, request: Request) -> Response: ...


# ``LLM.run``'s keyword arguments (session, purpose, providers, turns, tokens, ...).
OpenLlm = Callable[..., AbstractAsyncContextManager[LlmRun]]


def cost_usd(run: LlmRun) -> float | None:
    """What a result reports the run cost: ``None`` when some turn had no known price."""
    return None if run.unpriced_turns else float(run.spent)


def first_provider(run: LlmRun) -> str:
    """How progress names the model being asked."""
    return run.names[0] if run.names else "the LLM"
