"""What one request has spent so far, for the line a cancelled client prints.

A user who presses Ctrl-C in the middle of ``create`` wants to know whether the run
cost money. Every cost is settled through ``Budget.settle`` (shielded, so also when the
run is cancelled), and the RPC server opens a :func:`tally` around each request; the
settlement adds to the tally of the request it happens in, found through a context
variable that trio copies into every task the request starts.

The same tally holds what the request's runs have reserved and not yet settled, so the
confirmation threshold applies to one command as a whole (discovery, create, the
instructions builder, repairs: several runs), not to each run alone
(:meth:`tsukud.policy.budget.Budget.reserve`).
"""

from __future__ import annotations

from contextvars import ContextVar
from decimal import Decimal


class Tally:
    """Money one request (one ``tsukuctl`` command) has settled (USD), how many
    settlements there were, and what its runs hold reserved now: together, everything
    the command may still cost, which the confirmation threshold applies to."""

    __slots__ = ("accepted", "cap", "held", "settlements", "usd")

    def __init__(self) -> None:
        self.usd = Decimal(0)
        self.settlements = 0
        # open reservation -> (its run's first reservation, amount in USD)
        self.held: dict[str, tuple[str, Decimal]] = {}
        # a person said yes to this command's cost above the threshold (or --yes did)
        self.accepted = False
        # the most the whole command may cost (``batch run --max-usd``): a reservation
        # that would take settled + held past it is refused
        self.cap: Decimal | None = None

    def committed(self) -> Decimal:
        """Settled, plus everything held by any of the command's runs."""
        return self.usd + sum((amount for _, amount in self.held.values()), Decimal(0))

    def others(self, run: str | None) -> Decimal:
        """Settled, plus held by runs other than ``run`` (its first reservation)."""
        return self.usd + sum(
            (amount for first, amount in self.held.values() if first != run), Decimal(0)
        )


_CURRENT: ContextVar[Tally | None] = ContextVar("tsuku_request_spend", default=None)


def current() -> Tally | None:
    """The request's tally (None outside a request: a start-up repair)."""
    return _CURRENT.get()


def reserved(reservation: str, run: str, usd: float) -> None:
    """A reservation granted in the current request (``run``: its run's first one)."""
    current = _CURRENT.get()
    if current is not None:
        current.held[reservation] = (run, Decimal(str(usd)))


def dropped(reservation: str) -> None:
    """A reservation counted by :func:`reserved` was not granted after all."""
    current = _CURRENT.get()
    if current is not None:
        current.held.pop(reservation, None)


def record(usd: float, reservation: str | None = None) -> None:
    """Count a settled cost towards the current request (none outside a request); the
    reservation it settles is no longer held."""
    current = _CURRENT.get()
    if current is not None:
        current.usd += Decimal(str(usd))
        current.settlements += 1
        if reservation is not None:
            current.held.pop(reservation, None)


class tally:
    """Count what is settled inside this block (and the tasks it starts). A class
    rather than a generator: the RPC server opens one around every request."""

    __slots__ = ("_token", "counted")

    def __init__(self) -> None:
        self.counted = Tally()  # what the block settles (also what ``with`` gives)

    def __enter__(self) -> Tally:
        self._token = _CURRENT.set(self.counted)
        return self.counted

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)
