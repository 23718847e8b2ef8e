"""PyPI: the JSON API (``/pypi/<project>/json``), the Simple index (``/simple/``) and
the console scripts a wheel declares.

The JSON API says which releases exist (``releases``, version → files) and which is the
latest (``info.version``); pip itself reads only the Simple index. Console scripts are
in no API: they are in the wheel's ``<dist>-<ver>.dist-info/entry_points.txt``.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple
from urllib.parse import quote

from tsukud.registries._common import (
    Get,
    PackageFacts,
    as_dict,
    as_str,
    earliest,
    json_or_none,
    people,
    reachable,
    same_name,
)

_NAME = re.compile(r"[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?")
_SCRIPT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def valid_name(name: str) -> bool:
    """PEP 508's project names: no URL or path ever reaches `pip install`."""
    return len(name) <= 200 and _NAME.fullmatch(name) is not None


def normalize(name: str) -> str:
    """PEP 503: lower case, each run of ``-_.`` one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_url(base: str, name: str) -> str:
    return f"{base.rstrip('/')}/pypi/{normalize(name)}/json"


def simple_url(base: str) -> str:
    """The index pip is pointed at (``--index-url``)."""
    return f"{base.rstrip('/')}/simple/"


def latest(project: Any) -> str | None:
    return as_str(as_dict(as_dict(project).get("info")).get("version"))


def _installable(files: Any) -> bool:
    return isinstance(files, list) and any(
        isinstance(f, dict) and not f.get("yanked") for f in files
    )


def versions(project: Any) -> list[str]:
    """Releases with at least one file that is not yanked."""
    releases = as_dict(as_dict(project).get("releases"))
    return [v for v, files in releases.items() if _installable(files)]


def wheels(project: Any) -> list[dict[str, Any]]:
    """The wheels of the release a JSON document describes (its ``urls``)."""
    return _release_files(project, "bdist_wheel")


def _release_files(project: Any, packagetype: str) -> list[dict[str, Any]]:
    """The release's files of one ``packagetype`` that are not yanked and name their
    URL and file name (what the JSON API's ``urls`` lists)."""
    files = as_dict(project).get("urls")
    if not isinstance(files, list):
        return []
    return [
        f
        for f in files
        if isinstance(f, dict)
        and f.get("packagetype") == packagetype
        and not f.get("yanked")
        and isinstance(f.get("url"), str)
        and isinstance(f.get("filename"), str)
    ]


class LockedRequirement(NamedTuple):
    """One pin of a locked requirements file: the project, its exact version, and the
    sha256 digests (hex) any one of which the installed file must have."""

    name: str
    version: str
    hashes: tuple[str, ...]


class BadLock(ValueError):
    """A locked requirements file this project does not read: the message says which
    line and why."""


_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)")
_HASH = re.compile(r"--hash=sha256:([0-9a-fA-F]{64})")


