"""What a CPAN distribution needs beyond perl, gathered on the host as bytes.

cpanm in the build container has no network, so every distribution it will need must
be in the local mirror it reads before it starts. A distribution says what it needs in
its ``META.json`` (CPAN::Meta::Spec v2: ``prereqs`` → phase → ``requires``; or, with
no ``META.json``, the older ``META.yml``'s ``requires``, ``build_requires`` and
``configure_requires``): that file is read here out of the tarball's bytes, through
``extract.read_files`` (the project's hostile-archive rules, nothing written), and
parsed as data. ``Makefile.PL``/``Build.PL`` never run here, so what only they would
compute (``dynamic_config``) is not seen: a module they add is missing in the
container, and cpanm says which there.

Only ``configure``, ``build`` and ``runtime`` are read: cpanm runs ``--notest``, so
``test`` and ``develop`` needs are never installed. Version ranges stay text (cpanm
checks them against what it finds, in the container). Each required module is looked
up in the mirror's index (already read for the distribution itself): a module of the
build image's perl (:func:`core_modules`, a list asked of that image once and checked
in) is skipped, ``perl`` too; any other the index lacks is
:class:`~tsukud.install.errors.CpanDependencyUnavailable` naming the module and the
distribution that needs it. Each distribution is fetched once (the shell's ``fetch``:
checked against its author's CHECKSUMS as the main one is), read in turn, breadth
first; one already gathered (a cycle, two modules of one distribution) is not fetched
again. At most :data:`MAX_DISTRIBUTIONS` distributions and :data:`MAX_BYTES` bytes
together, else :class:`~tsukud.install.errors.CpanTooManyDependencies`.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from tsukud.install.cpan_index import IndexEntry, is_pause_path
from tsukud.install.errors import (
    CpanDependencyUnavailable,
    CpanMetaInvalid,
    CpanTooManyDependencies,
)
from tsukud.install.extract import read_files
from tsukud.recipe.model import ArchiveFormat

#: The build image's perl's modules, as Module::CoreList in that image lists them.
CORE_FILE = "perl_core_modules.json"
#: The phases cpanm installs for with ``--notest``.
PHASES = ("configure", "build", "runtime")
#: The older META.yml's keys for them.
_YML_KEYS = {"configure_requires": "configure", "build_requires": "build", "requires": "runtime"}
#: Caps on one install's gathering: distributions (the main one aside) and their bytes.
MAX_DISTRIBUTIONS = 200
MAX_BYTES = 512 * 1024 * 1024
# A META file is a few kilobytes; a distribution requiring a thousand modules is not one.
META_MAX_BYTES = 1024 * 1024
MAX_REQUIREMENTS = 1000
# Perl's package names (what cpanm is asked for), and the version text kept.
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:::|')[A-Za-z0-9_]+)*")
_VERSION = re.compile(r"[0-9A-Za-z_.,<>=! v-]{0,128}")
# META.yml, the subset read: a top-level key, and a requirement line below one.
_YML_TOP = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):(.*)")
_YML_REQ = re.compile(
    r"[ ]+([A-Za-z0-9_:']+?):(?:[ ]+(?:'([^']*)'|\"([^\"]*)\"|([^\s'\"#]+)))?[ ]*"
)


# ---------------------------------------------------------------------------- META


def _invalid(file: str, why: str) -> CpanMetaInvalid:
    return CpanMetaInvalid(
        f"{file}: its META file is not CPAN's plain metadata: {why}",
        hint="The distribution's META.json/META.yml is read as data, never run; this one "
        "is malformed or hostile. Use another release or mirror; nothing was installed.",
        file=file,
    )


def _requirement(file: str, module: object, version: object) -> tuple[str, str]:
    if not isinstance(module, str) or not _MODULE.fullmatch(module) or len(module) > 256:
        raise _invalid(file, f"{str(module)[:80]!r} is not a Perl module name")
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        raise _invalid(file, f"{module}'s version {str(version)[:80]!r} is not plain version text")
    return module, version.strip() or "0"


def _add(file: str, out: dict[str, str], pairs: Mapping[Any, Any] | list[tuple[Any, Any]]) -> None:
    items = pairs.items() if isinstance(pairs, Mapping) else pairs
    for module, version in items:
        name, text = _requirement(file, module, version)
        # The same module in two phases: both ranges must hold; cpanm reads them all.
        out[name] = text if out.get(name) in (None, "0", text) else f"{out[name]}, {text}"
        if len(out) > MAX_REQUIREMENTS:
            raise _invalid(file, f"more than {MAX_REQUIREMENTS} modules are required")


def meta_json_requires(data: bytes, file: str) -> dict[str, str]:
    """``META.json``'s configure, build and runtime ``requires``: module → version text
    (numbers kept as written: ``1.10`` stays ``1.10``). A v1 file's top-level keys are
    read as META.yml's are."""
    try:
        doc = json.loads(data.decode("utf-8"), parse_float=str, parse_int=str, parse_constant=str)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise _invalid(file, f"META.json is not JSON: {str(exc)[:120]}") from None
    if not isinstance(doc, dict):
        raise _invalid(file, "META.json is not a JSON object")
    out: dict[str, str] = {}
    prereqs = doc.get("prereqs")
    if prereqs is None:  # meta-spec 1.x in JSON
        for key in _YML_KEYS:
            value = doc.get(key, {})
            if not isinstance(value, dict):
                raise _invalid(file, f"{key} is not a table of modules")
            _add(file, out, value)
        return out
    if not isinstance(prereqs, dict):
        raise _invalid(file, "prereqs is not a table of phases")
    for phase in PHASES:
        relations = prereqs.get(phase, {})
        if not isinstance(relations, dict):
            raise _invalid(file, f"prereqs.{phase} is not a table")
        requires = relations.get("requires", {})
        if not isinstance(requires, dict):
            raise _invalid(file, f"prereqs.{phase}.requires is not a table of modules")
        _add(file, out, requires)
    return out


