"""Stage 2: is the name a package of crates.io, npm, PyPI, RubyGems or the Go proxy?

Pure core: one parser per registry's JSON (exact-name matches only, case-insensitive),
the quality filter (reference thresholds: enough downloads *or* enough versions), the
fit check (:func:`misfit`: a same-name package that installs no executable or whose
description has nothing to do with a command-line tool is only a candidate among the
others, never the end of the chain), the ranking and the "clear winner" rule. Shell:
:func:`probe_all` asks every registry in parallel under one shared deadline (3 s by
default); a registry that errs or is late is simply not a match, and the report says
which ones (discovery names them when it finds nothing).

* crates.io: ``/api/v1/crates/<n>``; downloads = ``crate.recent_downloads`` (90 days),
  versions = ``len(versions)``, repository = ``crate.repository``.
* npm: ``/<n>`` and ``/downloads/point/last-week/<n>`` (api.npmjs.org); weekly
  downloads, ``len(versions)``, ``repository.url``.
* PyPI: ``/pypi/<n>/json``; ``len(releases)``, a repository among ``info.project_urls``.
* RubyGems: ``/api/v1/gems/<n>.json`` and ``/api/v1/versions/<n>.json``; total
  ``downloads``, the versions' count, ``source_code_uri``.
* Go proxy: ``/<module>/@latest`` and ``/<module>/@v/list``; the listed versions,
  ``Origin.URL``. (A tool name is a module path only when it is one dotted element.)
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from tsukud.discover.model import Probe
from tsukud.registries import goproxy
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


# ------------------------------------------------------------------------------ parsers


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _same(a: Any, name: str) -> bool:
    return isinstance(a, str) and a.lower() == name.lower()


def _bins(value: Any) -> tuple[str, ...] | None:
    """npm's ``bin`` (a path, or names to paths) / crates.io's ``bin_names``."""
    if isinstance(value, str):
        return (value,)
    if isinstance(value, dict):
        return tuple(str(k) for k in value)
    if isinstance(value, list):
        return tuple(str(v) for v in value if isinstance(v, str))
    return None


def _date(value: Any) -> str | None:
    """The ``YYYY-MM-DD`` of an ISO timestamp a registry gave, else None."""
    text = _str(value)
    return text[:10] if text and re.match(r"\d{4}-\d\d-\d\d", text) else None


def _earliest(values: Any) -> str | None:
    dates = [d for v in values if (d := _date(v))]
    return min(dates) if dates else None


def _people(*values: Any) -> tuple[str, ...]:
    """Names from a registry's people fields: a string (``"A, B"``), ``{"name"}`` or
    ``{"login"}`` objects, or lists of those; in order, once each."""
    names: list[str] = []
    for value in values:
        items = value if isinstance(value, list) else [value]
        for item in items:
            if isinstance(item, dict):
                item = item.get("name") or item.get("login")
            text = _str(item)
            if text:
                names += [n.strip() for n in text.split(",") if n.strip()]
    return tuple(dict.fromkeys(n[:80] for n in names))[:5]


def _slug(url: str | None) -> str | None:
    """``owner/repo`` of the github.com repository a registry's field points into."""
    repo = repo_from_url(url) if url else None
    return repo.slug if repo is not None else None


def parse_crates(name: str, body: Any) -> Probe | None:
    crate = _dict(_dict(body).get("crate"))
    if not _same(crate.get("name") or crate.get("id"), name):
        return None
    repo_url = _str(crate.get("repository"))
    versions = _dict(body).get("versions")
    count = len(versions) if isinstance(versions, list) else len(crate.get("versions") or [])
    newest = _dict(versions[0]) if isinstance(versions, list) and versions else {}
    return Probe(
        builder="crates.io",
        source=str(crate.get("name") or name),
        downloads=_int(crate.get("recent_downloads")),
        version_count=count,
        has_repository=repo_url is not None,
        repository=_slug(repo_url),
        description=_str(crate.get("description")),
        latest=_str(crate.get("max_stable_version")) or _str(crate.get("max_version")),
        executables=_bins(newest.get("bin_names")) if "bin_names" in newest else None,
        first_published=_date(crate.get("created_at")),
        maintainers=_people(
            [_dict(v).get("published_by") for v in versions] if isinstance(versions, list) else []
        ),
    )


