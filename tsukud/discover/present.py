"""What the user reads before saying yes (pure): the found source and everything that
speaks for or against it."""

from __future__ import annotations

from typing import Any

import msgspec

from tsukud.discover.ecosystem import evidence, install_command
from tsukud.discover.model import Discovery, Probe, RepoMeta, Verified
from tsukud.discover.verify import ago
from tsukud.terminal import terminal_safe

LLM_WARNING = "this source was found by an LLM's web search: make sure it is the tool you mean"
NAME_WARNING = (
    "this package was found because its name is the name you typed; anyone can publish "
    "a package under any free name: make sure it is the tool you mean"
)


def _stars(n: int) -> str:
    return f"{n:,}"


def metadata(v: Verified) -> dict[str, Any]:
    """The JSON form (confirm frames, results, events)."""
    if v.builder != "github":
        return _package_metadata(v)
    m = v.meta
    out: dict[str, Any] = {
        "repo": v.source,
        "url": f"https://github.com/{v.source}",
        "status": v.status,
        "confidence": v.candidate.confidence,
    }
    if m is not None:
        out.update(
            {
                "stars": m.stars,
                "created_at": m.created_at,
                "age_days": v.age_days,
                "pushed_at": m.pushed_at,
                "last_push_days": v.last_push_days,
                "owner": m.owner,
                "owner_type": m.owner_type,
                "description": m.description,
                "fork": m.fork,
                "parent": m.parent,
                "parent_stars": m.parent_stars,
            }
        )
    moved = v.owner_change
    if moved is not None:
        out["previous_owner"] = moved[0]
    if v.release is not None:
        out["release"] = msgspec.to_builtins(v.release)
    if v.popularity:
        out["popularity"] = v.popularity
    if v.reason:
        out["reason"] = v.reason
    return {k: val for k, val in out.items() if val is not None}


def _package_metadata(v: Verified) -> dict[str, Any]:
    p = v.probe
    out: dict[str, Any] = {
        "builder": v.builder,
        "package": v.source,
        "status": v.status,
        "confidence": v.candidate.confidence,
        "install_command": install_command(v.builder, v.source),
        "popularity": v.popularity,
        "reason": v.reason,
    }
    if p is not None:
        out.update(
            {
                "description": p.description,
                "downloads": p.downloads,
                "version_count": p.version_count,
                "latest": p.latest,
                "repository": p.repository,
                "executables": list(p.executables) if p.executables is not None else None,
            }
        )
    return {k: val for k, val in out.items() if val is not None}


def _shown(text: str) -> str:
    """A value from the model, a search result or GitHub, safe inside one line of a
    question: no escape sequence can repaint the prompt or hide a warning."""
    return terminal_safe(text, one_line=True)


def describe_llm(found: Discovery, v: Verified, sources: list[tuple[str, str]]) -> str:
    m = v.meta
    via = found.provider or "an LLM"
    lines = [f"Found {found.tool} via web search ({via}):"]
    if v.builder != "github":
        lines += _package_lines(v)
    else:
        lines.append(f"  Source:       github:{v.source}  (https://github.com/{v.source})")
        lines += _repo_lines(v, m)
    lines.append(f"  Confidence:   {v.candidate.confidence}/100 (the model's own estimate)")
    if v.popularity and not v.popularity.endswith(" stars"):
        lines.append(f"  Popularity:   {v.popularity}")
    rc = v.release
    if rc is not None and rc.installable:
        lines.append(f"  Release:      {_shown(rc.tag or '')}: {_shown(', '.join(rc.assets))}")
    if v.candidate.evidence:
        lines.append("  Evidence (from the model):")
        lines += [f"    - {_shown(e)}" for e in v.candidate.evidence]
    if sources:
        lines.append("  Seen in search results:")
        lines += [
            f"    - {_shown(url)}" + (f"  ({_shown(title)})" if title else "")
            for url, title in sources
        ]
    warnings = [*v.warnings, *found.warnings, LLM_WARNING]
    lines.append("  Warnings:")
    lines += [f"    ! {_shown(w)}" for w in dict.fromkeys(warnings)]
    return "\n".join(lines)


def _package_lines(v: Verified) -> list[str]:
    """A package a model named, as its registry describes it."""
    p = v.probe
    command = install_command(v.builder, v.source)
    lines = [f"  Source:       {_shown(v.spec)}" + (f"  ({command})" if command else "")]
    if p is None:
        return [*lines, f"  Downloads, versions: NOT VERIFIED ({v.builder} could not be asked)"]
    if p.description:
        lines.append(f"  Description:  {_shown(p.description)}")
    lines.append(
        f"  Downloads:    {p.downloads:,}" if p.downloads else "  Downloads:    not reported"
    )
    lines.append(
        f"  Versions:     {p.version_count}" + (f" (latest {_shown(p.latest)})" if p.latest else "")
    )
    if p.executables:
        lines.append(f"  Executables:  {_shown(', '.join(p.executables))}")
    if p.repository:
        lines.append(f"  Repository:   https://github.com/{_shown(p.repository)}")
    return lines


def _repo_lines(v: Verified, m: RepoMeta | None) -> list[str]:
    lines: list[str] = []
    if m is not None and m.description:
        lines.append(f"  Description:  {_shown(m.description)}")
    if m is not None:
        lines.append(f"  Stars:        {_stars(m.stars)}")
        created = (m.created_at or "")[:10]
        lines.append(f"  Created:      {ago(v.age_days)}" + (f" ({created})" if created else ""))
        lines.append(f"  Last push:    {ago(v.last_push_days)}")
        owner = _shown(m.owner or "?")
        kind = f" ({_shown(m.owner_type)})" if m.owner_type else ""
        lines.append(f"  Owner:        {owner}{kind}")
        moved = v.owner_change
        if moved is not None:
            lines.append(
                f"  OWNER CHANGED: the search named {_shown(moved[0])}, "
                f"GitHub now says {_shown(moved[1])}"
            )
    else:
        lines.append("  Stars, age, owner: NOT VERIFIED (GitHub could not be asked)")
    return lines


def describe_registry(found: Discovery) -> str:
    line = f"Found {found.tool} in the tsuku discovery registry: {found.builder}:{found.source}"
    desc = found.metadata.get("description")
    return line + (f"\n  Description:  {_shown(str(desc))}" if desc else "")


def describe_ecosystem(found: Discovery, probe: Probe) -> str:
    """A same-name package as a candidate: its evidence as its registry gives it (a
    name proves nothing: anyone can publish one)."""
    lines = [f"Found a package named {found.tool} on {found.builder}: {_shown(found.source)}"]
    if probe.description:
        lines.append(f"  {'Description:':<16} {_shown(probe.description)}")
    lines += [f"  {label + ':':<16} {_shown(value)}" for label, value in evidence(probe)]
    if found.install_command:
        lines.append(f"  Install it with: {found.install_command}")
    lines.append("  Warnings:")
    lines += [f"    ! {_shown(w)}" for w in (*found.warnings, NAME_WARNING)]
    return "\n".join(lines)
