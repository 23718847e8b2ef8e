"""System packages and required commands on the host: the steps that act on the
machine itself, checked (and, after a person's yes, run) before anything is downloaded.

``require_command`` looks the command up on the caller's PATH (and reads its version
when the recipe sets ``min_version``); a missing or too old command stops the install
with ``command_required``, whose hint names what to install.

``apt_install`` and its siblings first ask the family's own query (``dpkg-query``,
``apk info -e``, ``rpm -q``, ``pacman -Q``) which packages are missing: none missing,
nothing is asked. Otherwise the command that installs exactly the missing ones runs as
root, so it runs only after a person at a terminal has read it, word for word, and said
yes. ``--yes`` does not count (it accepts costs and discovery's sources; a command run
as root must be read), and neither does a client that cannot ask: both stop with
``system_packages_need_consent`` (exit 12), whose message is the exact command, so the
person can run it themselves and install again (nothing is asked once the packages are
there). There is deliberately no flag that widens this: the only consent is a yes to
the command shown.

The command runs with the caller's environment and no terminal, so ``sudo`` works
where it needs no password (root, cached credentials, NOPASSWD); otherwise it fails
and says so, and running it yourself is the way (docs/install.md).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping

from tsukud.errors import ConfirmationRequired, TsukuError
from tsukud.install.commands import run_captured, unvalidated_generated
from tsukud.recipe import Recipe, RequireCommandStep, SystemPackagesStep
from tsukud.recipe.system import (
    SYSTEM_MANAGERS,
    install_argv,
    installed_from_query,
    meets_minimum,
    query_argv,
    shell_words,
    version_from_output,
)

INSTALL_TIMEOUT_S = 900.0
QUERY_TIMEOUT_S = 30.0
OUTPUT_KEEP = 2000


class SystemPackagesNeedConsent(TsukuError):
    """System packages are missing and no person could say yes to the command (``--yes``
    alone, or no terminal)."""

    code = "system_packages_need_consent"


class SystemPackagesFailed(TsukuError):
    """The package manager's command failed, or the packages are still missing after it."""

    code = "system_packages_failed"


class SystemPackagesRefused(TsukuError):
    """System packages a recipe an LLM wrote (and nobody validated) asks for: never
    installed on the host, yes or no (as its ``run_command`` is never run)."""

    code = "system_packages_refused"


class CommandRequired(TsukuError):
    """A ``require_command`` whose command is not on PATH, or is older than asked."""

    code = "command_required"


def _run(argv: tuple[str, ...], env: Mapping[str, str], timeout_s: float) -> tuple[int, str]:
    """``argv`` (no shell): its exit code and combined output. A program that is not
    there answers 127, as a shell would; one past its time 124, as timeout(1) does."""
    try:
        return run_captured(argv, env, timeout_s)
    except FileNotFoundError:
        return 127, f"{argv[0]}: not found"
    except subprocess.TimeoutExpired:
        return 124, f"{shell_words(argv)} did not finish within {timeout_s:.0f}s"


def which(command: str, env: Mapping[str, str]) -> str | None:
    """``command`` on the caller's PATH (not the daemon's)."""
    return shutil.which(command, path=env.get("PATH", os.defpath))


def missing_packages(step: SystemPackagesStep, env: Mapping[str, str]) -> tuple[str, ...]:
    """The step's packages the family's query does not report installed (a query that
    cannot run counts every package as missing: the install command is then asked)."""
    out: list[str] = []
    for package in step.packages:
        code, output = _run(query_argv(step.action, package), env, QUERY_TIMEOUT_S)
        if not installed_from_query(step.action, code, output):
            out.append(package)
    return tuple(out)


def install_command(step: SystemPackagesStep, missing: tuple[str, ...]) -> tuple[str, ...]:
    """The exact command that will run: tsuku's words, ``sudo`` unless we are root."""
    return install_argv(step.action, missing, as_root=os.geteuid() == 0)


