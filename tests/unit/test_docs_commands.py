"""Every command line in README.md and docs/*.md runs verbatim in bash, zsh and fish.

Each line parses in all three shells; each starts only programs that exist (no
``list | verify <tool>`` read as pipes and redirections); the lines that only run
``tsukuctl`` (and printf, grep, head) are run in each shell with ``tsukuctl`` replaced
by a function that records its words, which must come out the same in every shell (an
unquoted ``llm.*`` or ``[--json]`` is a glob zsh and fish refuse) and be accepted by
tsukuctl's parser. ``tests/integration/install/test_docs_run.py`` runs them against a
daemon. Inline ``tsukuctl …`` spans in the prose are pasted too: they must read as one
command (placeholders as words, ``TOOL``, not ``<tool>``, ``a|b`` or ``[--json]``).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.docs_blocks import (
    DocLine,
    command_lines,
    commands,
    globs,
    inline_commands,
    programs,
    redirects,
)
from tests.integration.hooks.conftest import need_shell
from tsukuctl import cli

KNOWN_PROGRAMS = {
    "tsukuctl",
    "tsukud",
    "bash",
    "printf",
    "grep",
    "head",
    "echo",
    "exec",
    "mkdir",
    "cp",
    "rm",
    "sed",
    "systemctl",
    "journalctl",
    "launchctl",
}
SAFE_TO_RUN = {"tsukuctl", "printf", "grep", "head", "echo"}
SHELLS = ("bash", "zsh", "fish")
RECORDER = {
    "bash": 'tsukuctl() { printf "%s\\n" @@argv "$@" >> "$RECORD"; }\n',
    "zsh": 'tsukuctl() { printf "%s\\n" @@argv "$@" >> "$RECORD"; }\n',
    "fish": 'function tsukuctl; printf "%s\\n" @@argv $argv >> $RECORD; end\n',
}
PARSE_ONLY = {"bash": ["-n"], "zsh": ["-n"], "fish": ["--no-execute"]}

LINES = command_lines()


def test_the_docs_have_command_lines() -> None:
    files = {line.file for line in LINES}
    assert {"README.md", "docs/install.md", "docs/events.md"} <= files
    assert len(LINES) > 30


@pytest.mark.parametrize("line", LINES, ids=str)
def test_every_program_exists(line: DocLine) -> None:
    unknown = [p for p in programs(line.text) if p not in KNOWN_PROGRAMS]
    assert not unknown, f"{line}: {unknown} read as programs (a pipe or a redirection?)"


@pytest.mark.parametrize("shell", SHELLS)
def test_every_line_parses(shell: str, tmp_path: Path) -> None:
    exe = need_shell(shell)
    bad = []
    for i, line in enumerate(LINES):
        script = tmp_path / f"line{i}"
        script.write_text(line.text + "\n")
        cp = subprocess.run([exe, *PARSE_ONLY[shell], str(script)], capture_output=True, text=True)
        if cp.returncode != 0:
            bad.append(f"{line}\n  {cp.stderr.strip()}")
    assert not bad, f"{shell} cannot parse:\n" + "\n".join(bad)


def recorded(shell: str, text: str, tmp_path: Path) -> tuple[list[list[str]], str]:
    record = tmp_path / f"{shell}.argv"
    record.unlink(missing_ok=True)
    script = tmp_path / f"{shell}.sh"
    script.write_text(RECORDER[shell] + text + "\n")
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "RECORD": str(record),
        "ANTHROPIC_API_KEY": "sk-ant-example",
        "TSUKU_HOME": str(tmp_path / "th"),
    }
    argv = [need_shell(shell), "--no-config" if shell == "fish" else "-f", str(script)]
    if shell == "bash":
        argv[1] = "--norc"
    cp = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=30)
    calls: list[list[str]] = []
    for word in record.read_text().splitlines() if record.exists() else []:
        if word == "@@argv":
            calls.append([])
        else:
            calls[-1].append(word)
    return calls, cp.stderr


RUNNABLE = [line for line in LINES if set(programs(line.text)) <= SAFE_TO_RUN]


@pytest.mark.parametrize("line", RUNNABLE, ids=str)
def test_tsukuctl_gets_the_same_words_in_every_shell(line: DocLine, tmp_path: Path) -> None:
    expected = [c for c in commands(line.text) if c[0] == "tsukuctl"]
    for shell in SHELLS:
        calls, stderr = recorded(shell, line.text, tmp_path)
        assert stderr == "", f"{shell}: {line}\n{stderr}"
        assert calls == [words[1:] for words in expected], f"{shell}: {line}"
    for words in expected:
        args, unknown = cli.build_parser().parse_known_args(words[1:])
        assert not unknown and args.command, f"{line}: tsukuctl refuses {unknown}"


def test_the_check_catches_what_the_issue_found(tmp_path: Path) -> None:
    """The lines the issue quoted fail here (so the checks above are not vacuous)."""
    assert programs("tsukuctl llm status | llm test") == ["tsukuctl", "llm"]
    assert programs("tsukuctl list | verify <tool> | info <tool>")[:2] == ["tsukuctl", "verify"]
    calls, stderr = recorded("zsh", "tsukuctl events --type llm.*", tmp_path)
    assert calls == [] and "no matches found" in stderr
    calls, stderr = recorded("fish", "tsukuctl events --type llm.*", tmp_path)
    assert calls == [] and "No matches" in stderr
    calls, stderr = recorded("fish", "tsukuctl events --type 'llm.*'", tmp_path)
    assert calls == [["events", "--type", "llm.*"]] and stderr == ""


INLINE = inline_commands()


def test_the_docs_have_inline_commands() -> None:
    assert len(INLINE) > 40
    assert "tsukuctl shell-init fish | source" in {line.text for line in INLINE}


@pytest.mark.parametrize("line", INLINE, ids=str)
def test_an_inline_command_pastes_as_one(line: DocLine) -> None:
    """An inline ``tsukuctl …`` span is pasted too: placeholders are words (``TOOL``),
    never ``<tool>`` (a redirection), ``a|b`` (a pipe) or ``[--json]`` (a glob)."""
    unknown = [p for p in programs(line.text) if p not in KNOWN_PROGRAMS | {"source"}]
    assert not unknown, f"{line}: {unknown} read as programs (a pipe?)"
    assert not redirects(line.text), f"{line}: read as a redirection"
    assert not globs(line.text), f"{line}: an unquoted glob"


def test_the_inline_check_catches_what_the_audit_found() -> None:
    assert programs("tsukuctl shell-init bash|zsh|fish")[1:] == ["zsh", "fish"]
    assert redirects("tsukuctl plan <tool|recipe.toml> [--version V]")
    assert redirects("tsukuctl install <tool>")
    assert globs("tsukuctl hook status [--json]") and not globs("tsukuctl events --type 'llm.*'")
