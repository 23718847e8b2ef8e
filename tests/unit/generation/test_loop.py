"""The one generation loop (``tsukud/generation/loop.py``) on scripted rounds and
verdicts: what a repair costs, when the run ends, and which verdict ends the loop.

Create's and the instructions builder's own tests run it with a real model fake and the
real container; these pin the rules both depend on without either."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
import trio

from tsukud.generation.errors import GenerationFailed
from tsukud.generation.loop import Answered, Loop, Strategy
from tsukud.recipe import Recipe, parse_recipe
from tsukud.validation.errors import ValidationFailed
from tsukud.validation.findings import Finding
from tsukud.validation.validator import Verdict

RECIPE = parse_recipe(
    """
[metadata]
name = "tool"

[version]
source = "github_releases"
github_repo = "o/tool"

[[steps]]
action = "github_file"
repo = "o/tool"
asset_pattern = "tool-{os}-{arch}"
binary = "tool"

[verify]
command = "tool --version"
"""
)
REFUSED = Answered(findings=(Finding(category="replay", message="no such asset"),))
PASSED = Verdict(status="passed", stage="verify", platform="linux/amd64")
FAILED = Verdict(
    status="failed", stage="verify", platform="linux/amd64", category="exit_code", output="x"
)
SKIPPED = Verdict(status="skipped", stage="render", platform="linux/amd64")


@dataclass
class Script:
    """Rounds and verdicts handed out in order; what the loop told and recorded."""

    rounds: list[Answered]
    verdicts: list[Verdict]
    told: list[str] = field(default_factory=list)
    turns: list[int] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    frames: list[dict[str, Any]] = field(default_factory=list)
    repairs: int = 0
    stage: str = "llm"

    async def ask(self, turns: int) -> Answered:
        self.turns.append(turns)
        return self.rounds.pop(0)

    async def validate(self, recipe: Recipe) -> tuple[Recipe, Verdict]:
        self.stage = "validation"
        return recipe, self.verdicts.pop(0)

    async def emit(self, type_: str, payload: dict[str, Any]) -> None:
        self.events.append((type_, payload))

    async def progress(self, frame: dict[str, Any]) -> None:
        self.frames.append(frame)

    def loop(self, *, static: bool, accept_skipped: bool, max_repairs: int = 2) -> Loop:
        def static_feedback(findings: Sequence[Finding], n: int) -> str:
            return f"static {n}: {findings[0].category}"

        strategy = Strategy(
            ask=self.ask,
            tell=self.told.append,
            validate=self.validate,
            feedback=lambda verdict, n: f"validation {n}: {verdict.category}",
            done=(lambda v: not v.failed) if accept_skipped else (lambda v: v.passed),
            first_turns=5,
            repair_turns=3,
            answer_tool="write_recipe",
            static_feedback=static_feedback if static else None,
        )
        return Loop(
            strategy,
            tally=self,
            max_repairs=max_repairs,
            emit=self.emit,
            progress=self.progress,
            clean=lambda text: text.replace("x", "[clean]"),
        )


def run(loop: Loop) -> tuple[Recipe, Verdict]:
    async def main() -> tuple[Recipe, Verdict]:
        return await loop.run()

    return trio.run(main)


def test_a_failed_validation_is_repaired_in_the_same_conversation() -> None:
    s = Script([Answered(recipe=RECIPE), Answered(recipe=RECIPE)], [FAILED, PASSED])
    _recipe, verdict = run(s.loop(static=True, accept_skipped=True))
    assert verdict is PASSED
    assert s.turns == [5, 3]  # a first round, then a repair round
    assert s.told == ["validation 1: exit_code"]
    assert s.repairs == 1
    assert s.events == [
        (
            "repair.attempted",
            {"attempt": 1, "kind": "llm", "stage": "verify", "category": "exit_code"},
        )
    ]
    assert s.frames == [
        {"stage": "repairing", "message": "repairing 1/2 (verify: exit_code)", "attempt": 1}
    ]
    assert s.stage == "validation"


def test_validation_failing_past_the_repairs_ends_in_validation_failed() -> None:
    s = Script([Answered(recipe=RECIPE)] * 3, [FAILED] * 3)
    with pytest.raises(ValidationFailed) as info:
        run(s.loop(static=True, accept_skipped=True))
    assert s.repairs == 2 and len(s.told) == 2
    assert info.value.data["output"] == "[clean]"  # the run's redaction applies
    assert info.value.data["stage"] == "verify"


def test_no_repairs_allowed_means_the_first_failure_ends_the_run() -> None:
    s = Script([Answered(recipe=RECIPE)], [FAILED])
    with pytest.raises(ValidationFailed):
        run(s.loop(static=True, accept_skipped=True, max_repairs=0))
    assert s.told == [] and s.repairs == 0


def test_a_refused_round_is_repaired_when_the_writer_repairs_static_findings() -> None:
    s = Script([REFUSED, Answered(recipe=RECIPE)], [PASSED])
    run(s.loop(static=True, accept_skipped=True))
    assert s.told == ["static 1: replay"]
    assert s.events[0][1]["stage"] == "static_check"
    assert s.events[0][1]["category"] == "replay"


def test_a_refused_round_ends_the_run_when_the_writer_does_not() -> None:
    s = Script([REFUSED], [])
    with pytest.raises(GenerationFailed) as info:
        run(s.loop(static=False, accept_skipped=True))
    assert "no write_recipe answer passed the checks" in info.value.message
    assert s.repairs == 0 and s.told == []


def test_refused_rounds_past_the_repairs_end_in_generation_failed() -> None:
    s = Script([REFUSED] * 3, [])
    with pytest.raises(GenerationFailed) as info:
        run(s.loop(static=True, accept_skipped=True))
    assert info.value.data["repairs"] == 2
    assert s.stage == "llm"


def test_which_verdict_ends_the_loop_is_the_writer_s() -> None:
    accepting = Script([Answered(recipe=RECIPE)], [SKIPPED])
    assert run(accepting.loop(static=True, accept_skipped=True))[1] is SKIPPED
    strict = Script([Answered(recipe=RECIPE), Answered(recipe=RECIPE)], [SKIPPED, PASSED])
    assert run(strict.loop(static=False, accept_skipped=False))[1] is PASSED
    assert strict.repairs == 1


def test_a_run_that_ends_after_its_repairs_names_every_attempt() -> None:
    """Issue 29, point 13: not only the last attempt's failure, each one's, in order
    (the message lists the earlier ones; ``attempts`` carries all of them, redacted)."""
    missing = Verdict(
        status="failed",
        stage="download",
        platform="linux/amd64",
        category="download_404",
        message="asset tool-x-linux-amd64 not found (404)",
    )
    wrong = Verdict(
        status="failed",
        stage="verify",
        platform="linux/amd64",
        category="exit_code",
        message="tool --version exited 2",
    )
    s = Script([REFUSED, Answered(recipe=RECIPE), Answered(recipe=RECIPE)], [missing, wrong])
    with pytest.raises(ValidationFailed) as info:
        run(s.loop(static=True, accept_skipped=True))
    attempts = info.value.data["attempts"]
    assert [(a["attempt"], a["stage"], a["category"]) for a in attempts] == [
        (1, "static_checks", "replay"),
        (2, "download", "download_404"),
        (3, "verify", "exit_code"),
    ]
    assert attempts[1]["message"] == "asset tool-[clean]-linu[clean]-amd64 not found (404)"
    message = info.value.message
    assert message.startswith("the recipe failed validation after 2 repairs (verify): tool")
    assert message.endswith(
        "\nearlier attempts:\n"
        "  attempt 1: static_checks (replay): no such asset\n"
        "  attempt 2: download (download_404): asset tool-[clean]-linu[clean]-amd64 not "
        "found (404)"
    )