def consent_question(
    tool: str,
    index: int,
    step: SystemPackagesStep,
    missing: tuple[str, ...],
    argv: tuple[str, ...],
) -> ConfirmationRequired:
    """The question a person answers before ``argv`` (the very words that will run)
    runs as root on this machine."""
    manager = SYSTEM_MANAGERS[step.action].name
    command = shell_words(argv)
    return ConfirmationRequired(
        f"{tool} needs system packages that are not installed (steps[{index}], "
        f"{step.action}). tsuku will run, with {manager}:\n\n    {command}\n",
        hint="A system package command runs only after you have read it and said yes; "
        "--yes does not cover it.",
        question="Run this command?",
        kind="system_packages",
        option={"tool": tool, "step": index, "command": command, "packages": list(missing)},
    )


def refusal(
    tool: str, missing: tuple[str, ...], argv: tuple[str, ...], *, yes: bool
) -> SystemPackagesNeedConsent:
    """Why nothing ran, with the command to run yourself."""
    command = shell_words(argv)
    why = (
        "--yes does not accept a command run as root"
        if yes
        else "nobody could be asked (no terminal)"
    )
    return SystemPackagesNeedConsent(
        f"{tool} needs system packages that are not installed; tsuku would run:\n\n"
        f"    {command}\n\n{why}",
        hint=f"Run that command yourself, then `tsukuctl install {tool}` again (packages "
        "already installed are not asked about); or run the install from a terminal "
        "without --yes to be asked. Nothing was installed.",
        tool=tool,
        command=command,
        packages=list(missing),
    )


def refuse_unvalidated(recipe: Recipe, argv: tuple[str, ...]) -> None:
    """A generated recipe never validated does not get to ask for a root command."""
    if unvalidated_generated(recipe):
        name = recipe.metadata.name
        raise SystemPackagesRefused(
            f"{name}: the recipe was written by {recipe.metadata.generated_by} and not "
            f"validated, so its system packages are not installed on this machine: "
            f"{shell_words(argv)}",
            tool=name,
            command=shell_words(argv),
        )


def install_packages(
    tool: str, step: SystemPackagesStep, argv: tuple[str, ...], env: Mapping[str, str]
) -> str:
    """Run the approved command, then ask the query again: a zero exit that left a
    package missing is a failure too."""
    code, output = _run(argv, env, INSTALL_TIMEOUT_S)
    command = shell_words(argv)
    after = missing_packages(step, env) if code == 0 else ()
    if code == 0 and not after:
        return output[-OUTPUT_KEEP:]
    what = f"exited with {code}" if code else f"left {', '.join(after)} not installed"
    hint = step.fallback or (
        f"Run `{command}` yourself (sudo may need your password at a terminal), then "
        f"`tsukuctl install {tool}` again. Nothing was installed."
    )
    raise SystemPackagesFailed(
        f"{command} {what}\nOutput: {output[-OUTPUT_KEEP:]}",
        hint=hint,
        tool=tool,
        command=command,
        exit_code=code,
    )


def check_command(tool: str, step: RequireCommandStep, env: Mapping[str, str]) -> str:
    """Where the command is (and its version when the recipe asks for one), or a typed
    error naming what to install."""
    path = which(step.command, env)
    hint = (
        f"Install {step.command} (your system's package manager, or `tsukuctl install "
        f"{step.command}`), then `tsukuctl install {tool}` again. Nothing was installed."
    )
    if path is None:
        raise CommandRequired(
            f"{tool} needs the command {step.command}, which is not on your PATH",
            hint=hint,
            tool=tool,
            command=step.command,
        )
    if not step.min_version:
        return path
    assert step.version_flag is not None and step.version_regex is not None  # parser's rule
    code, output = _run((path, step.version_flag), env, QUERY_TIMEOUT_S)
    found = version_from_output(output, step.version_regex) if code == 0 else None
    if found is None:
        raise CommandRequired(
            f"{tool} needs {step.command} {step.min_version} or newer, and "
            f"`{step.command} {step.version_flag}` did not say its version "
            f"(exit {code}): {output[-200:]}",
            hint=hint,
            tool=tool,
            command=step.command,
        )
    if not meets_minimum(found, step.min_version):
        raise CommandRequired(
            f"{tool} needs {step.command} {step.min_version} or newer; {path} is {found}",
            hint=hint,
            tool=tool,
            command=step.command,
            found=found,
        )
    return path