def parse_lock(text: str) -> tuple[LockedRequirement, ...]:
    """``name==version --hash=sha256:<hex> ...`` entries (``\\`` continues a line,
    ``#`` starts a comment), as ``pip-compile --generate-hashes`` and tsuku write them.

    Anything else pip would honour in a requirements file is refused rather than
    passed on: an option (``--index-url``, ``--extra-index-url``, ``-e``, ``-r``) would
    change where packages come from, a URL or path would bypass the index, a range
    or a missing hash would let a file nobody pinned in, and an environment marker
    would make what installs depend on this host. Raises :class:`BadLock`."""
    out: list[LockedRequirement] = []
    joined = re.sub(r"\\[ \t]*\r?\n", " ", text)
    for number, raw in enumerate(joined.splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        pin = _PIN.fullmatch(words[0])
        if pin is None:
            raise BadLock(f"entry {number} ({words[0][:60]!r}) is not name==version")
        hashes = [_HASH.fullmatch(w) for w in words[1:]]
        if not hashes or any(h is None for h in hashes):
            raise BadLock(f"{words[0]}: each entry needs --hash=sha256:<hex>, and nothing else")
        if not valid_name(pin[1]) or any(normalize(pin[1]) == normalize(e.name) for e in out):
            raise BadLock(f"{words[0]}: {pin[1]} is pinned twice or is not a project name")
        digests = tuple(h[1].lower() for h in hashes if h is not None)
        out.append(LockedRequirement(pin[1], pin[2], digests))
    if not out:
        raise BadLock("it pins no package")
    return tuple(out)


def lock_text(entries: tuple[LockedRequirement, ...]) -> str:
    """The requirements file pip reads: exactly the parsed pins and their hashes."""
    return "".join(
        f"{e.name}=={e.version} " + " ".join(f"--hash=sha256:{h}" for h in e.hashes) + "\n"
        for e in entries
    )


def release_url(base: str, name: str, version: str) -> str:
    """The JSON document of one release (its files and their digests)."""
    return f"{base.rstrip('/')}/pypi/{normalize(name)}/{quote(version, safe='')}/json"


def release_files(release: Any) -> list[dict[str, Any]]:
    """The files of a release's JSON document that are not yanked, wheels and source
    packages alike."""
    return [*wheels(release), *sdists(release)]


def console_scripts(entry_points: str) -> list[str]:
    """Names under ``[console_scripts]`` and ``[gui_scripts]`` of an entry_points.txt."""
    import configparser  # here: the daemon imports this module (ecosystems) at start

    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(entry_points)
    except configparser.Error:
        return []
    names: list[str] = []
    for section in ("console_scripts", "gui_scripts"):
        if parser.has_section(section):
            names += [n for n in parser.options(section) if _SCRIPT.fullmatch(n)]
    return list(dict.fromkeys(names))


# uname-style machine names in wheel platform tags, by tsuku's arch names
_WHEEL_ARCH = {"amd64": ("x86_64",), "arm64": ("aarch64", "arm64", "universal2")}


def wheel_fits(filename: str, os_name: str, arch: str) -> bool:
    """Whether a wheel's platform tag (the file name's last part, PEP 427; several
    joined by ``.``) is for ``os_name``/``arch``: ``any``, a (many/musl)linux tag
    ending in the machine, or a macosx one. A Windows-only wheel fits no Linux host."""
    stem = filename.removesuffix(".whl")
    parts = stem.split("-")
    if len(parts) < 5:
        return False
    machines = _WHEEL_ARCH.get(arch, (arch,))
    for tag in parts[-1].split("."):
        if tag == "any":
            return True
        linux = tag.startswith(("manylinux", "musllinux", "linux_")) and tag.endswith(machines)
        mac = tag.startswith("macosx_") and tag.endswith((*machines, "universal2"))
        if (os_name == "linux" and linux) or (os_name == "darwin" and mac):
            return True
    return False


def sdists(project: Any) -> list[dict[str, Any]]:
    """The source packages of the release a JSON document describes (its ``urls``)."""
    return _release_files(project, "sdist")


def pyproject_scripts(text: str) -> list[str] | None:
    """``[project.scripts]`` of a pyproject.toml (PEP 621), read, never built; None when
    they are not static (``dynamic`` names them, or the table is not there)."""
    import tomllib

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    project = as_dict(doc.get("project"))
    dynamic = project.get("dynamic")
    if isinstance(dynamic, list) and "scripts" in dynamic:
        return None
    scripts = project.get("scripts")
    if not isinstance(scripts, dict):
        return None
    return [name for name in scripts if isinstance(name, str) and _SCRIPT.fullmatch(name)]


# ---- discovery's probe: ``/pypi/<n>/json``; ``len(releases)``, a repository among
# ``info.project_urls``


def probe_facts(name: str, body: Any) -> PackageFacts | None:
    info = as_dict(as_dict(body).get("info"))
    if not same_name(info.get("name"), name):
        return None
    urls = [u for u in as_dict(info.get("project_urls")).values() if isinstance(u, str) and u]
    home = as_str(info.get("home_page"))
    releases = as_dict(body).get("releases")
    return PackageFacts(
        source=str(info["name"]),
        version_count=len(releases) if isinstance(releases, dict) else 0,
        has_repository=bool(urls),
        repository_urls=(*urls, *([home] if home else [])),
        description=as_str(info.get("summary")),
        latest=as_str(info.get("version")),
        first_published=earliest(
            as_dict(f).get("upload_time_iso_8601")
            for files in (releases.values() if isinstance(releases, dict) else ())
            if isinstance(files, list)
            for f in files
        ),
        maintainers=people(info.get("author"), info.get("maintainer")),
    )


async def probe(get: Get, name: str, base: str, downloads_base: str) -> PackageFacts | None:
    status, body = await get(f"{base}/pypi/{quote(name, safe='')}/json")
    return probe_facts(name, json_or_none(body)) if reachable(status) == 200 else None
