"""Discovery's time limits, in machine time: a person's answer never counts.

A discovery has an overall limit (``discover.timeout_s``) and one per stage (the
registry's, the ecosystems' own deadline inside :func:`.ecosystem.probe_all`, the LLM
conversation's). Each is a trio cancel scope on trio's clock (a ``MockClock`` in tests).
A question to the user (the LLM cost question inside the LLM stage, or any other) is
asked through :class:`tsukud.policy.confirm.Confirmations`, which runs its wait inside
every hook :func:`tsukud.policy.confirm.pausing` registered: :meth:`Deadline.paused`
lifts every open limit while the person thinks and moves it on by the time they took.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import trio


class Deadline:
    def __init__(self) -> None:
        self._open: list[trio.CancelScope] = []
        self.waited_s = 0.0  # time spent waiting for a person, over the whole discovery

    @contextmanager
    def limit(self, seconds: float) -> Iterator[trio.CancelScope]:
        """A cancel scope that ends ``seconds`` of machine time from now."""
        scope = trio.CancelScope(deadline=trio.current_time() + seconds)
        self._open.append(scope)
        try:
            with scope:
                yield scope
        finally:
            self._open.remove(scope)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """While inside, no open limit runs out; afterwards each is later by the wait."""
        started = trio.current_time()
        saved = [(scope, scope.deadline) for scope in self._open]
        for scope, _deadline in saved:
            scope.deadline = math.inf
        try:
            yield
        finally:
            waited = trio.current_time() - started
            self.waited_s += waited
            for scope, deadline in saved:
                scope.deadline = deadline + waited
