"""The model's answer about an install page, and the recipe it becomes (pure).

The model answers with one ``write_recipe`` call. Its ``kind`` is the closed vocabulary
(docs/design/instructions-builder.md): ``download`` becomes a recipe of URL actions
(``download_archive``, or ``download`` + ``chmod`` + ``install_binaries`` for a bare
executable, one step per platform with ``when``) and a version source, or, for a page
with fixed URLs and no feed, the ``page`` version it states (a pinned recipe: no
``[version]``, the version spelled out, see :func:`to_recipe`); ``ecosystem``
names one of the ecosystem actions and the package; ``script`` and ``system_package``
carry the command to show; ``none`` says the page has nothing usable. No field holds a
shell command that tsuku would run.

:func:`judge` is the code's check of the answer, whatever the model was told: every URL
(download, checksum file, version source) must be on an origin the page names in its
visible text, only ``{version}``/``{os}``/``{arch}`` may be filled in, and the recipe must
pass create's checks on paper (schema, limits, no ``run_command``, a verify command
without shell operators that runs what the recipe installs). The same rule holds for
what is not a URL: an ecosystem package and its package manager, and a GitHub repository
used as the version source, must be named in the visible text (or be the repository the
user's request already verified), so hidden text cannot choose what gets installed.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Final, Literal

import msgspec

from tsukud.create.static_checks import check_on_paper
from tsukud.instructions.page import is_script_name, origin_of
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    Binary,
    ChmodStep,
    DownloadArchiveStep,
    DownloadStep,
    InstallBinariesStep,
    Metadata,
    Recipe,
    Step,
    Verify,
    VersionSection,
    When,
)
from tsukud.registries.ecosystems import BY_PAGE_MANAGER
from tsukud.validation.findings import SCHEMA, Finding, errors

WRITE_RECIPE: Final = "write_recipe"
Kind = Literal["download", "ecosystem", "script", "system_package", "none"]
KINDS: Final = ("download", "ecosystem", "script", "system_package", "none")
# An install page's package manager -> the recipe step that installs its package, and
# the command a person would type: each ecosystem's record says both.
ECOSYSTEM_ACTIONS: Final = {m: e.action for m, e in BY_PAGE_MANAGER.items()}
ECOSYSTEM_COMMANDS: Final = {m: e.install_command for m, e in BY_PAGE_MANAGER.items()}
FORMATS: Final = ("tar.gz", "tgz", "tar.xz", "tar.bz2", "zip", "binary")
OUTSIDE_PAGE: Final = "outside_page"
SCRIPT: Final = "script"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_ALLOWED_PLACEHOLDERS = frozenset({"version", "os", "arch"})
_PACKAGE = re.compile(r"^[A-Za-z0-9@][A-Za-z0-9@._/~-]{0,200}$")
# A version a page states: digits first, no spaces or path characters (``1.4.2``,
# ``v2.0.1-rc1``, ``2024.05.1``); "latest" is not a version.
_PAGE_VERSION = re.compile(r"^v?\d+(?:\.\d+)*(?:[-+][0-9A-Za-z][0-9A-Za-z.]*)?$")
_BINARY = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._/-]{0,200}$")
# The words a page uses for each manager's install command (a Python tool is often
# shown as ``pip install``, a Node one as ``npx``): the record's.
MANAGER_WORDS: Final = {m: e.page_words for m, e in BY_PAGE_MANAGER.items()}
# What the model answers as the manager: msgspec refuses any other (the records'
# page managers); a static checker sees a string.
if TYPE_CHECKING:
    Manager = str
else:
    Manager = Literal[tuple(BY_PAGE_MANAGER)]
#: ``pipx install``, ...: the commands, for the model's instructions.
SHOWN_COMMANDS: Final = tuple(c.split(" {")[0] for c in ECOSYSTEM_COMMANDS.values())

_STR = {"type": "string"}
SCHEMA_JSON: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "kind": {
            "type": "string",
            "enum": list(KINDS),
            "description": "download: the page names download URLs of builds; ecosystem: "
            f"it says {' / '.join(SHOWN_COMMANDS)}; script: "
            "it pipes a script into a shell (curl ... | sh); system_package: it needs "
            "apt-get, dnf, brew or another system package manager; none: nothing usable.",
        },
        "summary": {"type": "string", "description": "What the page says, in one sentence."},
        "version": {
            "type": "object",
            "description": "kind download: where the newest version comes from; or, when "
            "the page names no feed or repository to ask, source page with the one version "
            "its visible text states (the recipe is pinned to it and never upgrades).",
            "properties": {
                "source": {"type": "string", "enum": ["http_json", "github", "page"]},
                "version": {
                    **_STR,
                    "description": "page: the version the page states, e.g. 1.4.2; every "
                    "build URL must contain it (or {version})",
                },
                "url": {**_STR, "description": "http_json: a JSON URL the page names"},
                "version_path": {**_STR, "description": "http_json: dot path, e.g. version"},
                "repo": {**_STR, "description": "github: owner/repo whose tags are versions"},
                "tag_prefix": _STR,
            },
            "required": ["source"],
        },
        "builds": {
            "type": "array",
            "description": "kind download: one entry per platform build the page names.",
            "items": {
                "type": "object",
                "properties": {
                    "os": {"type": "string", "enum": ["linux", "darwin"]},
                    "arch": {"type": "string", "enum": ["amd64", "arm64"]},
                    "url": {
                        **_STR,
                        "description": "the download URL, with {version} where the "
                        "version goes (no other placeholders but {os} and {arch})",
                    },
                    "format": {"type": "string", "enum": list(FORMATS)},
                    "strip_dirs": {"type": "integer", "minimum": 0, "maximum": 3},
                    "binaries": {
                        "type": "array",
                        "items": _STR,
                        "description": "executables' paths inside the archive (format "
                        "binary: the command's name)",
                    },
                    "checksum_url": _STR,
                },
                "required": ["os", "url", "format", "binaries"],
            },
        },
        "verify": {
            "type": "object",
            "properties": {"command": _STR, "pattern": _STR},
            "required": ["command"],
        },
        "ecosystem": {
            "type": "object",
            "properties": {
                "manager": {"type": "string", "enum": list(ECOSYSTEM_ACTIONS)},
                "package": _STR,
            },
            "required": ["manager", "package"],
        },
        "command": {
            **_STR,
            "description": "kind script or system_package: the page's exact command.",
        },
    },
    "required": ["kind", "summary"],
}
DESCRIPTION: Final = (
    "Answer with what the install page says, in tsuku's closed vocabulary. Never invent "
    "URLs: use only URLs the page shows. Shell commands are never run; report them."
)


class Build(msgspec.Struct, frozen=True, kw_only=True):
    os: Literal["linux", "darwin"]
    url: str
    format: str
    binaries: tuple[str, ...]
    arch: Literal["amd64", "arm64"] | None = None
    strip_dirs: int = 0
    checksum_url: str | None = None


class VersionAnswer(msgspec.Struct, frozen=True, kw_only=True):
    source: Literal["http_json", "github", "page"]
    version: str | None = None  # source page: the one version the page states
    url: str | None = None
    version_path: str | None = None
    repo: str | None = None
    tag_prefix: str | None = None


class VerifyAnswer(msgspec.Struct, frozen=True, kw_only=True):
    command: str
    pattern: str | None = None


class EcosystemAnswer(msgspec.Struct, frozen=True, kw_only=True):
    manager: Manager
    package: str


class Answer(msgspec.Struct, frozen=True, kw_only=True):
    kind: Kind
    summary: str = ""
    version: VersionAnswer | None = None
    builds: tuple[Build, ...] = ()
    verify: VerifyAnswer | None = None
    ecosystem: EcosystemAnswer | None = None
    command: str | None = None


class Judged(msgspec.Struct, frozen=True, kw_only=True):
    """An answer after the code's checks: usable when ``findings`` has no error."""

    answer: Answer | None
    recipe: Recipe | None = None
    findings: tuple[Finding, ...] = ()
    refused: tuple[str, ...] = ()  # URLs on origins the page does not name

    @property
    def ok(self) -> bool:
        return self.answer is not None and not errors(self.findings)