def parse_npm(name: str, packument: Any, downloads: Any) -> Probe | None:
    doc = _dict(packument)
    if not _same(doc.get("name"), name):
        return None
    repo = doc.get("repository")
    repo_url = _str(repo.get("url")) if isinstance(repo, dict) else _str(repo)
    versions = doc.get("versions")
    latest = _str(_dict(doc.get("dist-tags")).get("latest"))
    manifest = _dict(_dict(versions).get(latest or ""))
    return Probe(
        builder="npm",
        source=str(doc["name"]),
        downloads=_int(_dict(downloads).get("downloads")),
        version_count=len(versions) if isinstance(versions, dict) else 0,
        has_repository=repo_url is not None,
        repository=_slug(repo_url),
        description=_str(doc.get("description")),
        latest=latest,
        # A published version's manifest without ``bin`` installs no command.
        executables=(_bins(manifest.get("bin")) or ()) if manifest.get("version") else None,
        first_published=_date(_dict(doc.get("time")).get("created"))
        or _earliest(v for k, v in _dict(doc.get("time")).items() if k != "modified"),
        maintainers=_people(doc.get("author"), doc.get("maintainers")),
    )


def parse_pypi(name: str, body: Any) -> Probe | None:
    info = _dict(_dict(body).get("info"))
    if not _same(info.get("name"), name):
        return None
    urls = [u for u in _dict(info.get("project_urls")).values() if isinstance(u, str) and u]
    home = _str(info.get("home_page"))
    repo = next((r for u in [*urls, home or ""] if (r := _slug(u))), None)
    releases = _dict(body).get("releases")
    return Probe(
        builder="pypi",
        source=str(info["name"]),
        version_count=len(releases) if isinstance(releases, dict) else 0,
        has_repository=bool(urls),
        repository=repo,
        description=_str(info.get("summary")),
        latest=_str(info.get("version")),
        first_published=_earliest(
            _dict(f).get("upload_time_iso_8601")
            for files in (releases.values() if isinstance(releases, dict) else ())
            if isinstance(files, list)
            for f in files
        ),
        maintainers=_people(info.get("author"), info.get("maintainer")),
    )


def parse_rubygems(name: str, gem: Any, versions: Any) -> Probe | None:
    doc = _dict(gem)
    if not _same(doc.get("name"), name):
        return None
    source_uri = _str(doc.get("source_code_uri"))
    candidates = [source_uri or "", _str(doc.get("homepage_uri")) or ""]
    repo = next((r for u in candidates if (r := _slug(u))), None)
    return Probe(
        builder="rubygems",
        source=str(doc["name"]),
        downloads=_int(doc.get("downloads")),
        version_count=len(versions) if isinstance(versions, list) else 0,
        has_repository=source_uri is not None,
        repository=repo,
        description=_str(doc.get("info")),
        latest=_str(doc.get("version")),
        first_published=_earliest(
            _dict(v).get("created_at") for v in (versions if isinstance(versions, list) else ())
        ),
        maintainers=_people(doc.get("authors")),
    )


