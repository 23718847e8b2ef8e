"""Asking the user, through the client that made the request.

The daemon cannot prompt: it sends the question as a progress frame
``{"confirm": {"token", "message", ...}}`` and waits for the client to answer with a
``confirm.answer`` request on the same connection (schema/rpc.md). A client that said it
cannot ask (no terminal) gets a ``confirmation_required`` error instead, whose hint
names ``--yes``. Questions, answers and time-outs are events.

A caller that measures machine time (discovery's deadline) registers a hook with
:func:`pausing`; every question asked in that task (or a task it starts) waits for the
answer inside the hook, so the person's thinking time is not the machine's.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import trio

from tsukud.errors import ConfirmationRequired, UserDeclined
from tsukud.events.store import EventStore

ANSWER_TIMEOUT_S = 300.0

WaitHook = Callable[[], AbstractContextManager[None]]
_WAIT_HOOKS: ContextVar[tuple[WaitHook, ...]] = ContextVar("tsuku_wait_hooks", default=())


@contextmanager
def pausing(hook: WaitHook) -> Iterator[None]:
    """Inside, every wait for a person's answer runs inside ``hook()``."""
    token = _WAIT_HOOKS.set((*_WAIT_HOOKS.get(), hook))
    try:
        yield
    finally:
        _WAIT_HOOKS.reset(token)


@dataclass
class _Pending:
    done: trio.Event = field(default_factory=trio.Event)
    yes: bool = False
    choice: int | None = None  # a ``choose`` question: the number picked (1-based)


class Confirmations:
    def __init__(self, store: EventStore) -> None:
        self._store = store
        self._pending: dict[str, _Pending] = {}

    async def ask(
        self,
        progress: Any,
        *,
        can_ask: bool,
        session: str | None,
        question: ConfirmationRequired,
        timeout_s: float = ANSWER_TIMEOUT_S,
        shown: dict[str, Any] | None = None,
    ) -> None:
        """Return if the user says yes; raise ``UserDeclined`` or the original question.
        ``shown``: what the client needs to show besides the question's data (a whole
        recipe), sent in the frame but not recorded in the ledger."""
        pending, timed_out = await self._put(
            progress, can_ask, session, question, timeout_s, shown or {}
        )
        if not pending.yes:
            raise UserDeclined(
                "declined" + (" (no answer within 5 minutes)" if timed_out else ""),
            )

    async def choose(
        self,
        progress: Any,
        *,
        can_ask: bool,
        session: str | None,
        question: ConfirmationRequired,
        options: list[dict[str, Any]],
        timeout_s: float = ANSWER_TIMEOUT_S,
    ) -> int | None:
        """A numbered choice (the frame's ``choose`` list): the number picked (1-based),
        or None when the user picks none (or does not answer)."""
        pending, _timed_out = await self._put(
            progress, can_ask, session, question, timeout_s, {"choose": options}
        )
        picked = pending.choice
        if pending.yes and picked is not None and 1 <= picked <= len(options):
            return picked
        return None

    async def _put(
        self,
        progress: Any,
        can_ask: bool,
        session: str | None,
        question: ConfirmationRequired,
        timeout_s: float,
        shown: dict[str, Any],
    ) -> tuple[_Pending, bool]:
        if not can_ask:
            raise question
        token = secrets.token_hex(8)
        pending = self._pending[token] = _Pending()
        try:
            await progress(
                {
                    "confirm": {
                        "token": token,
                        "message": question.message,
                        "question": "Continue?",
                        **question.data,
                        **shown,
                    }
                }
            )
            with ExitStack() as hooks:
                for hook in _WAIT_HOOKS.get():
                    hooks.enter_context(hook())
                with trio.move_on_after(timeout_s) as scope:
                    await pending.done.wait()
        finally:
            del self._pending[token]
        answer = "granted" if pending.yes else "declined"
        reason = "timeout" if scope.cancelled_caught else "answered"
        picked = {"choice": pending.choice} if "choose" in shown and pending.yes else {}
        await self._store.append(
            f"confirmation.{answer}", {"reason": reason, **question.data, **picked}, session
        )
        return pending, scope.cancelled_caught

    def answer(self, token: str, yes: bool, choice: int | None = None) -> bool:
        pending = self._pending.get(token)
        if pending is None or pending.done.is_set():
            return False
        pending.yes = yes
        pending.choice = choice
        pending.done.set()
        return True
