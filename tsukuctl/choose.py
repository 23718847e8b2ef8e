"""A numbered choice from the daemon (a ``confirm`` frame with a ``choose`` list): the
daemon's message already lists the options; the person types a number, or 0 (or
nothing) for none. Standard library only."""

from __future__ import annotations

import sys

from tsukuctl.answer import read_line
from tsukud.terminal import terminal_safe

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TRIES = 3


def is_choice(question: dict[str, Any]) -> bool:
    return isinstance(question.get("choose"), list)


def parse_pick(reply: str, count: int) -> int | None:
    """``reply`` as a number from 0 (none) to ``count``; None when it is not one."""
    text = reply.strip()
    if not text:
        return 0
    if not text.isdigit():
        return None
    n = int(text)
    return n if 0 <= n <= count else None


def choose_on_terminal(question: dict[str, Any]) -> int:
    """Show the list and read a number: the pick (1-based), or 0 for none."""
    count = len(question["choose"])
    message = terminal_safe(str(question.get("message", "")))
    asked = terminal_safe(str(question.get("question", "Which one?")), one_line=True)
    sys.stderr.write(f"{message}\n")
    for _ in range(TRIES):
        sys.stderr.write(f"{asked} [1-{count}, 0 or Enter for none] ")
        sys.stderr.flush()
        try:
            reply = read_line()
        except (OSError, KeyboardInterrupt):
            return 0
        if not reply:
            return 0  # end of input
        picked = parse_pick(reply, count)
        if picked is not None:
            return picked
        sys.stderr.write(f"type a number from 1 to {count}, or 0 for none\n")
    return 0


def answer_params(question: dict[str, Any], answer: bool | int) -> dict[str, Any]:
    """The ``confirm.answer`` params for what ``on_confirm`` returned."""
    if is_choice(question):
        picked = 0 if isinstance(answer, bool) else int(answer)
        return {"token": question.get("token"), "yes": picked > 0, "choice": picked or None}
    return {"token": question.get("token"), "yes": bool(answer)}
