"""The ``extract_pattern`` answer and the one way an answer becomes a recipe.

The answer's shape is fixed (the ``extract_pattern`` tool's schema, docs/create.md), so
recorded sessions and other tools can rely on it. Both the LLM and the deterministic
matcher produce it, and :func:`answer_to_recipe` is the only converter: a recipe never
differs because of who wrote the answer.

The answer reaches as far as the recipe format does for one tool: binaries installed
under another name (``{src, dest}``, with ``{version}``/``{os}``/``{arch}`` in ``src``),
a monorepo's ``tag_prefix``, a verify command naming ``{install_dir}``, and per-platform
overrides of the asset, its format, ``strip_dirs``, ``binaries`` and the mappings. In
``binaries``, ``{os}`` and ``{arch}`` mean what they mean in ``asset_pattern`` (the
spellings after ``os_mapping``/``arch_mapping``); the recipe format expands them with
the standard names, so the converter writes a mapped spelling out where the two differ.

Validation rejects what the renderer would accept but a generated recipe must not
contain: a literal release version where ``{version}`` belongs, placeholders other than
``{version}``/``{os}``/``{arch}``, wildcards, unsafe characters, paths that leave the
install directory and verify commands a shell would read as more than one command.
Every problem becomes a :class:`~tsukud.validation.findings.Finding` the model can act on.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import msgspec

from tsukud.create.assets import unsafe_name_reason
from tsukud.create.static_checks import (
    INSTALL_DIR,
    binary_path_findings,
    literal_version_findings,
)
from tsukud.create.tokens import libc_of
from tsukud.errors import TsukuError
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    ArchiveFormat,
    Binary,
    GitHubArchiveStep,
    GitHubFileStep,
    Metadata,
    Platform,
    Recipe,
    Verify,
    VersionSection,
    When,
    detect_format,
    expand,
)
from tsukud.validation.findings import SCHEMA, Finding, errors, format_findings
from tsukud.validation.verify_command import verify_command_findings

AssetType = Literal["archive", "binary"]
AnswerFormat = Literal["tar.gz", "tar.xz", "tar.bz2", "zip"]
OS_NAMES = ("linux", "darwin")
ARCH_NAMES = ("amd64", "arm64")
PLACEHOLDERS = ("{version}", "{os}", "{arch}")
MAX_BINARIES = 20
MAX_STRIP_DIRS = 5
MAX_PATTERN_LENGTH = 256
MAX_TAG_PREFIX = 64
VERIFY_PLACEHOLDERS = ("{version}", "{install_dir}")

_MAPPING_VALUE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+~-]{0,63}")
_PLACEHOLDER = re.compile(r"\{[^{}]*\}")
_WILDCARDS = frozenset("*?[]")
_TAG_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/+-]*")


class BinaryAnswer(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One executable installed under a name of our choosing: ``src`` is its path in
    the archive (``{version}``, ``{os}``, ``{arch}`` as in the asset names), ``dest``
    where it goes in the tool's directory (``bin/tool``)."""

    src: str
    dest: str | None = None


# A plain string is ``src`` installed as ``bin/<its basename>``.
BinaryEntry = str | BinaryAnswer


