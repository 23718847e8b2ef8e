"""``install_shell_init``: a fragment of shell start-up a tool asks for (tsuku's
action), written only after the person read it and said yes.

tsuku writes ``$TSUKU_HOME/share/shell.d/<target>@<version>.<shell>`` (mode 0600, the
directory 0700) from a file of the installed tool (``source_file``) or from what a
command of the tool prints for each shell (``source_command``, e.g. ``niwa shell-init
{shell}``), and every new shell then runs it. That changes the person's shell start-up,
a change to this machine beyond the tool's own directory, so here it is a host change
like a system package: after the tool is installed and verified, and before it is
recorded, the exact text of each fragment is put to the person in a question
(``kind: "shell_init"``); only their yes writes it. ``--yes`` never counts, and nobody
to ask stops the install (``shell_init_needs_consent``, exit 12) before any
``source_command`` runs; nothing is installed either way. The hook
(``tsukuctl hook install``) sources the fragments of the person's shell.

The pure part (the plan of what to write, the question, the refusal) is separate from
the shell that reads the file or runs the command.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

import msgspec

from tsukud.errors import ConfirmationRequired, TsukuError
from tsukud.install.errors import InstallError
from tsukud.recipe import InstallShellInitStep

# tsuku's source_command is split on whitespace and run without a shell; what it
# prints is the fragment. Bounded like a verify command.
COMMAND_TIMEOUT_S = 30.0
FRAGMENT_MAX = 256 * 1024


class ShellInitNeedsConsent(TsukuError):
    code = "shell_init_needs_consent"


class Fragment(msgspec.Struct, frozen=True, kw_only=True):
    """One file of shell start-up: where it goes (relative to ``$TSUKU_HOME``), for
    which shell, and its exact text."""

    path: str
    shell: str
    content: str


def shell_d(home: Path) -> Path:
    return home / "share" / "shell.d"


def fragment_path(target: str, version: str, shell: str) -> str:
    """tsuku's name: one file per version, so a version never writes over another's."""
    return f"share/shell.d/{target}@{version}.{shell}"


def describe(step: InstallShellInitStep) -> str:
    """Where the text comes from, as the person is told before anything runs."""
    if step.source_file is not None:
        return f"the tool's file {step.source_file}"
    return f"the output of `{step.source_command}` (run once per shell)"


def consent_question(tool: str, index: int, fragments: list[Fragment]) -> ConfirmationRequired:
    """The question a person answers before these files join every new shell."""
    shown = "\n".join(
        f"  {f.path} ({f.shell}):\n" + "".join(f"    | {line}\n" for line in f.content.splitlines())
        for f in fragments
    )
    return ConfirmationRequired(
        f"{tool} adds to your shell's start-up (steps[{index}], install_shell_init); every "
        f"new {' and '.join(sorted({f.shell for f in fragments}))} shell will run:\n\n{shown}",
        hint="Shell start-up changes only after you have read them and said yes; --yes "
        "does not cover them.",
        question="Add this to your shell start-up?",
        kind="shell_init",
        option={
            "tool": tool,
            "step": index,
            "files": [{"path": f.path, "shell": f.shell, "content": f.content} for f in fragments],
        },
    )


def refusal(tool: str, index: int, step: InstallShellInitStep, *, yes: bool) -> TsukuError:
    """Why nothing was written (nor run), and what would have been."""
    why = (
        "--yes does not accept a change to your shell start-up"
        if yes
        else ("nobody could be asked (no terminal)")
    )
    shells = ", ".join(step.shells)
    return ShellInitNeedsConsent(
        f"{tool} adds to your shell's start-up ({shells}: {describe(step)}, written to "
        f"share/shell.d/{step.target}@<version>.<shell>); {why}",
        hint=f"Run `tsukuctl install {tool}` from a terminal without --yes to read it "
        "and be asked. Nothing was installed.",
        tool=tool,
        step=index,
        target=step.target,
        shells=list(step.shells),
    )


# ---------------------------------------------------------------------------- shell


def _inside(path: Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


def gather(
    step: InstallShellInitStep,
    tool_dir: Path,
    version: str,
    env: Mapping[str, str],
) -> list[Fragment]:
    """Each shell's fragment: the tool's ``source_file`` (inside its directory), or
    what ``source_command`` (a program inside the tool's directory, split into words,
    no shell) prints for that shell. A command that fails or prints nothing gives no
    fragment for that shell, as in tsuku."""
    out: list[Fragment] = []
    for shell in step.shells:
        path = fragment_path(step.target, version, shell)
        if step.source_file is not None:
            source = tool_dir / step.source_file
            if not source.is_file() or not _inside(source, tool_dir):
                raise InstallError(
                    f"install_shell_init: {step.source_file} is not a file in {tool_dir}"
                )
            text = source.read_bytes()[:FRAGMENT_MAX].decode("utf-8", "replace")
        else:
            assert step.source_command is not None
            command = step.source_command.replace("{install_dir}", str(tool_dir))
            argv = command.replace("{shell}", shell).split()
            program = Path(argv[0]) if os.path.isabs(argv[0]) else tool_dir / argv[0]
            if not program.is_file() or not _inside(program, tool_dir):
                raise InstallError(
                    f"install_shell_init: {argv[0]} is not a program in {tool_dir}",
                    hint="source_command runs one of the tool's own programs.",
                )
            try:
                ran = subprocess.run(
                    [str(program), *argv[1:]],
                    capture_output=True,
                    env=dict(env),
                    cwd=tool_dir,
                    timeout=COMMAND_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired):
                continue
            if ran.returncode != 0 or not ran.stdout:
                continue
            text = ran.stdout[:FRAGMENT_MAX].decode("utf-8", "replace")
        out.append(Fragment(path=path, shell=shell, content=text))
    return out


def write(home: Path, fragments: list[Fragment]) -> list[Path]:
    """The approved fragments, written (0600 in a 0700 directory, as tsuku has
    them); returns what was written, for the install to undo on failure."""
    directory = shell_d(home)
    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    written: list[Path] = []
    for f in fragments:
        path = home / f.path
        tmp = path.with_name(f".{path.name}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(f.content)
        os.replace(tmp, path)
        written.append(path)
    return written


def discard(home: Path, paths: list[str]) -> None:
    """Fragments a removed or replaced version wrote (``install.completed``'s
    ``shell_init``), gone with it."""
    for rel in paths:
        if not rel.startswith("share/shell.d/") or "/" in rel.removeprefix("share/shell.d/"):
            continue  # only ever our own files
        with contextlib.suppress(FileNotFoundError):
            (home / rel).unlink()
