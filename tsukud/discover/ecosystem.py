"""Stage 2: is the name a package of one of the ecosystems' registries?

Pure core: each registry's reader (``registries/<name>.py``, named by its record in
``registries/ecosystems.py``) reads its JSON into :class:`PackageFacts` (exact-name
matches only, case-insensitive) and this module turns those into a :class:`Probe`; the
quality filter (the record's thresholds: enough downloads *or* enough versions), the
fit check (:func:`misfit`: a same-name package that installs no executable or whose
description has nothing to do with a command-line tool is only a candidate among the
others, never the end of the chain), the ranking and the "clear winner" rule. Shell:
:func:`probe_all` asks every registry in parallel under one shared deadline (3 s by
default) through each record's ``probe``; a registry that errs or is late is simply
not a match, and the report says which ones (discovery names them when it finds
nothing). No registry is named here: what each one's documents say, and where they
are, is its reader's.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from tsukud.discover.model import Probe
from tsukud.install.ecosystem.versions import registry_unreachable
from tsukud.net.http import HttpUnreachable
from tsukud.registries._common import Get, PackageFacts
from tsukud.registries.ecosystems import BY_BUILDER, DISCOVERY_URLS, ECOSYSTEMS
from tsukud.source import repo_from_url

# Discovery's builder names, in probe order (the ranking's tie order): one per record
# of registries/ecosystems.py, whose other tables are derived here too.
BUILDERS = tuple(e.builder for e in sorted(ECOSYSTEMS, key=lambda e: e.priority))


# Discovery's builder name -> the ``--from`` prefix of the registry's recipe builder:
# the hints and the install flow name what ``--from`` accepts from this one table.
BUILDER_SOURCES: Mapping[str, str] = {e.builder: e.prefix for e in ECOSYSTEMS}

# builder: (min downloads, min versions); a match passes with either (0 = not used).
THRESHOLDS: dict[str, tuple[int, int]] = {e.builder: e.thresholds for e in ECOSYSTEMS}
PRIORITY = {e.builder: e.priority for e in ECOSYSTEMS}
INSTALL_COMMANDS = {
    **{e.builder: e.install_command for e in ECOSYSTEMS},
    "homebrew": "brew install {name}",
    "cask": "brew install --cask {name}",
}
DEFAULT_URLS = {k: u.default for k, u in DISCOVERY_URLS.items()}


def valid_package(builder: str, name: str) -> bool:
    """Whether ``name`` is a name ``builder``'s registry can have (so no URL, path or
    flag a model wrote reaches a registry client or a command line)."""
    eco = BY_BUILDER.get(builder)
    return eco is not None and eco.valid_name(name)


def install_command(builder: str, name: str) -> str | None:
    template = INSTALL_COMMANDS.get(builder)
    return template.format(name=name) if template else None


# ------------------------------------------------------------------------------ probes


def as_probe(builder: str, facts: PackageFacts | None) -> Probe | None:
    """A reader's facts as discovery's :class:`Probe`: the record's builder, and the
    first of the package's repository URLs that points into github.com as the slug."""
    if facts is None:
        return None
    said = dataclasses.asdict(facts)  # the same fields, but the URLs
    urls = said.pop("repository_urls")
    slug = next((s for u in urls if (s := _slug(u))), None)
    return Probe(builder=builder, repository=slug, **said)


def _slug(url: str | None) -> str | None:
    """``owner/repo`` of the github.com repository a registry's field points into."""
    repo = repo_from_url(url) if url else None
    return repo.slug if repo is not None else None


# ------------------------------------------------------------------------ quality, ranking


def quality(probe: Probe) -> str | None:
    """None when the match is good enough, else why not."""
    min_dl, min_vc = THRESHOLDS.get(probe.builder, (0, 0))
    if min_dl == 0 and min_vc == 0:
        return None
    if (min_dl and probe.downloads >= min_dl) or (min_vc and probe.version_count >= min_vc):
        return None
    return (
        f"downloads {probe.downloads} < {min_dl} and version count {probe.version_count} < {min_vc}"
        if min_dl
        else f"version count {probe.version_count} < {min_vc}"
    )


