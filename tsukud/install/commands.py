"""``run_command`` on the host: only after the user has seen the exact command and said
yes, and never for a recipe an LLM wrote that was not validated.

A recipe's shell command is the one step that runs arbitrary code as the user, so the
rules are stricter than for a cost:

* the question carries the command exactly as it will run (``{version}``,
  ``{work_dir}``, ``{install_dir}`` substituted), one question per command, at the
  moment it would run;
* ``--yes`` does not answer it (it accepts costs and discovery's sources, which a
  person can judge from a number or a name; a command must be read): without a
  terminal to ask, the install stops with ``confirmation_required`` (exit 12), nothing
  installed;
* a recipe whose ``generated_by`` is set but that carries no validation
  (``validated_at`` missing, or ``llm_validation = "skipped"``) is refused outright
  (``run_command_refused``, exit 14), yes or no.

Inside the validation container the same commands run without a question
(``validation/validator.py``): that is what the container is for.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from tsukud.errors import ConfirmationRequired, TsukuError
from tsukud.recipe import Recipe

COMMAND_TIMEOUT_S = 600.0
OUTPUT_KEEP = 2000


class CommandRefused(TsukuError):
    """A ``run_command`` that may not run on the host at all."""

    code = "run_command_refused"


class CommandFailed(TsukuError):
    """A ``run_command`` exited non-zero (or timed out)."""

    code = "run_command_failed"


def unvalidated_generated(recipe: Recipe) -> bool:
    """Written by a generator (an LLM) and never proven in the validation container."""
    meta = recipe.metadata
    if meta.generated_by is None:
        return False
    return meta.validated_at is None or meta.llm_validation == "skipped"


def check_may_run(recipe: Recipe, command: str) -> None:
    if unvalidated_generated(recipe):
        name = recipe.metadata.name
        raise CommandRefused(
            f"{name}: the recipe was written by {recipe.metadata.generated_by} and not "
            f"validated, so its run_command is not run on this machine: {command}",
            hint="Validate the recipe in the container (`tsukuctl create` with a container "
            "runtime) or review and edit it yourself; nothing was installed.",
            recipe=name,
        )


def question(tool: str, index: int, command: str, work_dir: str) -> ConfirmationRequired:
    """The question a person answers before ``command`` runs on this machine."""
    return ConfirmationRequired(
        f"The recipe for {tool} runs a shell command on this machine (steps[{index}], "
        f"in {work_dir}):\n\n    {command}\n",
        hint="A recipe's shell command runs only after you have read it and said yes; "
        "--yes does not cover it. Run the install from a terminal to be asked, or "
        "`tsukuctl plan` to read the commands first.",
        question="Run this command?",
        kind="run_command",
        option={"tool": tool, "step": index, "command": command},
    )


def run_captured(
    argv: Sequence[str], env: Mapping[str, str], timeout_s: float, cwd: Path | None = None
) -> tuple[int, str]:
    """``argv`` on the host, stdin closed, in a session of its own: its exit code and
    combined output. Raises ``subprocess.TimeoutExpired`` past ``timeout_s`` and
    ``FileNotFoundError`` when the program is not there."""
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout_s,
        check=False,
        start_new_session=True,
    )
    return done.returncode, done.stdout.decode("utf-8", "replace").strip()


def run_on_host(
    command: str, cwd: Path, env: Mapping[str, str], *, timeout_s: float = COMMAND_TIMEOUT_S
) -> str:
    """``sh -c command`` in ``cwd``; returns the combined output, raises
    :class:`CommandFailed` on a non-zero exit or a time-out."""
    try:
        code, output = run_captured(["/bin/sh", "-c", command], env, timeout_s, cwd)
    except subprocess.TimeoutExpired:
        raise CommandFailed(
            f"run_command did not finish within {timeout_s:.0f}s: {command}", command=command
        ) from None
    if code != 0:
        raise CommandFailed(
            f"run_command exited with {code}: {command}\nOutput: {output[-OUTPUT_KEEP:]}",
            command=command,
            exit_code=code,
        )
    return output[-OUTPUT_KEEP:]


def command_env(base: Mapping[str, str], work_dir: Path, install_dir: Path) -> dict[str, str]:
    """The environment a command gets: the installer's (PATH, HOME, locale) and where it
    is, nothing of the daemon's own."""
    return {**base, "PWD": os.fspath(work_dir), "TSUKU_INSTALL_DIR": os.fspath(install_dir)}
