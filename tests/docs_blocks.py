"""The command lines of README.md and docs/*.md, as a reader would copy them.

A fenced block marked ``sh``, ``bash``, ``shell`` or ``console`` is a promise that its
lines run as written in bash, zsh and fish: every line of an ``sh``/``bash``/``shell``
block (a trailing backslash joins the next), and the ``$ `` lines of a ``console``
block. Anything else (a transcript in another shell's syntax, a file listing) is fenced
``text`` or left unmarked and is not checked.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import REPO

RUNNABLE = ("sh", "bash", "shell", "console")
_FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)
_OPERATORS = {"|", "||", "&&", ";", "&"}


@dataclass(frozen=True)
class DocLine:
    file: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.text}"


def doc_files() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def command_lines() -> list[DocLine]:
    found = []
    for path in doc_files():
        text = path.read_text()
        for block in _FENCE.finditer(text):
            if block.group(1) not in RUNNABLE:
                continue
            first = text[: block.start()].count("\n") + 2
            found += _lines(
                path.relative_to(REPO).as_posix(), first, block.group(1), block.group(2)
            )
    return found


_INLINE = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def inline_commands() -> list[DocLine]:
    """The inline spans outside fenced blocks that start ``tsukuctl `` (a reader pastes
    them too), a span broken over lines joined with one space."""
    found = []
    for path in doc_files():
        text = path.read_text()
        prose = _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
        for span in _INLINE.finditer(prose):
            words = " ".join(span.group(1).split())
            if words.startswith("tsukuctl "):
                line = prose[: span.start()].count("\n") + 1
                found.append(DocLine(path.relative_to(REPO).as_posix(), line, words))
    return found


def globs(text: str) -> bool:
    """Whether an unquoted word holds a glob character (zsh and fish refuse a glob that
    matches nothing: ``[--json]``, ``llm.*``)."""
    unquoted = re.sub(r"'[^']*'|\"[^\"]*\"", "", text)
    return any(c in unquoted for c in "[*?")


def _lines(file: str, first: int, lang: str, body: str) -> list[DocLine]:
    out: list[DocLine] = []
    pending: tuple[int, str] | None = None
    for i, raw in enumerate(body.splitlines()):
        if pending is not None:
            start, text = pending
            text += "\n" + raw
        elif lang == "console":
            if not raw.startswith("$ "):
                continue
            start, text = first + i, raw[2:]
        elif raw.strip() and not raw.lstrip().startswith("#"):
            start, text = first + i, raw
        else:
            continue
        if text.endswith("\\"):
            pending = (start, text)
            continue
        pending = None
        out.append(DocLine(file, start, text))
    return out


def commands(text: str) -> list[list[str]]:
    """The words of each command of the line (``a x | b > f && c`` → [a, x], [b], [c]):
    split at operators, without redirections, comments or leading assignments."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    found: list[list[str]] = [[]]
    skip_next = False
    for token in lexer:
        if skip_next:
            skip_next = False
        elif token in _OPERATORS:
            found.append([])
        elif token.strip("<>&") == "" or token in ("2>", "2>>"):
            skip_next = True  # a redirection and its target
        elif found[-1] or "=" not in token:
            found[-1].append(token)
    return [c for c in found if c]


def programs(text: str) -> list[str]:
    """The program each command of the line starts (``a | b && c`` → a, b, c)."""
    return [c[0] for c in commands(text)]


def redirects(text: str) -> bool:
    return any(t.strip("<>&") == "" for t in shlex.shlex(text, posix=True, punctuation_chars="<>"))