def _finding(message: str, category: str = SCHEMA) -> Finding:
    return Finding(category=category, message=message)


def parse(arguments: Any) -> Answer:
    """Raise ``msgspec.ValidationError`` when the arguments do not fit the schema."""
    return msgspec.convert(arguments, Answer)


def _url_findings(
    what: str, url: str, origins: Collection[str], refused: list[str]
) -> list[Finding]:
    found: list[Finding] = []
    bad = [p for p in _PLACEHOLDER.findall(url) if p not in _ALLOWED_PLACEHOLDERS]
    if bad:
        found.append(_finding(f"{what}: only {{version}}, {{os}} and {{arch}} may be filled in"))
    origin = origin_of(_PLACEHOLDER.sub("x", url))
    if origin is None:
        found.append(_finding(f"{what}: {url[:200]!r} is not an http(s) URL"))
    elif origin not in origins:
        refused.append(url[:300])
        found.append(
            _finding(
                f"{what}: {origin} is not a site the page names in its visible text "
                f"(it names: {', '.join(sorted(origins)) or 'none'}); use only URLs the "
                "page shows",
                OUTSIDE_PAGE,
            )
        )
    return found


def named_at(text: str, word: str) -> int | None:
    """Where ``word`` stands on its own in ``text`` (not inside a longer name), or None:
    ``foo`` is named by ``pipx install foo==2`` or "install foo.", not by ``foobar``,
    ``@x/foo`` or ``foo.js``."""
    pattern = r"(?<![\w@/.-])" + re.escape(word) + r"(?![\w/-]|\.\w)"
    m = re.search(pattern, text, re.I)
    return m.start() if m else None


