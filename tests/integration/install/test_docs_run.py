"""The command lines of README.md and docs/*.md, run as written, in order, against a
daemon over the fake GitHub: each is a command tsukuctl accepts and carries out (the
shells and the parser are checked in tests/unit/test_docs_commands.py).

Left out: lines that need what the fakes here do not give (an LLM, discovery's search,
a systemd or launchd session) or that change the user's shell or daemon setup. ``config
set`` lines run (they edit the file and need no daemon), secrets given on stdin.
"""

from __future__ import annotations

import pytest

from tests.conftest import Tsuku
from tests.docs_blocks import command_lines, commands, programs, redirects
from tests.fakes.github import FakeGitHub
from tsukud.errors import ExitCode

NOT_RUN = (
    ("create",),
    ("discover",),
    ("eval",),  # runs create with a model over a corpus
    ("install", "stripe-cli"),
    ("install", "prettier"),  # from npm: needs a registry the fakes here do not serve
    ("llm", "test"),
    ("hook",),
    ("daemon",),
)
# What a line may answer besides 0 on this setup: the example head is not in this
# ledger; doctor finds no hook or PATH entry in the test's environment; a machine
# without a container runtime says so.
EXPECTED_FAILURE = {
    ("events", "verify", "--head"): ExitCode.LEDGER_CORRUPT,
    ("doctor",): ExitCode.GENERAL,
    ("sandbox", "status"): ExitCode.SANDBOX,
}


def _starts(words: list[str], prefix: tuple[str, ...]) -> bool:
    return tuple(w for w in words if not w.startswith("-"))[: len(prefix)] == prefix


# A secret the docs pipe in (``printf %s "$KEY" | tsukuctl config set secrets.…``) or
# type at the prompt: this run gives it on stdin.
SECRET = "doc-example-secret"


def runnable_lines() -> list[list[str]]:
    found = []
    for line in command_lines():
        if programs(line.text) not in (["tsukuctl"], ["printf", "tsukuctl"]) or redirects(
            line.text
        ):
            continue
        words = commands(line.text)[-1][1:]
        if not any(_starts(words, p) for p in NOT_RUN):
            found.append(words)
    return found


@pytest.mark.slow  # every documented command against a daemon
def test_doc_lines_run_against_the_daemon(inst: Tsuku, world: FakeGitHub) -> None:
    world.add_token(SECRET)  # the token the docs' ``config set`` lines store
    lines = runnable_lines()
    for wanted in (
        ["status"],
        ["install", "age@1.1.1"],
        ["upgrade", "age", "kind"],
        ["config", "set", "secrets.github_token"],
        ["config", "set", "secrets.anthropic_api_key"],
    ):
        assert wanted in lines
    for words in lines:
        cp = inst.ctl(*words, input=SECRET if _starts(words, ("config", "set")) else "")
        expected = next(
            (code for key, code in EXPECTED_FAILURE.items() if tuple(words[: len(key)]) == key), 0
        )
        assert cp.returncode in (0, expected), f"tsukuctl {' '.join(words)}:\n{cp.stderr}"
        assert "Traceback" not in cp.stderr and "usage:" not in cp.stderr, words
    listed = inst.ctl("config", "list", check=True).stdout
    for key in ("secrets.github_token", "secrets.anthropic_api_key"):
        row = next(r for r in listed.splitlines() if r.split()[:1] == [key])
        assert "file" in row and SECRET not in row, row
