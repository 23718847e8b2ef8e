"""What a run reports of its validation: the summary a result carries, the payload of
each ``validation.*`` event, and the error when validation cannot happen at all.

Create, the instructions builder and the bottle and ecosystem validations all report
through these, so a client reads one shape whichever of them wrote the recipe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from tsukud.progress import Emit, Progress
from tsukud.validation.errors import ValidationUnavailable
from tsukud.validation.validator import Verdict

if TYPE_CHECKING:
    from tsukud.validation.validator import ValidationRun


class ValidationSummary(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    status: str
    platform: str
    stage: str | None = None
    image: str | None = None
    version: str | None = None
    message: str | None = None
    hint: str | None = None
    command: str | None = None
    exit_code: int | None = None
    output: str | None = None
    assets: tuple[dict[str, Any], ...] = ()
    platforms: tuple[dict[str, Any], ...] = ()  # how far each platform was proven
    attempts: int = 0


def validation_unavailable(reason: str, code: str | None) -> ValidationUnavailable:
    """The error for a run whose validation cannot happen (no runtime, no image):
    ``reason`` already cleaned of secrets."""
    if code == "sandbox_image_missing":
        fix = "Build the validation image with `tsukuctl sandbox prepare`"
    else:
        fix = (
            "Start Docker or Podman (or point DOCKER_HOST at its socket); if the "
            "validation image is missing too, `tsukuctl sandbox prepare` builds it"
        )
    return ValidationUnavailable(
        f"validation cannot run, so the recipe was not accepted: {reason}",
        hint=f"{fix}, then run it again; or pass --skip-validation to accept the recipe "
        "without proof (the recipe records that it was not validated).",
        reason=code or "no_runtime",
    )


def verdict_event(verdict: Verdict, attempt: int, clean: Callable[[str], str]) -> dict[str, Any]:
    """The payload of ``validation.passed|failed|skipped`` for one attempt."""
    payload: dict[str, Any] = {
        "attempt": attempt,
        "status": verdict.status,
        "stage": verdict.stage,
        "platform": verdict.platform,
        "image": verdict.image,
        "duration_ms": verdict.duration_ms,
    }
    if verdict.command is not None:
        payload.update(command=verdict.command, exit_code=verdict.exit_code)
    if verdict.category:
        payload["category"] = verdict.category
    if verdict.failed or verdict.status == "skipped":
        payload["message"] = clean(verdict.message[:500])
    if verdict.status == "skipped":
        payload["reason"] = payload["message"] or "validation could not finish"
    if verdict.assets:
        payload["assets"] = [
            {"name": a.name, "sha256": a.sha256, "size": a.size} for a in verdict.assets
        ]
    if verdict.platforms:
        payload["platforms"] = [
            {"platform": p.platform, "status": p.status, "how": p.how} for p in verdict.platforms
        ]
    return payload


def validation_summary(
    verdict: Verdict, attempts: int, clean: Callable[[str], str]
) -> ValidationSummary:
    """What a result says of its validation (output and messages cleaned)."""
    return ValidationSummary(
        status=verdict.status,
        platform=verdict.platform,
        stage=verdict.stage,
        image=verdict.image,
        version=verdict.version,
        message=clean(verdict.message) or None,
        hint=verdict.hint,
        command=verdict.command,
        exit_code=verdict.exit_code,
        output=clean(verdict.output[-500:]) or None,
        assets=tuple(msgspec.to_builtins(a) for a in verdict.assets),
        platforms=tuple(
            {**msgspec.to_builtins(p), "message": clean(p.message)} for p in verdict.platforms
        ),
        attempts=attempts,
    )


async def attempt_started(
    vrun: ValidationRun, attempt: int, *, what: str = "", emit: Emit, progress: Progress
) -> None:
    """Tell the person, and the ledger, that validation attempt ``attempt`` starts
    (``what``: the version being validated, when the message names it)."""
    where = vrun.platform.key
    await progress(
        {
            "stage": "validating",
            "message": f"validating {what + ' ' if what else ''}on {where} in a container "
            f"(attempt {attempt})",
            "attempt": attempt,
        }
    )
    await emit(
        "validation.started", {"attempt": attempt, "platform": where, "image": vrun.validator.image}
    )


async def attempt_recorded(
    verdict: Verdict, attempt: int, *, emit: Emit, clean: Callable[[str], str]
) -> None:
    """Record the attempt's verdict; a container runtime that went away during it ends
    the run in ``validation_unavailable`` (the recipe was not proven either way)."""
    await emit(f"validation.{verdict.status}", verdict_event(verdict, attempt, clean))
    if verdict.status == "skipped" and verdict.stage == "runtime":
        raise validation_unavailable(clean(verdict.message), None)