def parse_go(module: str, latest: Any, version_list: str) -> Probe | None:
    doc = _dict(latest)
    version = _str(doc.get("Version"))
    if version is None:
        return None
    origin = _dict(doc.get("Origin"))
    origin_url = _str(origin.get("URL"))
    lines = [x for x in version_list.splitlines() if x.strip()]
    return Probe(
        builder="go",
        source=module,
        version_count=len(lines),
        has_repository=origin_url is not None,
        repository=_slug(origin_url),
        latest=version,
    )


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
    tool's name proves nothing: a package of that name nearly always does (PyPI's
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

    A name is not an identity: anyone can publish ``fmtq`` on npm. What speaks for a
    package is a source repository it names and real use (downloads at the registry's
    bar); without either, nothing but the name does. A registry that does not report use
    (PyPI, the Go proxy) leaves its use unknown, which is not evidence either."""
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


# ``await get(url) -> (status, body)``: any status comes back; network errors raise.
Get = Callable[[str], Awaitable[tuple[int, bytes]]]


@dataclass
class ProbeReport:
    matches: list[Probe] = field(default_factory=list)  # exact-name matches (any quality)
    accepted: list[Probe] = field(default_factory=list)  # matches that pass the filter
    rejected: dict[str, str] = field(default_factory=dict)  # builder -> why filtered out
    errors: dict[str, str] = field(default_factory=dict)  # builder -> error message
    late: list[str] = field(default_factory=list)  # builders cut off by the deadline
    duration_ms: int = 0


class RegistryUnreachable(Exception):
    """A registry that answered with an outage (5xx) or a rate limit: unknown, not absent."""


def _reachable(status: int) -> int:
    if status >= 500 or status == 429:
        raise RegistryUnreachable(f"HTTP {status}")
    return status


def _json(body: bytes) -> Any:
    import json

    try:
        return json.loads(body)
    except ValueError:
        return None


async def _crates(get: Get, base: str, name: str) -> Probe | None:
    status, body = await get(f"{base}/api/v1/crates/{quote(name, safe='')}")
    return parse_crates(name, _json(body)) if _reachable(status) == 200 else None


async def _npm(get: Get, base: str, downloads_base: str, name: str) -> Probe | None:
    import trio

    results: dict[str, tuple[int, bytes] | None] = {}

    async def fetch(key: str, url: str) -> None:
        try:
            results[key] = await get(url)
        except Exception:
            results[key] = None  # the download count is optional; a failure is 0

    async with trio.open_nursery() as nursery:
        nursery.start_soon(fetch, "doc", f"{base}/{quote(name, safe='@')}")
        nursery.start_soon(
            fetch, "dl", f"{downloads_base}/downloads/point/last-week/{quote(name, safe='@')}"
        )
    doc = results.get("doc")
    if doc is None or _reachable(doc[0]) != 200:
        return None
    dl = results.get("dl")
    return parse_npm(name, _json(doc[1]), _json(dl[1]) if dl and dl[0] == 200 else None)


async def _pypi(get: Get, base: str, name: str) -> Probe | None:
    status, body = await get(f"{base}/pypi/{quote(name, safe='')}/json")
    return parse_pypi(name, _json(body)) if _reachable(status) == 200 else None


async def _rubygems(get: Get, base: str, name: str) -> Probe | None:
    status, body = await get(f"{base}/api/v1/gems/{quote(name, safe='')}.json")
    if _reachable(status) != 200:
        return None
    v_status, v_body = await get(f"{base}/api/v1/versions/{quote(name, safe='')}.json")
    return parse_rubygems(name, _json(body), _json(v_body) if v_status == 200 else None)


async def _go(get: Get, base: str, name: str) -> Probe | None:
    status, body = await get(goproxy.latest_url(base, name))
    if _reachable(status) != 200:
        return None
    l_status, l_body = await get(goproxy.list_url(base, name))
    listing = l_body.decode("utf-8", "replace") if l_status == 200 else ""
    return parse_go(name, _json(body), listing)


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
    probers: dict[str, Callable[[], Awaitable[Probe | None]]] = {
        "crates.io": lambda: _crates(get, base["crates.io"], name),
        "npm": lambda: _npm(get, base["npm"], base["npm_downloads"], name),
        "pypi": lambda: _pypi(get, base["pypi"], name),
        "rubygems": lambda: _rubygems(get, base["rubygems"], name),
        "go": lambda: _go(get, base["go"], name),
    }
    report = ProbeReport()
    done: set[str] = set()
    found: dict[str, Probe] = {}
    started = time.monotonic()

    async def run(builder: str) -> None:
        try:
            probe = await probers[builder]()
        except Exception as exc:  # any failure of one registry is a miss for it
            report.errors[builder] = str(getattr(exc, "message", None) or exc or type(exc).__name__)
            probe = None
        done.add(builder)
        if probe is not None:
            found[builder] = probe

    with trio.move_on_after(within_s):
        async with trio.open_nursery() as nursery:
            for b in builders:
                nursery.start_soon(run, b)
    report.late = [b for b in builders if b not in done]
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