def named_in(text: str, word: str) -> bool:
    return named_at(text, word) is not None


def _ecosystem_findings(eco: EcosystemAnswer, page_text: str) -> list[Finding]:
    found: list[Finding] = []
    if not named_in(page_text, eco.package):
        found.append(
            _finding(
                f"ecosystem.package: {eco.package!r} is not a package the page names in its "
                "visible text; answer only with what the page shows",
                OUTSIDE_PAGE,
            )
        )
    words = MANAGER_WORDS[eco.manager]
    if not any(named_in(page_text, w) for w in words):
        found.append(
            _finding(
                f"ecosystem.manager: the page's visible text never mentions {eco.manager} "
                f"({', '.join(words)})",
                OUTSIDE_PAGE,
            )
        )
    return found


def _repo_findings(repo: str, page_text: str, known_repos: Collection[str]) -> list[Finding]:
    if repo.lower() in {r.lower() for r in known_repos}:
        return []
    if re.search(r"github\.com/" + re.escape(repo) + r"(?![\w.-])", page_text, re.I):
        return []
    return [
        _finding(
            f"version.repo: github.com/{repo} is not named in the page's visible text; use "
            "a version source the page shows",
            OUTSIDE_PAGE,
        )
    ]


def stated_in(text: str, version: str) -> bool:
    """Whether ``version`` is written in ``text`` as a whole version: ``1.4.2`` is
    stated by "foo 1.4.2", "v1.4.2" or ``/foo/1.4.2/``, not by ``11.4.2`` or ``1.4.21``."""
    pattern = r"(?<![\d.])" + re.escape(version) + r"(?![\w]|\.\d)"
    return re.search(pattern, text) is not None


def _page_version_findings(
    version: str, builds: tuple[Build, ...], page_text: str
) -> list[Finding]:
    """A pinned version must be one the page states, and every build must be that
    version's: its URL spells the version out (or fills in {version}). A "latest" URL is
    not pinned: its bytes change with each release, so the pinned sha256 would break."""
    if not _PAGE_VERSION.match(version) or len(version) > 64:
        return [
            _finding(
                f"version source page needs version: the version number the page states "
                f"(e.g. 1.4.2), not {version[:80]!r}"
            )
        ]
    bare = version.removeprefix("v")
    if not stated_in(page_text, bare):
        return [
            _finding(
                f"version.version: {version} is not stated in the page's visible text; "
                "give the version the page shows",
                OUTSIDE_PAGE,
            )
        ]
    return [
        _finding(
            f"builds[{i}].url: {b.url[:200]} does not contain version {bare} (nor "
            "{version}); a pinned recipe downloads that version's files, not a "
            "'latest' URL whose bytes change"
        )
        for i, b in enumerate(builds)
        if "{version}" not in b.url and not stated_in(b.url, bare)
    ]