class Override(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """What differs for one OS (or one OS/arch): unset fields come from the base."""

    os: str
    arch: str | None = None
    asset_pattern: str | None = None
    archive_format: AnswerFormat | None = None
    asset_type: AssetType | None = None
    strip_dirs: int | None = None
    binaries: tuple[BinaryEntry, ...] | None = None
    os_mapping: dict[str, str] | None = None
    arch_mapping: dict[str, str] | None = None


class ExtractPatternAnswer(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    asset_type: AssetType
    asset_pattern: str
    os_mapping: dict[str, str]
    arch_mapping: dict[str, str]
    binaries: tuple[BinaryEntry, ...]
    verify_command: str
    archive_format: AnswerFormat | None = None
    strip_dirs: int | None = None
    verify_pattern: str | None = None
    overrides: tuple[Override, ...] = ()
    tag_prefix: str | None = None
    # ``os/arch`` keys the release has no build for. When given, it replaces what the
    # create run concluded from the asset names (RecipeContext.unsupported); replay
    # still judges every platform the recipe then installs on.
    unsupported_platforms: tuple[str, ...] | None = None


class InvalidAnswer(TsukuError):
    """An ``extract_pattern`` call the model must redo; ``findings`` says why."""

    code = "invalid_answer"

    def __init__(self, findings: Sequence[Finding]) -> None:
        super().__init__(
            "extract_pattern input is invalid:\n" + format_findings(findings),
            findings=[msgspec.to_builtins(f) for f in findings],
        )
        self.findings = list(findings)


class RecipeContext(msgspec.Struct, frozen=True, kw_only=True):
    """What the recipe needs besides the answer.

    ``unsupported`` lists ``os/arch`` keys with no build, decided from the release
    assets, for answers that do not say it (``unsupported_platforms``); ``notes``
    attaches a remark to the step that installs a platform (the libc choice, a Rosetta
    fallback).
    """

    repo: str
    name: str
    description: str | None = None
    homepage: str | None = None
    generated_by: str | None = None
    versions: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    notes: Mapping[str, str] = msgspec.field(default_factory=dict)


# ----------------------------------------------------------------------- validation


class _Spec(msgspec.Struct, frozen=True):
    """What one platform installs: the download, how to unpack it, what to take from
    it, and the spellings its names use (mappings as sorted pairs, so specs hash)."""

    pattern: str
    asset_type: str
    archive_format: str | None
    strip_dirs: int
    binaries: tuple[BinaryEntry, ...]
    os_mapping: tuple[tuple[str, str], ...]
    arch_mapping: tuple[tuple[str, str], ...]


def _pairs(
    base: tuple[tuple[str, str], ...], extra: Mapping[str, str] | None
) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({**dict(base), **(extra or {})}.items()))


def _base(answer: ExtractPatternAnswer) -> _Spec:
    return _Spec(
        answer.asset_pattern,
        answer.asset_type,
        answer.archive_format,
        answer.strip_dirs or 0,
        answer.binaries,
        _pairs((), answer.os_mapping),
        _pairs((), answer.arch_mapping),
    )


def _apply(spec: _Spec, override: Override) -> _Spec:
    """``override`` on top of ``spec``; a changed asset type drops the old format;
    mappings merge key by key."""
    asset_type = override.asset_type or spec.asset_type
    fmt = spec.archive_format if asset_type == spec.asset_type else None
    fmt = override.archive_format or fmt
    return _Spec(
        override.asset_pattern or spec.pattern,
        asset_type,
        fmt,
        spec.strip_dirs if override.strip_dirs is None else override.strip_dirs,
        spec.binaries if override.binaries is None else override.binaries,
        _pairs(spec.os_mapping, override.os_mapping),
        _pairs(spec.arch_mapping, override.arch_mapping),
    )


def _effective(answer: ExtractPatternAnswer, target: Platform) -> _Spec:
    """Base fields, then an OS-wide override, then an OS+arch one (most specific wins)."""
    spec = _base(answer)
    ordered = sorted(
        (o for o in answer.overrides if o.os == target.os and o.arch in (None, target.arch)),
        key=lambda o: o.arch is not None,
    )
    for override in ordered:
        spec = _apply(spec, override)
    return spec


def _src_dest(entry: BinaryEntry) -> tuple[str, str | None]:
    return (entry, None) if isinstance(entry, str) else (entry.src, entry.dest)


def installed_name(entry: BinaryEntry) -> str:
    """The command an entry puts on PATH: the basename of ``dest``, else of ``src``."""
    src, dest = _src_dest(entry)
    return posixpath.basename((dest or src).rstrip("/"))


def installed_path(entry: BinaryEntry) -> str:
    """Where an entry lands in the tool's directory (what ``{install_dir}/`` names)."""
    src, dest = _src_dest(entry)
    return dest if dest is not None else "bin/" + installed_name(src)


def _f(message: str) -> Finding:
    return Finding(category=SCHEMA, message=message)


def _pattern_findings(
    pattern: str, answer: ExtractPatternAnswer, versions: Sequence[str], *, where: str
) -> list[Finding]:
    if not pattern.strip():
        return [_f(f"{where} is empty")]
    if len(pattern) > MAX_PATTERN_LENGTH:
        return [_f(f"{where} is longer than {MAX_PATTERN_LENGTH} characters")]
    unknown = [p for p in _PLACEHOLDER.findall(pattern) if p not in PLACEHOLDERS]
    if unknown:
        return [
            _f(
                f"{where} {pattern!r} uses {', '.join(unknown)}; only {{version}}, {{os}} "
                "and {arch} are expanded"
            )
        ]
    if not _WILDCARDS.isdisjoint(pattern):
        return [_f(f"{where} {pattern!r} has wildcards; name the asset exactly")]
    found = literal_version_findings(pattern, versions, where=where)
    os_values = list(answer.os_mapping.values()) or ["linux"]
    arch_values = list(answer.arch_mapping.values()) or ["amd64"]
    sample = expand(pattern, version="1.0.0", os=os_values[0], arch=arch_values[0])
    if "{" in sample or "}" in sample:
        found.append(_f(f"{where} {pattern!r} has unbalanced braces"))
    else:
        reason = unsafe_name_reason(sample)
        if reason is not None:
            found.append(_f(f"{where} {pattern!r} is not a valid asset file name: {reason}"))
    return found


def _mapping_findings(
    mapping: Mapping[str, str], allowed: Sequence[str], *, where: str
) -> list[Finding]:
    found = []
    for key, value in mapping.items():
        if key not in allowed:
            found.append(
                _f(f"{where} key {key!r} is not one of {', '.join(allowed)} (standard names)")
            )
        elif not _MAPPING_VALUE.fullmatch(value):
            found.append(
                _f(
                    f"{where}.{key} = {value!r} must be the non-empty spelling used in the "
                    "file names (letters, digits, . _ + ~ -; at most 64 characters)"
                )
            )
    return found


def _format_findings(
    asset_type: str, fmt: str | None, pattern: str, *, where: str
) -> list[Finding]:
    suffix_format = detect_format(pattern.replace("{version}", "1.0.0"))
    if asset_type == "binary":
        if fmt is not None:
            return [_f(f"{where}: archive_format applies only to asset_type 'archive'")]
        if suffix_format is not ArchiveFormat.RAW:
            return [
                _f(
                    f"{where}: {pattern!r} ends like a {suffix_format.value} archive; "
                    "use asset_type 'archive'"
                )
            ]
        return []
    if fmt is None and suffix_format is ArchiveFormat.RAW:
        return [
            _f(
                f"{where}: cannot tell the archive format of {pattern!r}; set "
                "archive_format or use asset_type 'binary' for a bare executable"
            )
        ]
    return []


def _binaries_findings(
    entries: Sequence[BinaryEntry], versions: Sequence[str], *, where: str
) -> list[Finding]:
    if not entries:
        return [_f(f"{where} is empty; list the executables to install")]
    found = []
    if len(entries) > MAX_BINARIES:
        found.append(_f(f"{where} lists {len(entries)} entries (limit {MAX_BINARIES})"))
    for i, entry in enumerate(entries):
        src, dest = _src_dest(entry)
        at = f"{where}[{i}]" if isinstance(entry, str) else f"{where}[{i}].src"
        found += binary_path_findings(src, where=at)
        found += literal_version_findings(src, versions, where=at)
        unknown = [p for p in _PLACEHOLDER.findall(src) if p not in PLACEHOLDERS]
        plain = expand(src, version="1", os="linux", arch="amd64").replace("/", "_")
        if unknown or unsafe_name_reason(plain):
            found.append(_f(f"{at} {src!r} is not a plain relative path"))
        if dest is None:
            if _PLACEHOLDER.search(posixpath.basename(src)):
                found.append(
                    _f(
                        f"{at} {src!r} has placeholders in its file name; give "
                        '{"src": ..., "dest": "bin/<tool>"} so the command keeps one name'
                    )
                )
            continue
        found += binary_path_findings(dest, where=f"{where}[{i}].dest")
        if "{" in dest or "}" in dest or unsafe_name_reason(dest.replace("/", "_")):
            found.append(
                _f(f"{where}[{i}].dest {dest!r} must be a plain relative path such as 'bin/tool'")
            )
    return found


def _tag_prefix_findings(prefix: str | None, versions: Sequence[str]) -> list[Finding]:
    if prefix is None:
        return []
    if len(prefix) > MAX_TAG_PREFIX or not _TAG_PREFIX.fullmatch(prefix):
        return [
            _f(
                f"tag_prefix {prefix!r} must be the literal start of the tool's tags, such "
                "as 'kustomize/v' or 'cli-v' (letters, digits, . _ / + -; at most "
                f"{MAX_TAG_PREFIX} characters)"
            )
        ]
    return literal_version_findings(prefix, versions, where="tag_prefix")


def _verify_findings(answer: ExtractPatternAnswer) -> list[Finding]:
    """One plain command, run by a name (or ``{install_dir}/`` path) that every
    platform installs."""
    found = verify_command_findings(answer.verify_command, where="verify_command")
    unknown = [
        p for p in _PLACEHOLDER.findall(answer.verify_command) if p not in VERIFY_PLACEHOLDERS
    ]
    if unknown:
        found.append(
            _f(
                f"verify_command uses {', '.join(unknown)}; only {{version}} and "
                "{install_dir} are expanded"
            )
        )
    command = answer.verify_command.split()
    skipped = answer.unsupported_platforms or ()
    targets = [t for t in STANDARD_PLATFORMS if t.key not in skipped] or STANDARD_PLATFORMS
    specs = [_effective(answer, target) for target in targets]
    names = set.intersection(*({installed_name(b) for b in s.binaries} for s in specs))
    paths = set.intersection(*({installed_path(b) for b in s.binaries} for s in specs))
    if not command or not answer.binaries:
        return found
    runs = command[0]
    if runs.startswith(INSTALL_DIR):
        if runs.removeprefix(INSTALL_DIR) not in paths:
            found.append(
                _f(
                    f"verify_command runs {runs!r}, which is not an installed path on "
                    f"every platform ({', '.join(INSTALL_DIR + p for p in sorted(paths))})"
                )
            )
    elif runs not in names:
        found.append(
            _f(
                f"verify_command runs {runs!r}, which is not among the installed "
                f"binaries ({', '.join(sorted(names))})"
            )
        )
    return found


def _override_findings(answer: ExtractPatternAnswer, versions: Sequence[str]) -> list[Finding]:
    found: list[Finding] = []
    seen: set[tuple[str, str | None]] = set()
    for i, override in enumerate(answer.overrides):
        where = f"overrides[{i}]"
        if override.os not in OS_NAMES:
            found.append(_f(f"{where}.os {override.os!r} is not one of {', '.join(OS_NAMES)}"))
        if override.arch is not None and override.arch not in ARCH_NAMES:
            found.append(
                _f(f"{where}.arch {override.arch!r} is not one of {', '.join(ARCH_NAMES)}")
            )
        key = (override.os, override.arch)
        if key in seen:
            found.append(_f(f"{where} repeats os={override.os} arch={override.arch}"))
        seen.add(key)
        changes = [
            name
            for name in Override.__struct_fields__
            if name not in ("os", "arch") and getattr(override, name) is not None
        ]
        if not changes:
            found.append(
                _f(
                    f"{where} changes nothing; give asset_pattern, archive_format, "
                    "asset_type, strip_dirs, binaries, os_mapping or arch_mapping"
                )
            )
            continue
        spec = _apply(_base(answer), override)
        if override.asset_pattern is not None:
            found += _pattern_findings(
                spec.pattern, answer, versions, where=f"{where}.asset_pattern"
            )
        found += _format_findings(spec.asset_type, spec.archive_format, spec.pattern, where=where)
        if override.strip_dirs is not None:
            found += _strip_dirs_findings(override.strip_dirs, where=f"{where}.strip_dirs")
        if override.binaries is not None:
            found += _binaries_findings(override.binaries, versions, where=f"{where}.binaries")
        found += _mapping_findings(override.os_mapping or {}, OS_NAMES, where=f"{where}.os_mapping")
        found += _mapping_findings(
            override.arch_mapping or {}, ARCH_NAMES, where=f"{where}.arch_mapping"
        )
    return found


def _strip_dirs_findings(value: int | None, *, where: str) -> list[Finding]:
    if value is not None and not 0 <= value <= MAX_STRIP_DIRS:
        return [_f(f"{where} must be between 0 and {MAX_STRIP_DIRS}")]
    return []


def validate_answer(answer: ExtractPatternAnswer, versions: Sequence[str] = ()) -> list[Finding]:
    """Everything wrong with a decoded answer; ``versions`` are the releases' versions,
    used to reject them written out literally."""
    found = _pattern_findings(answer.asset_pattern, answer, versions, where="asset_pattern")
    found += _format_findings(
        answer.asset_type, answer.archive_format, answer.asset_pattern, where="asset_pattern"
    )
    found += _mapping_findings(answer.os_mapping, OS_NAMES, where="os_mapping")
    found += _mapping_findings(answer.arch_mapping, ARCH_NAMES, where="arch_mapping")
    found += _binaries_findings(answer.binaries, versions, where="binaries")
    found += _strip_dirs_findings(answer.strip_dirs, where="strip_dirs")
    found += _tag_prefix_findings(answer.tag_prefix, versions)
    keys = [p.key for p in STANDARD_PLATFORMS]
    for key in answer.unsupported_platforms or ():
        if key not in keys:
            found.append(_f(f"unsupported_platforms: {key!r} is not one of {', '.join(keys)}"))
    if answer.verify_pattern is not None:
        if len(answer.verify_pattern) > 200 or not answer.verify_pattern.isprintable():
            found.append(_f("verify_pattern must be printable text of at most 200 characters"))
        found += literal_version_findings(answer.verify_pattern, versions, where="verify_pattern")
    found += _override_findings(answer, versions)
    return found + _verify_findings(answer)


def parse_answer(arguments: Any, *, versions: Sequence[str] = ()) -> ExtractPatternAnswer:
    """Decode and validate the model's ``extract_pattern`` arguments (a dict, or JSON
    text); raises :class:`InvalidAnswer` with every problem found."""
    try:
        if isinstance(arguments, str | bytes):
            arguments = json.loads(arguments)
        if isinstance(arguments, Mapping):
            # Some providers send null for optional fields they leave out.
            arguments = {k: v for k, v in arguments.items() if v is not None}
        answer = msgspec.convert(arguments, ExtractPatternAnswer)
    except (msgspec.ValidationError, ValueError) as exc:
        raise InvalidAnswer(
            [_f(f"extract_pattern input does not match the schema: {exc}")]
        ) from None
    problems = errors(validate_answer(answer, versions))
    if problems:
        raise InvalidAnswer(problems)
    return answer


# ----------------------------------------------------------------------- conversion


def _when(group: Sequence[Platform], covered: Sequence[Platform]) -> When | None:
    """The shortest ``when`` selecting exactly ``group`` among the covered platforms."""
    if len(group) == len(covered):
        return None
    keys = {p.key for p in group}
    oses = sorted({p.os for p in group}, key=OS_NAMES.index)
    arches = {p.arch for p in group}
    if all(f"{o}/{a}" in keys for o in oses for a in ARCH_NAMES):
        return When(os=tuple(oses))
    if len(arches) == 1:
        return When(os=tuple(oses), arch=(next(iter(arches)),))
    return When(platform=tuple(p.key for p in group))


def _spelled(template: str, spec: _Spec, target: Platform) -> str:
    """``template`` from an answer's ``binaries`` in the recipe format's terms: there,
    ``{os}``/``{arch}`` expand to the standard names, so where the mapping spells them
    otherwise the spelling for ``target`` is written out."""
    spelled_os = dict(spec.os_mapping).get(target.os, target.os)
    spelled_arch = dict(spec.arch_mapping).get(target.arch, target.arch)
    if spelled_os != target.os:
        template = template.replace("{os}", spelled_os)
    if spelled_arch != target.arch:
        template = template.replace("{arch}", spelled_arch)
    return template


class _StepKey(msgspec.Struct, frozen=True):
    """What one recipe step says: platforms that agree on all of it share the step."""

    spec: _Spec
    binaries: tuple[Binary, ...]


def _step_key(spec: _Spec, target: Platform) -> _StepKey:
    binaries = []
    for entry in spec.binaries:
        src, dest = _src_dest(entry)
        binaries.append(Binary(_spelled(src, spec, target), dest))
    return _StepKey(spec, tuple(binaries))


def _step(
    key: _StepKey, repo: str, when: When | None, note: str | None
) -> GitHubArchiveStep | GitHubFileStep:
    spec = key.spec
    os_mapping = dict(spec.os_mapping) if "{os}" in spec.pattern else None
    arch_mapping = dict(spec.arch_mapping) if "{arch}" in spec.pattern else None
    if spec.asset_type == "binary":
        first = key.binaries[0]
        return GitHubFileStep(
            when=when,
            note=note,
            repo=repo,
            asset_pattern=spec.pattern,
            binary=posixpath.basename(first.src) if first.dest is None else None,
            binaries=(first,) if first.dest is not None else None,
            os_mapping=os_mapping or None,
            arch_mapping=arch_mapping or None,
        )
    return GitHubArchiveStep(
        when=when,
        note=note,
        repo=repo,
        asset_pattern=spec.pattern,
        archive_format=spec.archive_format,
        strip_dirs=spec.strip_dirs,
        binaries=key.binaries,
        os_mapping=os_mapping or None,
        arch_mapping=arch_mapping or None,
    )


def _linux_libc(answer: ExtractPatternAnswer, covered: Sequence[Platform]) -> str | None:
    """``glibc`` when every Linux build the recipe installs is a gnu one (it will not
    run on musl systems); ``None`` otherwise."""
    libcs = set()
    for target in covered:
        if target.os == "linux":
            spec = _effective(answer, target)
            name = expand(
                spec.pattern,
                version="0",
                os=dict(spec.os_mapping).get("linux", "linux"),
                arch=dict(spec.arch_mapping).get(target.arch, target.arch),
            )
            libcs.add(libc_of(name))
    return "glibc" if libcs == {"gnu"} else None


def answer_to_recipe(answer: ExtractPatternAnswer, context: RecipeContext) -> Recipe:
    """The recipe for ``answer``: one step when every platform agrees, otherwise one
    step per distinct download-and-install with a ``when`` clause, as tsuku's own
    registry recipes do it. Raises :class:`InvalidAnswer` on validation errors."""
    problems = errors(validate_answer(answer, context.versions))
    if problems:
        raise InvalidAnswer(problems)
    unsupported = answer.unsupported_platforms
    if unsupported is None:
        unsupported = context.unsupported
    covered = [p for p in STANDARD_PLATFORMS if p.key not in unsupported]
    if not covered:
        raise InvalidAnswer(
            [_f("no build for any of linux/darwin x amd64/arm64: nothing to install")]
        )
    groups: dict[_StepKey, list[Platform]] = {}
    for target in covered:
        groups.setdefault(_step_key(_effective(answer, target), target), []).append(target)
    steps = []
    for key, group in groups.items():
        notes = [context.notes[p.key] for p in group if p.key in context.notes]
        note = "; ".join(dict.fromkeys(notes)) or None
        steps.append(_step(key, context.repo, _when(group, covered), note))
    supported_os = tuple(o for o in OS_NAMES if any(p.os == o for p in covered))
    supported_arch = tuple(a for a in ARCH_NAMES if any(p.arch == a for p in covered))
    unsupported = tuple(
        p.key
        for p in STANDARD_PLATFORMS
        if p not in covered and p.os in supported_os and p.arch in supported_arch
    )
    libc = _linux_libc(answer, covered)
    metadata = Metadata(
        name=context.name,
        description=context.description,
        homepage=context.homepage,
        supported_os=supported_os if len(supported_os) < len(OS_NAMES) else None,
        supported_arch=supported_arch if len(supported_arch) < len(ARCH_NAMES) else None,
        supported_libc=(libc,) if libc else None,
        unsupported_platforms=unsupported or None,
        generated_by=context.generated_by,
    )
    return Recipe(
        metadata=metadata,
        version=VersionSection(
            source="github_releases", github_repo=context.repo, tag_prefix=answer.tag_prefix
        ),
        steps=tuple(steps),
        verify=Verify(command=answer.verify_command, pattern=answer.verify_pattern or "{version}"),
    )
