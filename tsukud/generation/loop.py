"""The generate → check → validate → repair loop, written once.

A round asks the model for at most a number of turns; the writer judges each answer
by code (the static checks, or the install page's rules) and hands back the recipe of
the accepted one, or the findings of the last rejected one. An accepted recipe is
validated in the container. A failure (the checks' findings, where the writer repairs
them, or the validation's verdict) costs a repair: ``repair.attempted`` is recorded,
the person sees ``repairing n/m``, and the model reads the feedback in the same
conversation, at most ``max_repairs`` times; then the run ends in
``generation_failed`` or ``validation_failed``.

What differs between the writers is a :class:`Strategy`: how a round is asked and what
the model is told, how a recipe is validated, which verdict ends the loop, and whether
a rejected round is repaired or ends the run. The loop moves the run's own counters
(:class:`Tally`), which its ``generation.failed`` event reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from tsukud.generation.errors import GenerationFailed
from tsukud.progress import Emit, Progress
from tsukud.validation.errors import ValidationFailed
from tsukud.validation.findings import Finding, format_findings

if TYPE_CHECKING:
    from tsukud.recipe import Recipe
    from tsukud.validation.validator import Verdict


class Answered(msgspec.Struct, frozen=True, kw_only=True):
    """The end of one round: the accepted answer's recipe, or why there is none."""

    recipe: Recipe | None = None
    findings: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        return self.recipe is not None


class Tally(Protocol):
    """The run's counters: what the loop moves and ``generation.failed`` reports."""

    repairs: int
    stage: str


@dataclass(frozen=True)
class Strategy:
    """What one writer does its own way."""

    # One round of at most ``turns`` model calls.
    ask: Callable[[int], Awaitable[Answered]]
    # A user turn in the same conversation (the model sees its previous answer).
    tell: Callable[[str], None]
    # The recipe validated (a writer may fix it on the way); the verdict.
    validate: Callable[[Recipe], Awaitable[tuple[Recipe, Verdict]]]
    # The user turn after a failed validation: (verdict, repair number).
    feedback: Callable[[Verdict, int], str]
    # Which verdict ends the loop: create accepts a skipped one (``--skip-validation``),
    # a recipe read from an install page must pass.
    done: Callable[[Verdict], bool]
    first_turns: int
    repair_turns: int
    answer_tool: str  # the tool the model answers with
    # The user turn after a round whose answers the checks refused: (findings, repair
    # number); ``None``: such a round ends the run (its turns already had the findings).
    static_feedback: Callable[[Sequence[Finding], int], str] | None = None


@dataclass
class Loop:
    strategy: Strategy
    tally: Tally
    max_repairs: int
    emit: Emit
    progress: Progress
    clean: Callable[[str], str]  # the run's redaction of messages and output
    # Every failed attempt, oldest first: a run that ends after its repairs says what
    # went wrong each time, not only the last (``attempts`` in the error's data).
    failures: list[dict[str, Any]] = field(default_factory=list)

    async def run(self) -> tuple[Recipe, Verdict]:
        """The validated recipe and its verdict; raises when the repairs run out."""
        s, tally = self.strategy, self.tally
        answered = await s.ask(s.first_turns)
        while True:
            if answered.recipe is None:
                tally.stage = "llm"
                await self._unanswered(answered.findings)
                answered = await s.ask(s.repair_turns)
                continue
            recipe, verdict = await s.validate(answered.recipe)
            if s.done(verdict):
                return recipe, verdict
            self._failed(verdict.stage, verdict.category or "unknown", verdict.message)
            if tally.repairs >= self.max_repairs:
                raise ValidationFailed(
                    f"the recipe failed validation after {tally.repairs} repairs "
                    f"({verdict.stage}): {self.clean(verdict.message)}{self._earlier()}",
                    **failure_data(verdict, self.clean),
                    attempts=self.failures,
                )
            await self._repair(verdict.stage, verdict.category or "unknown")
            s.tell(s.feedback(verdict, tally.repairs))
            tally.stage = "llm"
            answered = await s.ask(s.repair_turns)

    async def _unanswered(self, findings: Sequence[Finding]) -> None:
        """Repair a round the checks refused, or end the run."""
        s, repairs = self.strategy, self.tally.repairs
        if s.static_feedback is None:
            raise GenerationFailed(
                f"no {s.answer_tool} answer passed the checks:\n{format_findings(findings)}",
                repairs=repairs,
                stage="static_checks",
            )
        self._failed("static_checks", findings[0].category, findings[0].message)
        if repairs >= self.max_repairs:
            raise GenerationFailed(
                f"no answer passed the static checks after {repairs} repairs:\n"
                f"{format_findings(findings)}{self._earlier()}",
                repairs=repairs,
                stage="static_checks",
                attempts=self.failures,
            )
        await self._repair("static_check", findings[0].category)
        s.tell(s.static_feedback(findings, self.tally.repairs))

    def _failed(self, stage: str, category: str, message: str) -> None:
        first = self.clean(message).strip().splitlines()[:1] or [""]
        self.failures.append(
            {
                "attempt": len(self.failures) + 1,
                "stage": stage,
                "category": category,
                "message": first[0][:300],
            }
        )

    def _earlier(self) -> str:
        """The attempts before the last, one line each (the last is the message)."""
        if len(self.failures) < 2:
            return ""
        lines = [
            f"  attempt {f['attempt']}: {f['stage']} ({f['category']}): {f['message']}"
            for f in self.failures[:-1]
        ]
        return "\nearlier attempts:\n" + "\n".join(lines)

    async def _repair(self, stage: str, category: str) -> None:
        self.tally.repairs += 1
        n = self.tally.repairs
        await self.emit(
            "repair.attempted", {"attempt": n, "kind": "llm", "stage": stage, "category": category}
        )
        await self.progress(
            {
                "stage": "repairing",
                "message": f"repairing {n}/{self.max_repairs} ({stage}: {category})",
                "attempt": n,
            }
        )


def failure_data(verdict: Verdict, clean: Callable[[str], str]) -> dict[str, Any]:
    """What ``validation_failed`` carries: where it failed and what the command said."""
    return {
        "stage": verdict.stage,
        "category": verdict.category,
        "exit_code": verdict.exit_code,
        "output": clean(verdict.output[-2000:]),
        "platform": verdict.platform,
    }
