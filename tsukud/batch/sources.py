"""``tsukuctl batch add`` input: which lines are sources to queue, which are not and why.

Two shapes, one per line: ``TOOL SOURCE`` (``stern github:stern/stern``; ``#`` comments
and blank lines ignored) or a JSON object ``{"tool": .., "source": .., "priority": N}``.
A tool name is checked as a recipe name is (``install.registry.check_name``) and a source
by the very parsers ``create`` uses, so a line accepted here names something ``create``
can be asked for; each source is written in one canonical spelling
(``github:owner/repo``, ``<prefix>:<package>``, ``homebrew:<formula>``, ...), so the same
source spelt twice is one job. A bad line never spoils the good ones: it is reported with
its line number and the rest is queued.
"""

from __future__ import annotations

import hashlib
import json

import msgspec

from tsukud.errors import TsukuError
from tsukud.events.catalogue import BatchJobSpec

MAX_LINE = 1000  # characters: a longer line is reported, not parsed
MAX_PRIORITY = 1_000_000


class BadLine(msgspec.Struct, frozen=True, kw_only=True):
    line: int
    text: str  # the line as given, capped
    error: str


class Parsed(msgspec.Struct, kw_only=True):
    jobs: list[BatchJobSpec]
    bad: list[BadLine]
    duplicates: list[int]  # line numbers of sources already given earlier in the input


def job_id(tool: str, source: str) -> str:
    """Stable across adds, daemons and machines: the same (tool, source) is one job."""
    return hashlib.sha256(f"{tool}\0{source}".encode()).hexdigest()[:16]


def canonical_source(source: str) -> str:
    """``source`` in one spelling, or the ``BadSource`` ``create`` would raise for it."""
    from tsukud.source import GitHubRepo, parse_source

    parsed = parse_source(source)
    if isinstance(parsed, GitHubRepo):
        # GitHub names are case-insensitive: Stern/Stern is stern/stern, one job.
        parsed = GitHubRepo(parsed.owner.lower(), parsed.repo.lower())
    return str(parsed)


def _fields(text: str) -> tuple[str, str, int]:
    """(tool, source, priority) of one non-blank line, or ValueError saying why not."""
    if text.startswith("{"):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not a JSON object: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ValueError("not a JSON object")
        unknown = sorted(set(obj) - {"tool", "source", "priority"})
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}")
        tool, source, priority = obj.get("tool"), obj.get("source"), obj.get("priority", 0)
        if not isinstance(tool, str) or not isinstance(source, str):
            raise ValueError('"tool" and "source" must be strings')
        if isinstance(priority, bool) or not isinstance(priority, int):
            raise ValueError('"priority" must be an integer')
        if abs(priority) > MAX_PRIORITY:
            raise ValueError(f'"priority" must be between -{MAX_PRIORITY} and {MAX_PRIORITY}')
        return tool, source, priority
    parts = text.split()
    if len(parts) != 2:
        raise ValueError("expected TOOL SOURCE (two words) or a JSON object")
    return parts[0], parts[1], 0


def _clean(text: str) -> str:
    """Input echoed back (a bad line, an error quoting it): one line, no escape sequences,
    no secret pasted into the list by mistake."""
    from tsukud.secrets import redact
    from tsukud.terminal import terminal_safe

    return terminal_safe(redact(text), one_line=True)


def parse(text: str, first_line: int = 1) -> Parsed:
    """Every line of ``text``: the jobs to queue, in order, each (tool, source) once.
    ``first_line``: the number of the text's first line (a long list comes in parts)."""
    from tsukud.install.registry import check_name

    out = Parsed(jobs=[], bad=[], duplicates=[])
    seen: set[str] = set()
    for number, raw in enumerate(text.splitlines(), first_line):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        shown = _clean(line[:200])
        try:
            if len(line) > MAX_LINE:
                raise ValueError(f"longer than {MAX_LINE} characters")
            tool, source, priority = _fields(line)
            tool = check_name(tool)
            source = canonical_source(source)
        except ValueError as exc:
            out.bad.append(BadLine(line=number, text=shown, error=_clean(str(exc))))
            continue
        except TsukuError as exc:
            out.bad.append(BadLine(line=number, text=shown, error=_clean(exc.message)))
            continue
        jid = job_id(tool, source)
        if jid in seen:
            out.duplicates.append(number)
            continue
        seen.add(jid)
        out.jobs.append(BatchJobSpec(id=jid, tool=tool, source=source, priority=priority))
    return out