# Words a command-line tool's description uses; one of them, or the tool's own name, in a
# package's description is enough to call it related.
_TOOL_WORDS = re.compile(
    r"\b(cli|command|commands|command-line|commandline|terminal|tool|tools|toolkit|shell|"
    r"console|binary|executable|utility|utilities|program|app|"
    r"linter|formatter|compiler|interpreter|debugger|profiler|server|client|manager|"
    r"runner|launcher|installer|checker|generator|viewer|editor|watcher|scanner|"
    r"downloader|converter|daemon|tui|repl|prompt)s?\b",
    re.I,
)


def misfit(probe: Probe, tool: str) -> list[str]:
    """Why a same-name package does not look like the tool (empty: it fits).

    The description must say it is something one runs (a command, a CLI, a linter,
    a server...), unless the registry lists the executables it installs. Mentioning the
    tool's name proves nothing: a package of that name nearly always does (the Python
    ``stern``, "The stern module wants to show...", is not the Kubernetes log tailer)."""
    why: list[str] = []
    low = quality(probe)
    if low is not None:
        why.append(f"little used ({low})")
    if probe.executables == ():
        why.append("it installs no executable")
    desc = probe.description
    if not probe.executables and desc and not _TOOL_WORDS.search(desc):
        why.append(f"its description is about something else ({desc[:80]!r})")
    return why


# What a registry's download count counts (the registries without one: unknown use).
DOWNLOADS_COUNTED = {e.builder: e.downloads_counted for e in ECOSYSTEMS if e.downloads_counted}


def unvouched(probe: Probe) -> list[str]:
    """Why a package found only because its name is the typed name needs a person's
    explicit choice (empty: a person's yes, or ``--yes``, may accept it).

    A name is not an identity: anyone can publish ``fmtq`` on a registry. What speaks for a
    package is a source repository it names and real use (downloads at the registry's
    bar); without either, nothing but the name does. A registry that does not report use
    (its record's ``downloads_counted`` is None) leaves its use unknown, which is not
    evidence either."""
    why: list[str] = []
    if not probe.has_repository:
        why.append("it names no source repository")
    counted = DOWNLOADS_COUNTED.get(probe.builder)
    least = THRESHOLDS.get(probe.builder, (0, 0))[0]
    if counted is None:
        why.append(f"{probe.builder} does not report how much it is used")
    elif probe.downloads < least:
        why.append(f"negligible use ({probe.downloads:,} {counted}, under {least:,})")
    return why


def evidence(probe: Probe) -> list[tuple[str, str]]:
    """(label, value) lines of what the registry says about a package, for a person."""
    counted = DOWNLOADS_COUNTED.get(probe.builder)
    rows = [
        (
            "Downloads",
            f"{probe.downloads:,} {counted}" if counted else "not reported by the registry",
        ),
        (
            "Versions",
            f"{probe.version_count}" + (f" (latest {probe.latest})" if probe.latest else ""),
        ),
        ("First published", probe.first_published or "unknown"),
        (
            "Repository",
            (f"https://github.com/{probe.repository}" if probe.repository else "named (not GitHub)")
            if probe.has_repository
            else "NONE",
        ),
        ("Published by", ", ".join(probe.maintainers) if probe.maintainers else "unknown"),
    ]
    return rows


def evidence_line(probe: Probe) -> str:
    """:func:`evidence` in one line (a numbered choice)."""
    counted = DOWNLOADS_COUNTED.get(probe.builder)
    bits = [
        f"{_count(probe.downloads)} {counted}" if counted else "use not reported",
        f"{probe.version_count} versions",
        f"first published {probe.first_published}" if probe.first_published else "age unknown",
        f"repository {probe.repository}"
        if probe.repository
        else ("has repository" if probe.has_repository else "NO repository"),
    ]
    if probe.maintainers:
        bits.append("by " + ", ".join(probe.maintainers))
    return ", ".join(bits)


def rank(matches: list[Probe]) -> list[Probe]:
    return sorted(
        matches,
        key=lambda p: (-p.downloads, -p.version_count, PRIORITY.get(p.builder, 999), p.builder),
    )


@dataclass(frozen=True)
class Selection:
    kind: str  # none | single_match | 10x_popularity_gap | ambiguous
    chosen: Probe | None = None
    ranked: tuple[Probe, ...] = ()
    ratio: float | None = None


