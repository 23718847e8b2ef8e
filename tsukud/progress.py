"""What a long request says as it goes, and what it records: each shape named once.

A request that takes a while (an install, a create run, discovery, a batch run) tells
its caller where it is through a :data:`Progress` callable, one frame per step
(``{"stage": ..., "message": ...}``: the RPC layer sends it over the request's socket),
and writes what happened to the ledger through an :data:`Emit` callable (an event type
and its payload). Features take both from their caller and never build their own, so a
test passes a list's ``append`` where the daemon passes the socket.

Three narrower shapes have their own names, so ``Progress`` means one thing: a stage's
message with its fields (:data:`Note`), a line of text (:data:`Say`) and bytes done of
a download (:data:`ByteProgress`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

# A progress frame for the client: {"stage": ..., "message": ..., ...}.
Progress = Callable[[dict[str, Any]], Awaitable[None]]
# An event for the ledger: its type ("validation.passed") and its payload.
Emit = Callable[[str, dict[str, Any]], Awaitable[None]]
# A stage's message and the fields a frame carries with it (the caller adds the stage).
Note = Callable[[str, dict[str, Any]], Awaitable[None]]
# A line of text for a person (building the validation image).
Say = Callable[[str], Awaitable[None]]
# Bytes downloaded so far and the total, when the server said it.
ByteProgress = Callable[[int, int | None], Awaitable[None]]


async def no_progress(_frame: dict[str, Any]) -> None:
    """For a caller with no one to tell."""


async def no_emit(_type: str, _payload: dict[str, Any]) -> None:
    """For a caller that records nothing (a pure run in a test or a benchmark)."""


async def no_note(_message: str, _fields: dict[str, Any]) -> None:
    """For a stage run on its own, with no caller to tell."""


__all__ = [
    "ByteProgress",
    "Emit",
    "Note",
    "Progress",
    "Say",
    "no_emit",
    "no_note",
    "no_progress",
]
