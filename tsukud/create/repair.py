"""From a failed check to the next attempt: deterministic fixes first, then the message
that continues the conversation.

Two fixes cost no tokens and are tried before the model is asked again:

* :func:`fix_layout`: the archive was downloaded and unpacked on the host and the
  binary is not where the recipe says. When the unpacked files show it unambiguously
  (a file of that name, or the archive's only executable), the recipe is rewritten to
  point at it, removing a shared top directory with ``strip_dirs`` rather than writing
  a versioned directory name into the path.
* verify self-repair (:mod:`tsukud.create.verify_repair`), driven by the pipeline
  because each proposal is one container run.

What goes back to the model (:func:`validation_feedback`, :func:`static_feedback`) is
sanitised (:func:`tsukud.validation.sanitize.sanitize`: secrets, home directories and
addresses removed, the tail kept), fenced as data, and carries what the reference left
out: the verify command's own exit code and output, the stage that failed, the asset
that was validated, and the archive's files when a binary was not found.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence

import msgspec

from tsukud.create.assets import fenced
from tsukud.recipe import Binary, GitHubArchiveStep, Recipe, Verify
from tsukud.validation.findings import Finding, format_findings
from tsukud.validation.sanitize import SUGGESTIONS, UNKNOWN, categorize, sanitize
from tsukud.validation.validator import Verdict

FEEDBACK_OUTPUT = 2000

STAGE_TEXT = {
    "render": "the recipe names an asset the release does not have",
    "download": "downloading the asset failed",
    "extract": "unpacking the asset failed",
    "layout": "the binaries are not where the recipe says inside the asset",
    "verify": "the verify command ran in a Linux container and did not succeed",
    "platform": "this platform's build is wrong (its binary's header names another OS or "
    "CPU, or it failed under emulation)",
}


# ----------------------------------------------------------------------- messages


def static_feedback(findings: Sequence[Finding], *, attempt: int, max_repairs: int) -> str:
    return (
        f"Repair {attempt} of {max_repairs}: your last answer did not pass the static "
        "checks against the real release assets (nothing was downloaded or run):\n"
        f"{format_findings(findings)}\n\n"
        "Call extract_pattern again with a corrected answer."
    )


def validation_feedback(
    verdict: Verdict,
    *,
    attempt: int,
    max_repairs: int,
    secrets: Iterable[str] = (),
    notes: Sequence[str] = (),
    answer_tool: str = "extract_pattern",
) -> str:
    """The user turn after a failed validation (``answer_tool``: the tool that answers)."""
    keys = tuple(secrets)
    where = f"{verdict.platform}" + (f" at release {verdict.tag}" if verdict.tag else "")
    lines = [
        f"Repair {attempt} of {max_repairs}: the recipe from your last {answer_tool} answer "
        f"failed validation on {where}: {STAGE_TEXT.get(verdict.stage, verdict.stage)}.",
    ]
    lines += [f"Note: {n}" for n in notes]
    if verdict.assets:
        lines.append("Asset: " + ", ".join(a.name for a in verdict.assets))
    # A verify failure's message repeats the output shown below: its first line is enough.
    message = verdict.message.split("\n", 1)[0] if verdict.command else verdict.message
    if message:
        lines.append("What failed:\n" + fenced(sanitize(message, limit=600, secrets=keys), "text"))
    if verdict.command is not None:
        lines.append(f"Verify command: {verdict.command}")
        lines.append(f"Its exit code: {verdict.exit_code}")
        shown = sanitize(verdict.output, limit=FEEDBACK_OUTPUT, secrets=keys)
        lines.append(
            "Its output (sanitised, last part kept):\n" + fenced(shown or "(no output)", "text")
        )
    if verdict.listing:
        lines.append(
            "Files in the asset after strip_dirs:\n" + fenced("\n".join(verdict.listing), "text")
        )
        lines.append("Executables among them: " + (", ".join(verdict.executables) or "none"))
    category = (
        verdict.category
        or categorize(f"{verdict.message}\n{verdict.output}", verdict.exit_code).category
    )
    lines.append(f"Error category: {category}")
    suggestions = SUGGESTIONS.get(category, SUGGESTIONS[UNKNOWN])
    lines.append("Suggested fixes:\n" + "\n".join(f"- {s}" for s in suggestions))
    lines.append(
        "Call extract_pattern again with a corrected answer; inspect_archive shows an "
        "archive's files if you need them."
        if answer_tool == "extract_pattern"
        else f"Call {answer_tool} again with a corrected answer."
    )
    return "\n\n".join(lines)


def feedback_for(
    *,
    max_repairs: int,
    secrets: Iterable[str],
    answer_tool: str = "extract_pattern",
    notes: Callable[[], Sequence[str]] = tuple,
) -> Callable[[Verdict, int], str]:
    """A run's :func:`validation_feedback` for the generation loop: (verdict, repair
    number) → the user turn; ``notes`` read at each repair (what self-repair changed)."""

    def feedback(verdict: Verdict, attempt: int) -> str:
        return validation_feedback(
            verdict,
            attempt=attempt,
            max_repairs=max_repairs,
            secrets=secrets,
            notes=notes(),
            answer_tool=answer_tool,
        )

    return feedback


# ------------------------------------------------------------------- deterministic


def with_verify(recipe: Recipe, verify: Verify) -> Recipe:
    return msgspec.structs.replace(recipe, verify=verify)


def _strip_common(paths: Sequence[str], listing: Sequence[str]) -> tuple[int, list[str]]:
    """(extra strip_dirs, paths) with a top directory shared by every file removed."""
    tops = {p.split("/", 1)[0] for p in listing if "/" in p}
    flat = any("/" not in p for p in listing)
    if len(tops) == 1 and not flat and all("/" in p for p in paths):
        return 1, [p.split("/", 1)[1] for p in paths]
    return 0, list(paths)


def fix_layout(recipe: Recipe, verdict: Verdict, *, version: str) -> tuple[Recipe, str] | None:
    """A recipe whose binaries point where the unpacked asset has them, and what was
    changed; ``None`` when the listing does not settle it."""
    if verdict.stage != "layout" or not verdict.listing:
        return None
    steps = [s for s in recipe.steps if isinstance(s, GitHubArchiveStep)]
    if not steps or any((s.install_mode or "binaries") != "binaries" for s in steps):
        return None
    wanted = [b.src for b in steps[0].binaries]
    executables = list(verdict.executables)
    found: list[str] = []
    renamed: dict[str, str] = {}
    for src in wanted:
        name = posixpath.basename(src)
        same = [p for p in verdict.listing if posixpath.basename(p) == name]
        runnable = [p for p in same if p in executables] or same
        if len(runnable) == 1:
            found.append(runnable[0])
        elif len(wanted) == 1 and len(executables) == 1:
            found.append(executables[0])
            renamed[name] = posixpath.basename(executables[0])
        else:
            return None
    extra, paths = _strip_common(found, verdict.listing)
    if version and any(re.search(r"(?<![0-9])" + re.escape(version), p) for p in paths):
        return None  # a versioned directory would pin the recipe to one release
    binaries = tuple(Binary(p) for p in paths)
    new_steps = tuple(
        msgspec.structs.replace(s, binaries=binaries, strip_dirs=(s.strip_dirs or 0) + extra)
        if isinstance(s, GitHubArchiveStep)
        else s
        for s in recipe.steps
    )
    fixed = msgspec.structs.replace(recipe, steps=new_steps)
    verify = recipe.verify
    if renamed and verify is not None and verify.command:
        words = verify.command.split(" ", 1)
        if words[0] in renamed:
            command = " ".join([renamed[words[0]], *words[1:]])
            fixed = with_verify(fixed, msgspec.structs.replace(verify, command=command))
    what = ", ".join(paths)
    strip = f" with strip_dirs={(steps[0].strip_dirs or 0) + extra}" if extra else ""
    return fixed, f"binaries corrected to {what}{strip} from the unpacked asset"
