"""Candidates as choices (pure): when discovery recommends no source, or several, a
person picks one from a numbered list, or none.

A choice is built from a verified candidate of web search (:func:`from_verified`: a
GitHub repository or a package a model named) or an ecosystem package of the same name
(:func:`from_probe`), and says why it is or is not recommended. Only candidates a
person could sensibly pick are offered (:func:`offerable`): a repository that does not
exist, is archived or could not be checked for another reason than a rate limit is not,
nor a package its registry does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from tsukud.discover.ecosystem import describe, evidence_line, install_command
from tsukud.discover.model import Choice, Probe, Verified
from tsukud.discover.verify import ago
from tsukud.terminal import terminal_safe


def offerable(v: Verified) -> bool:
    """Kept candidates, and those rejected only for their stars, the model's confidence
    or (a package) not fitting the tool: a package that does not exist is not."""
    if v.status != "rejected":
        return True
    if v.builder != "github":
        return v.probe is not None
    return not (v.meta is None or v.meta.archived or v.meta.disabled)


def from_verified(v: Verified, *, recommended: bool, why: str) -> Choice:
    if v.builder != "github":  # a package a model named, as its registry describes it
        probe = v.probe or Probe(builder=v.builder, source=v.source)  # unknown: unverified
        return msgspec.structs.replace(
            from_probe(probe, why=why, recommended=recommended),
            found_by="llm",
            confidence=v.candidate.confidence,
            # unknown to its registry: no evidence to show, not "no repository"
            has_repository=None if v.probe is None else v.probe.has_repository,
        )
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


def from_probe(p: Probe, *, why: str, recommended: bool = False) -> Choice:
    return Choice(
        kind=p.builder,
        source=p.source,
        recommended=recommended,
        why=why,
        found_by="ecosystem",
        downloads=p.downloads,
        version_count=p.version_count,
        description=p.description,
        install_command=install_command(p.builder, p.source),
        repository=p.repository,
        has_repository=p.has_repository,
        first_published=p.first_published,
        maintainers=p.maintainers,
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
        has_repository=bool(c.has_repository),
        repository=c.repository,
        first_published=c.first_published,
        maintainers=c.maintainers,
    )
    if c.has_repository is not None:  # what its registry said: all of the evidence
        return _shown(evidence_line(probe))
    usage = describe(probe).replace("no repository", "").strip(", ")
    return usage or "usage unknown"


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


def naming(tool: str, kind: str, source: str, from_prefixes: Mapping[str, str]) -> str:
    """How a person names one source: ``tsukuctl install <tool> --from <prefix>:<source>``
    for GitHub and every ecosystem with a recipe builder (``from_prefixes``: discovery's
    builder -> the ``--from`` prefix), else that ecosystem's own install command."""
    prefix = "github" if kind == "github" else from_prefixes.get(kind)
    if prefix:
        return f"tsukuctl install {tool} --from {prefix}:{source}"
    return install_command(kind, source) or f"{kind}:{source}"


def how_to_name(tool: str, choices: list[Choice], from_prefixes: Mapping[str, str]) -> str:
    """The hint of a choice nobody could make: the ``--from`` (or ecosystem command) for
    each one."""
    ways = [naming(tool, c.kind, c.source, from_prefixes) for c in choices]
    return "Run it on a terminal to choose, or name the one you mean: " + "; ".join(ways)


def as_data(choices: list[Choice]) -> list[dict[str, Any]]:
    return [{**msgspec.to_builtins(c), "number": i} for i, c in enumerate(choices, 1)]
