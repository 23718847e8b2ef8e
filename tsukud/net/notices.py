"""Telling the person, while a request runs, what it is waiting on.

A request that meets a 502 and tries again waits seconds with nothing to show; without
a word the person cannot tell a retry from a hang. The RPC server hands each request's
progress channel to :func:`to`; the HTTP client, deep below any handler, then calls
:func:`retrying` before each wait, and the line reaches the client as a progress frame
(``{"stage": "retry", "message": ...}``). A context variable, not an argument threaded
through every layer: retries happen in code that knows nothing of requests, and a run
with no request behind it (a batch job) simply tells no one (the log has every retry).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

Send = Callable[[Any], Awaitable[None]]

_SINK: ContextVar[Send | None] = ContextVar("tsuku_progress_sink", default=None)


class to:
    """Inside, :func:`retrying` (and whatever else tells the person) sends to ``send``.
    A class rather than a generator: the RPC server opens one around every request."""

    __slots__ = ("_send", "_token")

    def __init__(self, send: Send) -> None:
        self._send = send

    def __enter__(self) -> None:
        self._token = _SINK.set(self._send)

    def __exit__(self, *exc: object) -> None:
        _SINK.reset(self._token)


def retry_line(what: str, error: str, tries: int, max_tries: int, wait: float) -> str:
    """``https://…: HTTP 502; trying again in 1.2 s (try 2 of at most 5)`` (an error
    that already names what failed is not prefixed with it again)."""
    said = error if error.startswith(what) else f"{what}: {error}"
    return f"{said}; trying again in {wait:.1f} s (try {tries + 1} of at most {max_tries})"


async def retrying(what: str, error: str, tries: int, max_tries: int, wait: float) -> None:
    """Say that ``what`` failed ``tries`` times and is tried again after ``wait`` s.
    A client that went away must not change the retry itself: sending errors are
    dropped (the request's own cancellation is not an ``Exception`` and passes)."""
    send = _SINK.get()
    if send is None:
        return
    with contextlib.suppress(Exception):  # the line is a courtesy; the retry goes on
        await send({"stage": "retry", "message": retry_line(what, error, tries, max_tries, wait)})