def select(accepted: list[Probe]) -> Selection:
    """The reference's rule: one match wins; of several, the first wins only with ten
    times the second's downloads (both known), at least 3 versions and a repository."""
    if not accepted:
        return Selection("none")
    ranked = tuple(rank(accepted))
    if len(ranked) == 1:
        return Selection("single_match", ranked[0], ranked)
    first, second = ranked[0], ranked[1]
    if (
        first.downloads > 0
        and second.downloads > 0
        and first.version_count >= 3
        and first.has_repository
        and first.downloads >= second.downloads * 10
    ):
        return Selection("10x_popularity_gap", first, ranked, first.downloads / second.downloads)
    return Selection("ambiguous", None, ranked)


def repository_support(probes: list[Probe], repo: str) -> Probe | None:
    """A package that passes its ecosystem's bar and names ``repo`` as its repository:
    the ecosystem half of the "stars >= 50 or ecosystem downloads" popularity gate."""
    for p in rank(probes):
        if p.repository and p.repository.lower() == repo.lower() and quality(p) is None:
            return p
    return None


def describe(probe: Probe) -> str:
    bits = []
    if probe.downloads:
        bits.append(f"{_count(probe.downloads)} downloads")
    if probe.version_count:
        bits.append(f"{probe.version_count} versions")
    bits.append("has repository" if probe.has_repository else "no repository")
    return ", ".join(bits)


def _count(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.1f}K"
    return str(n)


# ------------------------------------------------------------------------------ shell


@dataclass
class ProbeReport:
    matches: list[Probe] = field(default_factory=list)  # exact-name matches (any quality)
    accepted: list[Probe] = field(default_factory=list)  # matches that pass the filter
    rejected: dict[str, str] = field(default_factory=dict)  # builder -> why filtered out
    errors: dict[str, str] = field(default_factory=dict)  # builder -> error message
    # builder -> its registry out of reach (``network_unreachable``, placed at its setting)
    out_of_reach: dict[str, HttpUnreachable] = field(default_factory=dict)
    late: list[str] = field(default_factory=list)  # builders cut off by the deadline
    duration_ms: int = 0
    asked: tuple[str, ...] = ()  # the builders probed

    def none_reached(self) -> bool:
        """Every registry asked was out of reach: nothing answered, not even "no"."""
        return bool(self.asked) and set(self.out_of_reach) == set(self.asked)


async def probe_all(
    get: Get,
    name: str,
    *,
    urls: Mapping[str, str] | None = None,
    within_s: float = 3.0,
    builders: tuple[str, ...] = BUILDERS,
) -> ProbeReport:
    """Ask every registry at once; whatever has not answered after ``within_s`` is late."""
    import trio

    base = {**DEFAULT_URLS, **{k: v.rstrip("/") for k, v in (urls or {}).items() if v}}

    async def ask(builder: str) -> Probe | None:
        eco = BY_BUILDER[builder]
        second = base.get(f"{builder}_downloads", "")
        return as_probe(builder, await eco.probe(get, name, base[builder], second))

    report = ProbeReport(asked=tuple(builders))
    done: set[str] = set()
    found: dict[str, Probe] = {}
    started = time.monotonic()

    async def run(builder: str) -> None:
        try:
            probe = await ask(builder)
        except Exception as exc:  # any failure of one registry is a miss for it
            report.errors[builder] = str(getattr(exc, "message", None) or exc or type(exc).__name__)
            if isinstance(exc, HttpUnreachable):
                placed = registry_unreachable(exc, BY_BUILDER[builder], base[builder], "")
                report.out_of_reach[builder] = placed
            probe = None
        done.add(builder)
        if probe is not None:
            found[builder] = probe

    with trio.move_on_after(within_s):
        async with trio.open_nursery() as nursery:
            for b in builders:
                nursery.start_soon(run, b)
    report.late = [b for b in builders if b not in done]
    unreached = report.out_of_reach  # in the builders' order, whatever failed first
    report.out_of_reach = {b: unreached[b] for b in builders if b in unreached}
    for b in builders:  # a stable order, whatever finished first
        probe = found.get(b)
        if probe is None:
            continue
        report.matches.append(probe)
        why = quality(probe)
        if why is None:
            report.accepted.append(probe)
        else:
            report.rejected[b] = why
    report.duration_ms = round((time.monotonic() - started) * 1000)
    return report
