"""The one rule a verify command obeys before anything runs it: one plain command.

The validation container runs the command as ``/bin/sh -c <command>``, and the static
checks judge a model's answer by the same rule, so it lives here, once: the validator
refuses a command the static checks would have refused, whoever wrote the recipe.
"""

from __future__ import annotations

from tsukud.validation.findings import VERIFY_COMMAND, Finding

MAX_VERIFY_LENGTH = 200

# Anything that makes a shell do more than run one command. ``$`` covers ``$(...)``,
# ``${...}`` and ``$VAR``: a verify command never needs any of them.
SHELL_OPERATORS = (";", "&", "|", "<", ">", "$", "`", "\n", "\r")


def verify_command_findings(command: str | None, *, where: str = "verify command") -> list[Finding]:
    if command is None or not command.strip():
        return [Finding(category=VERIFY_COMMAND, message=f"{where} is missing")]
    found: list[Finding] = []
    operators = [op for op in SHELL_OPERATORS if op in command]
    if operators:
        shown = " ".join(repr(op) if op.strip() == "" else op for op in operators)
        found.append(
            Finding(
                category=VERIFY_COMMAND,
                message=(
                    f"{where} {command!r} uses shell operators ({shown}); it must be one "
                    "plain command such as 'tool --version'"
                ),
            )
        )
    if len(command) > MAX_VERIFY_LENGTH:
        found.append(
            Finding(
                category=VERIFY_COMMAND,
                message=f"{where} is {len(command)} characters (limit {MAX_VERIFY_LENGTH})",
            )
        )
    return found