def meta_yml_requires(data: bytes, file: str) -> dict[str, str]:
    """The older ``META.yml``'s ``configure_requires``, ``build_requires`` and
    ``requires``, read as a strict subset of YAML: each a top-level key followed by
    ``  Module::Name: version`` lines (the version bare or quoted, or none), or ``{}``.
    Other top-level keys and their indented lines are passed over unread; anything else
    under the three keys (flow mappings, anchors, tags, lists, multi-line values) is
    :class:`CpanMetaInvalid` rather than a guess."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _invalid(file, "META.yml is not UTF-8") from None
    out: dict[str, str] = {}
    block: str | None = None
    pairs: list[tuple[str, str]] = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line or line.lstrip().startswith("#") or line in ("---", "..."):
            continue
        if not line[0].isspace():
            top = _YML_TOP.fullmatch(line)
            if top is None:
                raise _invalid(file, f"META.yml line {n} is not a 'key: value' line")
            block = top[1] if top[1] in _YML_KEYS else None
            rest = top[2].strip()
            if block is not None and rest not in ("", "{}", "~"):
                raise _invalid(file, f"META.yml line {n}: {block} is not a block of modules")
            continue
        if block is None:
            continue  # another key's contents, not read
        req = _YML_REQ.fullmatch(line)
        if req is None or "\t" in line:
            raise _invalid(file, f"META.yml line {n} under {block} is not 'Module: version'")
        bare = req[4] if req[4] not in (None, "~") else "0"
        pairs.append((req[1], req[2] if req[2] is not None else (req[3] or bare)))
    _add(file, out, pairs)
    return out


def distribution_requires(tarball: bytes, file: str) -> dict[str, str]:
    """What the distribution in ``tarball`` (named ``file``) requires for configure,
    build and runtime, from its top directory's ``META.json``, else its ``META.yml``;
    nothing when it has neither (cpanm then learns it from ``Makefile.PL`` in the
    container, and says there what it cannot find)."""
    metas = read_files(
        tarball,
        ArchiveFormat.TAR_GZ,
        lambda parts: len(parts) == 2 and parts[1] in ("META.json", "META.yml"),
        max_file_bytes=META_MAX_BYTES,
        name=file,
    )
    for kind, reader in (("META.json", meta_json_requires), ("META.yml", meta_yml_requires)):
        found = [data for key, data in metas.items() if key.endswith(f"/{kind}")]
        if len(found) > 1:
            raise _invalid(file, f"it has {len(found)} top directories with a {kind}")
        if found:
            return reader(found[0], file)
    return {}


# ---------------------------------------------------------------------------- core


@functools.cache
def core_modules() -> frozenset[str]:
    """The modules of the build image's perl (Debian 12's 5.36.0), as
    ``Module::CoreList`` in that image lists them (``perl_core_modules.json`` says how it
    was made): a static list, since the image is built once per tag and its perl is
    fixed, and asking a container per install would cost a start each time."""
    text = resources.files("tsukud.install").joinpath(CORE_FILE).read_text()
    return frozenset(json.loads(text)["modules"])


# ---------------------------------------------------------------------------- resolution


@dataclass(frozen=True)
class Dependency:
    """A distribution gathered for another: its index entry (for the module that
    brought it in), the bytes as checked, the file that required it."""

    entry: IndexEntry
    data: bytes
    needed_by: str


def needed(
    requires: Mapping[str, str],
    index: Mapping[str, IndexEntry],
    core: frozenset[str],
    have: set[str],
    needed_by: str,
) -> list[IndexEntry]:
    """The index entries of ``requires``' modules whose distribution is not in ``have``
    (paths below ``authors/id/``), once each, in the modules' order; perl itself and its
    core modules are skipped. A module the index lacks, or indexes at a path that is
    not PAUSE's, is :class:`CpanDependencyUnavailable` naming ``needed_by``."""
    out: list[IndexEntry] = []
    seen = set(have)
    for module in sorted(requires):
        if module == "perl" or module in core:
            continue
        entry = index.get(module)
        if entry is None:
            raise CpanDependencyUnavailable(
                f"{needed_by} requires the module {module}, which perl does not carry and "
                "the CPAN mirror does not index",
                hint=f"Use a CPAN mirror that indexes {module} (cpan.mirror_url), or a "
                "release of the distribution that does not need it; nothing was installed.",
                module=module,
                needed_by=needed_by,
            )
        if not is_pause_path(entry.path):
            raise CpanDependencyUnavailable(
                f"{needed_by} requires {module}, which the CPAN mirror indexes at "
                f"{entry.path[:200]!r}, not a CPAN distribution's path",
                hint="The mirror's index is not PAUSE's: use another mirror "
                "(cpan.mirror_url); nothing was installed.",
                module=module,
                needed_by=needed_by,
                path=entry.path[:200],
            )
        if entry.path not in seen:
            seen.add(entry.path)
            out.append(entry)
    return out