def _when(build: Build) -> When:
    return When(os=(build.os,), arch=(build.arch,) if build.arch else None)


def _steps(build: Build) -> list[Step]:
    when = _when(build)
    if build.format == "binary":
        name = build.binaries[0]
        return [
            DownloadStep(
                url=build.url, dest=name, checksum_url=build.checksum_url or None, when=when
            ),
            ChmodStep(files=(name,), when=when),
            InstallBinariesStep(binaries=(Binary(name),), when=when),
        ]
    return [
        DownloadArchiveStep(
            url=build.url,
            archive_format=build.format,
            strip_dirs=build.strip_dirs or None,
            binaries=tuple(Binary(b) for b in build.binaries),
            checksum_url=build.checksum_url or None,
            when=when,
        )
    ]


def _unsupported(builds: tuple[Build, ...]) -> tuple[str, ...]:
    def covered(os: str, arch: str) -> bool:
        return any(b.os == os and b.arch in (None, arch) for b in builds)

    return tuple(p.key for p in STANDARD_PLATFORMS if not covered(p.os, p.arch))


def pin(answer: Answer, version: str) -> Answer:
    """The answer with ``{version}`` spelled out everywhere, for a recipe that has no
    version source: tsuku reads such a recipe as version ``dev``, so a placeholder left
    in a URL or the verify pattern would not name these files for it."""

    def fill(text: str) -> str:
        return text.replace("{version}", version)

    builds = tuple(
        msgspec.structs.replace(
            b,
            url=fill(b.url),
            checksum_url=fill(b.checksum_url) if b.checksum_url else b.checksum_url,
            binaries=tuple(fill(x) for x in b.binaries),
        )
        for b in answer.builds
    )
    verify = answer.verify
    if verify is not None:
        verify = VerifyAnswer(
            command=fill(verify.command),
            pattern=fill(verify.pattern) if verify.pattern else verify.pattern,
        )
    return msgspec.structs.replace(answer, builds=builds, verify=verify)


def to_recipe(answer: Answer, *, tool: str, page_url: str) -> Recipe:
    """The recipe in tsuku's format. A ``page`` version becomes no ``[version]`` section,
    URLs with the literal version and ``validated_version`` set to it: the shape tsuku
    reads (as version ``dev``) and this daemon installs as that one pinned version
    (``recipe.pinned_version``)."""
    assert answer.version is not None and answer.verify is not None
    v = answer.version
    pinned: str | None = None
    version: VersionSection | None
    if v.source == "page":
        pinned = (v.version or "").removeprefix("v")
        answer = pin(answer, pinned)
        version = None
    elif v.source == "http_json":
        version = VersionSection(source="http_json", url=v.url, version_path=v.version_path)
    else:
        version = VersionSection(github_repo=v.repo, tag_prefix=v.tag_prefix or None)
    assert answer.verify is not None
    unsupported = _unsupported(answer.builds)
    steps = [s for b in answer.builds for s in _steps(b)]
    return Recipe(
        metadata=Metadata(
            name=tool,
            description=" ".join(answer.summary.split())[:200] or None,
            homepage=page_url,
            supported_os=tuple(sorted({b.os for b in answer.builds})),
            unsupported_platforms=unsupported or None,
            unsupported_reason="the install page offers no build for it" if unsupported else None,
            validated_version=pinned,
        ),
        version=version,
        steps=tuple(steps),
        verify=Verify(command=answer.verify.command, pattern=answer.verify.pattern or None),
    )


