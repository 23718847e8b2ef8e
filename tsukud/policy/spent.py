"""What one request has spent so far, for the line a cancelled client prints.

A user who presses Ctrl-C in the middle of ``create`` wants to know whether the run
cost money. Every cost is settled through ``Budget.settle`` (shielded, so also when the
run is cancelled), and the RPC server opens a :func:`tally` around each request; the
settlement adds to the tally of the request it happens in, found through a context
variable that trio copies into every task the request starts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal


class Tally:
    """Money a request's runs have settled (USD), and how many settlements there were."""

    __slots__ = ("settlements", "usd")

    def __init__(self) -> None:
        self.usd = Decimal(0)
        self.settlements = 0


_CURRENT: ContextVar[Tally | None] = ContextVar("tsuku_request_spend", default=None)


def record(usd: float) -> None:
    """Count a settled cost towards the current request (none outside a request)."""
    current = _CURRENT.get()
    if current is not None:
        current.usd += Decimal(str(usd))
        current.settlements += 1


@contextmanager
def tally() -> Iterator[Tally]:
    """Count what is settled inside this block (and the tasks it starts)."""
    current = Tally()
    token = _CURRENT.set(current)
    try:
        yield current
    finally:
        _CURRENT.reset(token)
