"""Candidates as choices (pure): when discovery recommends no source, or several, a
person picks one from a numbered list, or none.

A choice is built from a verified GitHub candidate (:func:`from_verified`) or a
same-name ecosystem package (:func:`from_probe`), and says why it is or is not
recommended. Only candidates a person could sensibly pick are offered
(:func:`offerable`): a repository that does not exist, is archived or could not be
checked for another reason than a rate limit is not.
"""

from __future__ import annotations

from typing import Any

import msgspec

from tsukud.discover.ecosystem import describe, install_command
from tsukud.discover.model import Choice, Probe, Verified
from tsukud.discover.verify import ago
from tsukud.terminal import terminal_safe


def offerable(v: Verified) -> bool:
    """Kept candidates, and those rejected only for their stars or the model's confidence."""
    if v.status != "rejected":
        return True
    return not (v.meta is None or v.meta.archived or v.meta.disabled)


def from_verified(v: Verified, *, recommended: bool, why: str) -> Choice:
    m = v.meta
    return Choice(
        kind="github",
        source=v.source,
        recommended=recommended,
        why=why,
        found_by="llm",
        stars=m.stars if m is not None else None,
        age_days=v.age_days,
        owner=m.owner if m is not None else None,
        description=m.description if m is not None else None,
        confidence=v.candidate.confidence,
    )


def from_probe(p: Probe, *, why: str) -> Choice:
    return Choice(
        kind=p.builder,
        source=p.source,
        recommended=False,
        why=why,
        found_by="ecosystem",
        downloads=p.downloads,
        version_count=p.version_count,
        description=p.description,
        install_command=install_command(p.builder, p.source),
    )


def _shown(text: str) -> str:
    return terminal_safe(text, one_line=True)


def facts(c: Choice) -> str:
    """Stars, age and owner (GitHub) or usage (an ecosystem), in one line."""
    if c.kind == "github":
        bits = [
            "stars unknown" if c.stars is None else f"{c.stars:,} stars",
            f"created {ago(c.age_days)}" if c.age_days is not None else "age unknown",
            f"owner {_shown(c.owner)}" if c.owner else "owner unknown",
        ]
        if c.confidence is not None:
            bits.append(f"confidence {c.confidence}")
        return ", ".join(bits)
    probe = Probe(
        builder=c.kind,
        source=c.source,
        downloads=c.downloads or 0,
        version_count=c.version_count or 0,
    )
    return describe(probe).replace(", no repository", "")


def listing(choices: list[Choice]) -> list[str]:
    lines: list[str] = []
    for i, c in enumerate(choices, 1):
        mark = "recommended" if c.recommended else "not recommended"
        lines.append(f"  {i}. {c.spec}  ({facts(c)})")
        if c.description:
            lines.append(f"     {_shown(c.description)[:120]}")
        lines.append(f"     {mark}: {_shown(c.why)}")
    return lines


def render(tool: str, reason: str, choices: list[Choice]) -> str:
    sources = "1 possible source" if len(choices) == 1 else f"{len(choices)} possible sources"
    head = f"Discovery found {sources} for {tool}; {reason}:"
    return "\n".join([head, *listing(choices)])


def how_to_name(tool: str, choices: list[Choice]) -> str:
    """The hint of a choice nobody could make: the ``--from`` (or ecosystem command) for
    each one."""
    ways = [
        f"tsukuctl install {tool} --from {c.spec}"
        if c.kind == "github"
        else (c.install_command or c.spec)
        for c in choices
    ]
    return "Run it on a terminal to choose, or name the one you mean: " + "; ".join(ways)


def as_data(choices: list[Choice]) -> list[dict[str, Any]]:
    return [{**msgspec.to_builtins(c), "number": i} for i, c in enumerate(choices, 1)]