def _too_many(needed_by: str, cap: str, limit: int) -> CpanTooManyDependencies:
    what = f"{limit} distributions" if cap == "distributions" else f"{limit} bytes"
    return CpanTooManyDependencies(
        f"{needed_by}'s dependencies come to more than {what}, the most tsuku gathers for "
        "one CPAN install",
        hint="Nothing was built or installed. A distribution needing that much is likely "
        "a mirror's error (or a bundle): check the mirror (cpan.mirror_url).",
        cap=cap,
        limit=limit,
        needed_by=needed_by,
    )


async def gather(
    root: IndexEntry,
    root_data: bytes,
    index: Mapping[str, IndexEntry],
    fetch: Callable[[IndexEntry], Awaitable[bytes]],
    *,
    core: frozenset[str] | None = None,
    max_distributions: int = MAX_DISTRIBUTIONS,
    max_bytes: int = MAX_BYTES,
) -> list[Dependency]:
    """Every distribution ``root`` needs, directly or through another, breadth first,
    each fetched once by ``fetch`` (which checks its bytes); ``root`` itself not among
    them. The caps are checked before each fetch (count) and after it (bytes)."""
    core = core_modules() if core is None else core
    have = {root.path}
    queue: list[tuple[bytes, str]] = [(root_data, root.file)]
    out: list[Dependency] = []
    total = 0
    while queue:
        data, file = queue.pop(0)
        for entry in needed(distribution_requires(data, file), index, core, have, file):
            if len(out) >= max_distributions:
                raise _too_many(root.file, "distributions", max_distributions)
            have.add(entry.path)
            got = await fetch(entry)
            total += len(got)
            if total > max_bytes:
                raise _too_many(root.file, "bytes", max_bytes)
            out.append(Dependency(entry, got, file))
            queue.append((got, entry.file))
    return out