def _download_findings(
    answer: Answer,
    origins: Collection[str],
    refused: list[str],
    page_text: str,
    known_repos: Collection[str],
) -> list[Finding]:
    found: list[Finding] = []
    if not answer.builds:
        found.append(_finding("kind download needs at least one entry in builds"))
    if answer.verify is None or not answer.verify.command.strip():
        found.append(_finding("kind download needs verify.command (e.g. foo --version)"))
    v = answer.version
    if v is None:
        found.append(
            _finding(
                "kind download needs a version source: http_json with a JSON URL the page "
                "names, github tags of a repository, or page with the one version the page "
                "states and its URLs contain; without one answer kind none"
            )
        )
    elif v.source == "page":
        found += _page_version_findings(v.version or "", answer.builds, page_text)
    elif v.source == "http_json":
        if not v.url or not v.version_path:
            found.append(_finding("version source http_json needs url and version_path"))
        else:
            found += _url_findings("version.url", v.url, origins, refused)
    elif not v.repo or v.repo.count("/") != 1:
        found.append(_finding("version source github needs repo as owner/repo"))
    else:
        found += _repo_findings(v.repo, page_text, known_repos)
    seen: set[tuple[str, str | None]] = set()
    for i, b in enumerate(answer.builds):
        where = f"builds[{i}]"
        if (b.os, b.arch) in seen:
            found.append(_finding(f"{where}: {b.os}/{b.arch or 'any'} is listed twice"))
        seen.add((b.os, b.arch))
        if not b.binaries or not all(_BINARY.match(x) and ".." not in x for x in b.binaries):
            found.append(_finding(f"{where}: binaries must be relative paths inside the download"))
        if b.format == "binary" and len(b.binaries) != 1:
            found.append(_finding(f"{where}: format binary installs exactly one executable"))
        found += _url_findings(f"{where}.url", b.url, origins, refused)
        if b.checksum_url:
            found += _url_findings(f"{where}.checksum_url", b.checksum_url, origins, refused)
    return found


def judge(
    arguments: Any,
    *,
    tool: str,
    page_url: str,
    origins: Collection[str],
    page_text: str,
    scripts: Collection[str] = (),
    known_repos: Collection[str] = (),
) -> Judged:
    """``page_text``: the page's visible text, which must name every package and
    repository the answer uses (``origins`` are the URLs' counterpart, taken from it).
    ``scripts``: URLs the page pipes into a shell, never a download of a recipe.
    ``known_repos``: a repository the request already verified (its homepage is the
    page), which may be the version source without the page naming it."""
    try:
        answer = parse(arguments)
    except msgspec.ValidationError as exc:
        return Judged(answer=None, findings=(_finding(f"the answer does not fit: {exc}"),))
    refused: list[str] = []
    if answer.kind == "ecosystem":
        eco = answer.ecosystem
        if eco is None or not _PACKAGE.match(eco.package):
            return Judged(
                answer=answer,
                findings=(_finding("kind ecosystem needs ecosystem.manager and a package name"),),
            )
        return Judged(answer=answer, findings=tuple(_ecosystem_findings(eco, page_text)))
    if answer.kind != "download":
        return Judged(answer=answer)
    found = _download_findings(answer, origins, refused, page_text, known_repos)
    found += [
        _finding(
            f"{b.url} is a script the page pipes into a shell: answer kind script instead "
            "(tsuku shows it, never runs it)",
            SCRIPT,
        )
        for b in answer.builds
        if b.url in scripts
    ]
    found += [
        _finding(
            f"{b.url}: {name} is a script by its name, not the tool's program: a script "
            "the page offers is an installer tsuku shows and never runs (answer kind "
            "script with the page's command)",
            SCRIPT,
        )
        for b in answer.builds
        for name in (
            *(x for x in b.binaries if is_script_name(x)),
            *((b.url,) if b.format == "binary" and is_script_name(b.url) else ()),
        )
    ]
    if errors(found):
        return Judged(answer=answer, findings=tuple(found), refused=tuple(refused))
    recipe = to_recipe(answer, tool=tool, page_url=page_url)
    found += check_on_paper(recipe)
    return Judged(
        answer=answer,
        recipe=recipe if not errors(found) else None,
        findings=tuple(found),
        refused=tuple(refused),
    )


def ecosystem_command(eco: EcosystemAnswer) -> str:
    return ECOSYSTEM_COMMANDS[eco.manager].format(name=eco.package)
