"""The read-only command lines of README.md and docs/*.md, run as written against a
daemon over the fake GitHub: each is a command tsukuctl accepts and answers (the shells
and the parser are checked in tests/unit/test_docs_commands.py)."""

from __future__ import annotations

from tests.conftest import Tsuku
from tests.docs_blocks import command_lines, commands, programs, redirects
from tsukud.errors import ExitCode

# Commands that change nothing (by their first words).
READ_ONLY = (
    ("status",),
    ("events",),
    ("list",),
    ("info",),
    ("help",),
    ("outdated",),
    ("doctor",),
    ("llm", "status"),
    ("sandbox", "status"),
    ("completion",),
)
# What a read-only line may answer besides 0 on this setup: the example head is not in
# a fresh ledger; doctor finds no hook or PATH entry in the test's environment; a
# machine without a container runtime says so.
EXPECTED_FAILURE = {
    ("events", "verify", "--head"): ExitCode.LEDGER_CORRUPT,
    ("doctor",): ExitCode.GENERAL,
    ("sandbox", "status"): ExitCode.SANDBOX,
}


def read_only_lines() -> list[list[str]]:
    found = []
    for line in command_lines():
        if programs(line.text) != ["tsukuctl"] or redirects(line.text):
            continue
        words = commands(line.text)[0][1:]
        flagless = [w for w in words if not w.startswith("-")]
        if any(tuple(flagless[: len(r)]) == r for r in READ_ONLY):
            found.append(words)
    return found


def test_read_only_doc_lines_run_against_the_daemon(inst: Tsuku) -> None:
    lines = read_only_lines()
    assert ["status"] in lines and ["list"] in lines and ["outdated"] in lines
    inst.ctl("install", "stern", check=True)
    for words in lines:
        cp = inst.ctl(*words)
        expected = next(
            (code for key, code in EXPECTED_FAILURE.items() if tuple(words[: len(key)]) == key), 0
        )
        assert cp.returncode in (0, expected), f"tsukuctl {' '.join(words)}:\n{cp.stderr}"
        assert "Traceback" not in cp.stderr and "usage:" not in cp.stderr, words
