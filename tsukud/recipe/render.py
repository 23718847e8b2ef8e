"""Recipe + version + platform → the concrete asset, URL and install plan of each step.

Pure: the caller supplies the release's asset names (needed only for wildcard patterns,
and used to check exact names when given), so one renderer serves the installer, the
container validator and the static "does this pattern reproduce real releases" check.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping, Sequence
from urllib.parse import quote, unquote, urlsplit

import msgspec

from tsukud.recipe.build import (
    DEFAULT_MAKE_TARGETS,
    DEFAULT_RPATH,
    Build,
    output_path,
    rpath_problem,
)
from tsukud.recipe.build_deps import build_dependencies
from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.model import (
    ARCHIVE_FORMAT_ALIASES,
    AmbiguousAsset,
    ArchiveFormat,
    AssetMatchError,
    AssetNotFound,
    Binary,
    ChmodStep,
    CMakeBuildStep,
    ConfigureMakeStep,
    DownloadArchiveStep,
    DownloadStep,
    EcosystemStep,
    ExtractStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    HostStep,
    InstallBinariesStep,
    InstallLibrariesStep,
    InstallStep,
    PackageStep,
    Recipe,
    RecipeError,
    RunCommandStep,
    SetEnvStep,
    SetRpathStep,
    SetupBuildEnvStep,
    ToolStep,
    UnsupportedFeature,
    UrlStep,
    Verify,
    VerifyFailed,
    matching_steps,
    normalize_fingerprint,
    require_supported,
)
from tsukud.recipe.platform import Platform
from tsukud.recipe.version import ResolvedVersion

DEFAULT_GITHUB_URL = "https://github.com"
_WILDCARD_CHARS = frozenset("*?[")
_LISTED_CANDIDATES = 20

# Longest suffix first so ``.tar.gz`` wins over ``.gz``.
_SUFFIX_FORMATS: tuple[tuple[str, ArchiveFormat | None], ...] = (
    (".tar.gz", ArchiveFormat.TAR_GZ),
    (".tar.xz", ArchiveFormat.TAR_XZ),
    (".tar.bz2", ArchiveFormat.TAR_BZ2),
    (".tar.zst", ArchiveFormat.TAR_ZST),
    (".tar.lz", None),
    (".tgz", ArchiveFormat.TAR_GZ),
    (".txz", ArchiveFormat.TAR_XZ),
    (".tbz2", ArchiveFormat.TAR_BZ2),
    (".tbz", ArchiveFormat.TAR_BZ2),
    (".tzst", ArchiveFormat.TAR_ZST),
    (".tlz", None),
    (".tar", ArchiveFormat.TAR),
    (".zip", ArchiveFormat.ZIP),
    (".gz", ArchiveFormat.GZ),
    (".xz", ArchiveFormat.XZ),
    (".bz2", ArchiveFormat.BZ2),
    (".zst", ArchiveFormat.ZST),
)


class InstallBinary(msgspec.Struct, frozen=True):
    """``src`` is relative to the unpacked tree; ``dest`` to the tool's install dir."""

    src: str
    dest: str


class RenderedStep(msgspec.Struct, frozen=True, kw_only=True):
    """Everything needed to download and unpack one step's asset for one platform.

    URL actions render to the same shape: one ``RenderedStep`` per downloaded file, with
    the ``extract``, ``chmod`` and ``install_binaries`` steps that act on it folded in
    (``repo`` is then empty and ``index`` is the download step's).
    """

    index: int
    action: str
    repo: str
    version: str
    tag: str
    asset_name: str
    url: str
    # Name to save the download as: the asset name, or for github_file the binary's name.
    download_name: str
    archive_format: ArchiveFormat
    strip_dirs: int
    install_mode: str
    binaries: tuple[InstallBinary, ...]
    checksum_url: str | None = None
    # A sha256 the recipe pins (download_file's ``checksum``).
    checksum: str | None = None
    # Files of the unpacked asset a ``chmod`` step makes executable.
    chmod: tuple[str, ...] = ()
    # A detached OpenPGP signature of the download, the key file, and the key's
    # fingerprint (normalised: upper-case hex, no spaces) the recipe trusts.
    signature_url: str | None = None
    signature_key_url: str | None = None
    signature_key_fingerprint: str | None = None
    # ``run_command`` steps (their index, their command) to run in the unpacked asset
    # (its work directory) before the tool is assembled, ``{version}`` filled in;
    # ``{work_dir}`` and ``{install_dir}`` by whoever runs them (``render_command``).
    commands: tuple[tuple[int, str], ...] = ()
    # Mirrors tried in order when ``url`` fails (download's ``fallback_urls``).
    fallback_urls: tuple[str, ...] = ()
    # Why the recipe accepts this file without an upstream checksum or signature
    # (download's ``skip_verification_reason``): said wherever the file is shown.
    skip_verification_reason: str | None = None
    # Said to the person (plan, install): a wildcard that matched several assets.
    warning: str | None = None
    # Outputs that are files, not commands (``outputs = [{ src = "cacert.pem", dest =
    # "share/ca-certificates/cacert.pem" }]``): placed in the tool's tree, not linked.
    files: tuple[InstallBinary, ...] = ()
    # A ``configure_make`` over the unpacked source: built in the build container, and
    # what its ``make install`` wrote replaces the source as the step's work directory.
    build: Build | None = None
    # ``install_libraries`` globs (relative to the unpacked asset): what they match is
    # put at the same path in the tool, symlinks kept (``install/assemble.py``).
    libraries: tuple[str, ...] = ()


class VerifyCheck(msgspec.Struct, frozen=True, kw_only=True):
    command: str
    patterns: tuple[str, ...] = ()
    exit_code: int = 0


class RenderedVerify(msgspec.Struct, frozen=True, kw_only=True):
    check: VerifyCheck
    mode: str = "version"
    additional: tuple[VerifyCheck, ...] = ()


# ------------------------------------------------------------------ names and formats


def expand(template: str, *, version: str, os: str, arch: str) -> str:
    """The reference's ``ExpandVars``: plain replacement of ``{version}``, ``{os}``, ``{arch}``."""
    return template.replace("{version}", version).replace("{os}", os).replace("{arch}", arch)


def mapped(
    step: InstallStep | DownloadStep | DownloadArchiveStep | ExtractStep, target: Platform
) -> tuple[str, str]:
    """The OS and arch spellings a step's asset names use; unmapped keys pass through."""
    os_name = (step.os_mapping or {}).get(target.os, target.os)
    arch = (step.arch_mapping or {}).get(target.arch, target.arch)
    return os_name, arch


def has_wildcard(name: str) -> bool:
    return not _WILDCARD_CHARS.isdisjoint(name)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Go ``path.Match`` semantics: ``*``/``?`` never cross ``/``, ``[^...]`` negates."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            end = pattern.find("]", i + 2 if pattern[i + 1 : i + 2] == "^" else i + 1)
            if end == -1:
                raise RecipeError(f"asset pattern {pattern!r}: unclosed '['")
            body = pattern[i + 1 : end]
            negate = body.startswith("^")
            body = body[1:] if negate else body
            escaped = "".join("\\" + ch if ch in "\\]^[" else ch for ch in body)
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = end
        else:
            out.append(re.escape(c))
        i += 1
    return re.compile("".join(out))


def _listing(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LISTED_CANDIDATES])
    more = len(names) - _LISTED_CANDIDATES
    return f"{shown}, … ({more} more)" if more > 0 else shown or "(none)"


def match_asset(pattern: str, assets: Sequence[str], *, where: str = "") -> str:
    """The one asset ``pattern`` names. Zero or several matches is an error listing the
    candidates: picking the first in API order, as the reference does, silently installs
    the wrong build when a release adds a variant (``-musl``, ``-lsp``)."""
    return first_asset(pattern, assets, where=where, take_first=False)[0]


def first_asset(
    pattern: str, assets: Sequence[str], *, where: str = "", take_first: bool
) -> tuple[str, str | None]:
    """The asset ``pattern`` names and, when it matched several and ``take_first`` (a
    registry recipe, read as tsuku reads it: the first match in the release's order),
    a warning naming the others. Without ``take_first`` (a recipe this project wrote)
    several matches are an error, as in :func:`match_asset`."""
    prefix = f"{where}: " if where else ""
    if not has_wildcard(pattern):
        if pattern in assets:
            return pattern, None
        raise AssetNotFound(
            f"{prefix}no release asset named {pattern}; the release has: {_listing(assets)}",
            pattern=pattern,
            candidates=list(assets),
        )
    regex = _glob_regex(pattern)
    hits = [name for name in assets if regex.fullmatch(name)]
    if len(hits) == 1:
        return hits[0], None
    if hits and take_first:
        others = _listing(hits[1:])
        return (
            hits[0],
            f"{prefix}{pattern} matches {len(hits)} assets; took {hits[0]} "
            f"as tsuku does (not {others})",
        )
    if not hits:
        raise AssetNotFound(
            f"{prefix}no release asset matches {pattern}; the release has: {_listing(assets)}",
            pattern=pattern,
            candidates=list(assets),
        )
    raise AmbiguousAsset(
        f"{prefix}{pattern} matches {len(hits)} assets: {_listing(hits)}",
        pattern=pattern,
        candidates=hits,
    )


def detect_format(name: str) -> ArchiveFormat:
    """Archive format from a file name; names without a known suffix are raw binaries."""
    lowered = name.lower()
    for suffix, fmt in _SUFFIX_FORMATS:
        if lowered.endswith(suffix):
            if fmt is None:
                raise UnsupportedFeature(f"{name}: {suffix[1:]} archives are not supported yet")
            return fmt
    return ArchiveFormat.RAW


def archive_format_of(
    step: GitHubArchiveStep, asset_name: str, *, where: str = ""
) -> ArchiveFormat:
    """Explicit ``archive_format`` wins; else the resolved asset name decides.

    Detecting from the resolved name rather than the pattern also covers patterns that
    end in a wildcard.
    """
    prefix = f"{where}: " if where else ""
    if step.archive_format is not None:
        fmt = ARCHIVE_FORMAT_ALIASES.get(step.archive_format.lower())
        if fmt is None:
            raise UnsupportedFeature(
                f"{prefix}archive_format {step.archive_format} is not supported yet"
            )
        return fmt
    fmt = detect_format(asset_name)
    if fmt is ArchiveFormat.RAW:
        raise RecipeError(
            f"{prefix}could not detect archive format from asset {asset_name}; "
            "please specify 'archive_format' (or use github_file for a bare executable)"
        )
    return fmt


def release_url(repo: str, tag: str, asset: str, github_url: str = DEFAULT_GITHUB_URL) -> str:
    """``{github_url}/{owner}/{repo}/releases/download/{tag}/{asset}``; the tag is
    percent-encoded because monorepo tags contain ``/`` (``kustomize/v5.7.1``); ``+``
    stays as it is, as in tsuku's plans (``cpython-3.10.19+20251217-…``)."""
    owner, _, name = repo.partition("/")
    return (
        f"{github_url.rstrip('/')}/{quote(owner, safe='')}/{quote(name, safe='')}"
        f"/releases/download/{quote(tag, safe='+')}/{quote(asset, safe='+')}"
    )


# ---------------------------------------------------------------------------- steps


def _install_binaries(
    entries: Sequence[Binary], *, directory: bool, version: str, target: Platform
) -> tuple[InstallBinary, ...]:
    """The reference's install_binaries mapping: a plain path installs as ``bin/<name>``
    (in directory mode the path is kept); ``{src, dest}`` is explicit. Templates in
    either use the *unmapped* os/arch."""
    out = []
    for entry in entries:
        src = expand(entry.src, version=version, os=target.os, arch=target.arch)
        if entry.dest is not None:
            dest = expand(entry.dest, version=version, os=target.os, arch=target.arch)
        elif directory:
            dest = src
        else:
            dest = "bin/" + posixpath.basename(src.rstrip("/"))
        out.append(InstallBinary(src, dest))
    return tuple(out)


def install_binaries_for(
    entries: Sequence[Binary], mode: str, version: str, target: Platform
) -> tuple[InstallBinary, ...]:
    """``binaries`` of a step whose ``install_mode`` is ``mode``, resolved (see above)."""
    return _install_binaries(entries, directory=mode == "directory", version=version, target=target)


def render_step(
    step: InstallStep,
    resolved: ResolvedVersion,
    target: Platform,
    *,
    assets: Sequence[str] | None = None,
    github_url: str = DEFAULT_GITHUB_URL,
    index: int = 0,
    recipe_name: str = "",
    take_first: bool = False,
) -> RenderedStep:
    """One step's asset for ``target`` at ``resolved``.

    ``assets`` (the release's asset names) is required when the pattern has wildcards;
    when given it is also used to check that an exact name exists. ``take_first``: a
    wildcard over several assets takes the first, with a warning (:func:`first_asset`).
    """
    where = f"{recipe_name}: steps[{index}]" if recipe_name else f"steps[{index}]"
    os_name, arch = mapped(step, target)
    name = expand(step.asset_pattern, version=resolved.version, os=os_name, arch=arch)
    warning = None
    if assets is not None:
        name, warning = first_asset(name, assets, where=where, take_first=take_first)
    elif has_wildcard(name):
        raise AssetMatchError(
            f"{where}: asset pattern {name} has wildcards; the release's asset list is needed"
        )
    url = release_url(step.repo, resolved.tag, name, github_url)
    if isinstance(step, GitHubArchiveStep):
        mode = (step.install_mode or "binaries").lower()
        checksum_url = None
        if step.checksum_asset is not None:
            checksum_asset = expand(
                step.checksum_asset, version=resolved.version, os=os_name, arch=arch
            )
            checksum_url = release_url(step.repo, resolved.tag, checksum_asset, github_url)
        elif step.checksum_url is not None:
            checksum_url = expand(
                step.checksum_url, version=resolved.version, os=os_name, arch=arch
            )
        return RenderedStep(
            index=index,
            action=step.action,
            repo=step.repo,
            version=resolved.version,
            tag=resolved.tag,
            asset_name=name,
            url=url,
            download_name=name,
            archive_format=archive_format_of(step, name, where=where),
            strip_dirs=step.strip_dirs or 0,
            install_mode=mode,
            binaries=_install_binaries(
                step.binaries,
                directory=mode == "directory",
                version=resolved.version,
                target=target,
            ),
            checksum_url=checksum_url,
            warning=warning,
        )
    if step.binary is not None:
        binaries = _install_binaries(
            [Binary(step.binary)], directory=False, version=resolved.version, target=target
        )
    else:
        binaries = _install_binaries(
            step.binaries or (), directory=False, version=resolved.version, target=target
        )
    return RenderedStep(
        index=index,
        action=step.action,
        repo=step.repo,
        version=resolved.version,
        tag=resolved.tag,
        asset_name=name,
        url=url,
        download_name=binaries[0].src,
        archive_format=ArchiveFormat.RAW,
        strip_dirs=0,
        install_mode="binaries",
        binaries=binaries,
        warning=warning,
    )


def takes_first_match(recipe: Recipe) -> bool:
    """A recipe this project did not write (no ``generated_by``: tsuku's registry, a
    person's file) is read as tsuku reads it, a wildcard taking the first of several
    assets; one this project wrote stays strict (one match or an error)."""
    return recipe.metadata.generated_by is None


class _WorkFile(msgspec.Struct, kw_only=True):
    """A file a URL step saved in the recipe's work directory, and what later steps do
    with it."""

    index: int
    action: str
    name: str
    url: str
    checksum: str | None = None
    checksum_url: str | None = None
    format: ArchiveFormat = ArchiveFormat.RAW
    strip_dirs: int = 0
    chmod: tuple[str, ...] = ()
    install_mode: str = "binaries"
    binaries: tuple[InstallBinary, ...] | None = None
    signature: tuple[str, str, str] | None = None  # (signature_url, key_url, fingerprint)
    commands: tuple[tuple[int, str], ...] = ()
    fallback_urls: tuple[str, ...] = ()
    skip_verification_reason: str | None = None
    # The name pins and records use when it differs from ``name`` (a bottle's blob).
    asset: str | None = None
    files: tuple[InstallBinary, ...] = ()
    build: Build | None = None
    libraries: tuple[str, ...] = ()


def expand_url(template: str, resolved: ResolvedVersion, os_name: str, arch: str) -> str:
    """``expand`` plus ``{version_tag}`` (the raw tag), which only URL actions know."""
    text = template.replace("{version_tag}", resolved.tag)
    return expand(text, version=resolved.version, os=os_name, arch=arch)


def expand_mirrors(
    step: DownloadStep | DownloadArchiveStep, resolved: ResolvedVersion, os_name: str, arch: str
) -> tuple[str, ...]:
    """A URL step's ``fallback_urls`` filled in as its ``url`` is (same placeholders,
    same mappings): install, validation and the plan all read the mirrors from here."""
    return tuple(expand_url(u, resolved, os_name, arch) for u in step.fallback_urls or ())


def url_file_name(url: str, where: str) -> str:
    """The reference's default ``dest``: the URL path's last segment, query dropped."""
    name = unquote(posixpath.basename(urlsplit(url).path))
    if not name or name in (".", "..") or "/" in name or "\\" in name:
        raise RecipeError(f"{where}: cannot name a file after {url}; set dest")
    return name


def url_format(fmt: str | None, name: str, where: str) -> ArchiveFormat:
    if fmt is not None:
        found = ARCHIVE_FORMAT_ALIASES.get(fmt.lower())
        if found is None:
            raise UnsupportedFeature(f"{where}: archive_format {fmt} is not supported yet")
        return found
    detected = detect_format(name)
    if detected is ArchiveFormat.RAW:
        raise RecipeError(
            f"{where}: could not detect archive format from {name}; please specify the format"
        )
    return detected


def _unsupported(where: str, what: str) -> UnsupportedFeature:
    return UnsupportedFeature(f"{where}: {what} is not supported yet")


def _fold_url_steps(
    steps: Sequence[tuple[int, UrlStep]],
    resolved: ResolvedVersion,
    target: Platform,
    recipe_name: str,
    bottles: Mapping[int, BottleRef] | None = None,
    dependencies: Sequence[str] = (),
) -> list[_WorkFile]:
    """Replay the URL steps over one work directory, as tsuku runs them: downloads
    name files, ``extract``/``chmod`` act on them, ``install_binaries`` takes the tool
    from them. A shape this cannot map onto a file (an extract of a file no step
    downloaded, binaries spread over several downloads) is refused, never guessed."""
    files: dict[str, _WorkFile] = {}
    version = resolved.version
    for index, step in steps:
        where = f"{recipe_name}: steps[{index}]" if recipe_name else f"steps[{index}]"
        if isinstance(step, HomebrewStep):
            bottle = (bottles or {}).get(index)
            if bottle is None:
                raise RecipeError(f"{where}: the bottle of {step.formula} was not looked up")
            # The whole keg is the tool (its lib/ beside bin/): directory mode, with
            # the bottle's <formula>/<version>/ stripped.
            files[bottle.work_file] = _WorkFile(
                index=index,
                action=step.action,
                name=bottle.work_file,
                asset=bottle.asset_name,
                url=bottle.url,
                checksum=bottle.sha256,
                format=ArchiveFormat.TAR_GZ,
                strip_dirs=2,
                install_mode="directory",
            )
            continue
        if isinstance(step, DownloadStep | DownloadArchiveStep):
            os_name, arch = mapped(step, target)
            url = expand_url(step.url, resolved, os_name, arch)
            checksum_url = (
                expand_url(step.checksum_url, resolved, os_name, arch)
                if step.checksum_url is not None
                else None
            )
            if isinstance(step, DownloadStep) and step.dest is not None:
                name = expand(step.dest, version=version, os=os_name, arch=arch)
            else:
                name = url_file_name(url, where)
            work = _WorkFile(
                index=index,
                action=step.action,
                name=name,
                url=url,
                checksum_url=checksum_url,
                fallback_urls=expand_mirrors(step, resolved, os_name, arch),
            )
            if isinstance(step, DownloadStep):
                work.checksum = step.checksum
                work.skip_verification_reason = step.skip_verification_reason
                if step.signature_url and step.signature_key_url and step.signature_key_fingerprint:
                    work.signature = (
                        expand_url(step.signature_url, resolved, os_name, arch),
                        expand_url(step.signature_key_url, resolved, os_name, arch),
                        normalize_fingerprint(step.signature_key_fingerprint),
                    )
            else:
                mode = (step.install_mode or "binaries").lower()
                work.format = url_format(step.archive_format, name, where)
                work.strip_dirs = step.strip_dirs or 0
                work.install_mode = mode
                if step.binaries or mode == "directory":
                    work.binaries = _install_binaries(
                        step.binaries,
                        directory=mode == "directory",
                        version=version,
                        target=target,
                    )
                    work.chmod = tuple(b.src for b in work.binaries)
                # else: download and unpack only; a later install_binaries takes it
            if name in files:
                raise _unsupported(where, f"downloading {name} twice")
            files[name] = work
            continue
        if isinstance(step, ExtractStep):
            ext_os, ext_arch = mapped(step, target)
            name = expand(step.archive, version=version, os=ext_os, arch=ext_arch)
            work_or_none = files.get(name)
            if work_or_none is None or work_or_none.format is not ArchiveFormat.RAW:
                raise _unsupported(where, f"extract of {name} (no earlier step downloaded it)")
            work_or_none.format = url_format(step.format, name, where)
            work_or_none.strip_dirs = step.strip_dirs or 0
            continue
        pending = [w for w in files.values() if w.binaries is None]
        if isinstance(step, SetupBuildEnvStep):  # every build gets its environment
            continue
        if isinstance(step, ConfigureMakeStep | CMakeBuildStep):
            _fold_build(step, index, pending, where, version, target)
            continue
        if isinstance(step, SetRpathStep):
            _fold_rpath(step, pending, where, version, target, dependencies)
            continue
        if isinstance(step, InstallLibrariesStep):
            # The download not yet installed from, or the only one there is.
            works = pending if len(pending) == 1 else list(files.values())
            if len(works) != 1:
                what = "without an earlier download" if not works else "over several downloads"
                raise _unsupported(where, f"install_libraries {what}")
            works[0].libraries += tuple(
                expand(p, version=version, os=target.os, arch=target.arch) for p in step.patterns
            )
            continue
        if isinstance(step, ChmodStep):
            chmod = tuple(
                expand(f, version=version, os=target.os, arch=target.arch) for f in step.files
            )
            for work in pending:
                names = {work.name} if work.format is ArchiveFormat.RAW else None
                work.chmod += tuple(f for f in chmod if names is None or f in names)
            continue
        if isinstance(step, RunCommandStep):
            if len(pending) != 1:
                what = (
                    "run_command without an earlier download"
                    if not pending
                    else ("run_command over several downloads")
                )
                raise _unsupported(where, what)
            if pending[0].build is not None:
                raise _unsupported(where, f"run_command beside {pending[0].build.kind}")
            command = expand(step.command, version=version, os=target.os, arch=target.arch)
            pending[0].commands += ((index, command),)
            continue
        assert isinstance(step, InstallBinariesStep)
        if len(pending) != 1:
            what = (
                "install_binaries without an earlier download"
                if not pending
                else ("install_binaries over several downloads")
            )
            raise _unsupported(where, what)
        work = pending[0]
        if work.action != HomebrewStep.ACTION:
            work.install_mode = (step.install_mode or "binaries").lower()
        work.binaries = _install_binaries(
            step.binaries,
            directory=work.install_mode == "directory",
            version=version,
            target=target,
        )
        if step.outputs is not None and work.install_mode != "directory":
            others = tuple(o for o in step.outputs if o not in step.binaries)
            work.files = _install_binaries(others, directory=True, version=version, target=target)
    for work in files.values():
        if work.build is not None and work.binaries is None:
            # No install_binaries after the build: what make install wrote is the
            # tool, its executables the commands (tsuku's configure_make checks them).
            work.install_mode = "directory"
            work.binaries = _install_binaries(
                tuple(Binary(f"bin/{e}") for e in work.build.executables),
                directory=True,
                version=version,
                target=target,
            )
        if work.libraries and work.binaries is None:  # a library: its files, no command
            work.binaries = ()
    # A bottle is installed whole even when no install_binaries names a command in
    # it (a library such as ncurses).
    return [w for w in files.values() if w.binaries is not None or w.action == HomebrewStep.ACTION]


def _fold_rpath(
    step: SetRpathStep,
    pending: list[_WorkFile],
    where: str,
    version: str,
    target: Platform,
    dependencies: Sequence[str],
) -> None:
    """A ``set_rpath`` over a build's output: patchelf runs in the build container
    after ``make install``; over a plain download it would run on the host (not yet).
    A part naming a build dependency's directory (one of ``dependencies``) is kept as
    written: the build fills it with where that dependency was installed
    (``install/build.py``)."""
    built = [w for w in pending if w.build is not None]
    if len(built) != 1:
        raise _unsupported(where, "set_rpath without a configure_make or cmake_build before it")
    work = built[0]
    assert work.build is not None
    rpath = expand(step.rpath or DEFAULT_RPATH, version=version, os=target.os, arch=target.arch)
    problem = rpath_problem(rpath, dependencies)
    if problem is not None:
        raise _unsupported(where, f"set_rpath with {problem}")
    paths = tuple(
        (output_path(expand(b, version=version, os=target.os, arch=target.arch)), rpath)
        for b in step.binaries
    )
    work.build = msgspec.structs.replace(work.build, rpaths=work.build.rpaths + paths)


def _fold_build(
    step: ConfigureMakeStep | CMakeBuildStep,
    index: int,
    pending: list[_WorkFile],
    where: str,
    version: str,
    target: Platform,
) -> None:
    """A build acts on the one unpacked download before it."""
    if len(pending) != 1:
        what = "without an earlier download" if not pending else "over several downloads"
        raise _unsupported(where, f"{step.action} {what}")
    work = pending[0]
    if work.commands:
        raise _unsupported(where, f"{step.action} beside run_command")
    if work.build is not None:
        raise _unsupported(where, "two builds over one download")
    if work.format is ArchiveFormat.RAW:
        raise _unsupported(where, f"{step.action} over {work.name} (it is not unpacked)")

    def fill(text: str) -> str:
        return expand(text, version=version, os=target.os, arch=target.arch)

    if isinstance(step, CMakeBuildStep):
        work.build = Build(
            index=index,
            source_dir=fill(step.source_dir),
            kind=step.action,
            args=tuple(fill(a) for a in step.cmake_args or ()),
            build_type=step.build_type or "Release",
            executables=step.executables,
        )
        return
    work.build = Build(
        index=index,
        source_dir=fill(step.source_dir),
        args=tuple(fill(a) for a in step.configure_args or ()),
        make_targets=tuple(fill(t) for t in step.make_targets or DEFAULT_MAKE_TARGETS),
        executables=step.executables,
    )


def render_url_steps(
    steps: Sequence[tuple[int, UrlStep]],
    resolved: ResolvedVersion,
    target: Platform,
    *,
    recipe_name: str = "",
    bottles: Mapping[int, BottleRef] | None = None,
    dependencies: Sequence[str] = (),
) -> list[RenderedStep]:
    """The URL steps selected for ``target``, one :class:`RenderedStep` per file that
    an ``install_binaries`` (or ``download_archive``, or a ``homebrew`` bottle, whose
    ``bottles`` the caller looked up) installs from. ``dependencies``: the recipe's
    build dependencies (``recipe/build_deps.py``), installed before a build."""
    works = _fold_url_steps(steps, resolved, target, recipe_name, bottles, dependencies)
    if not works:
        where = f"{recipe_name}: " if recipe_name else ""
        raise RecipeError(f"{where}no install_binaries step installs what the recipe downloads")
    return [
        RenderedStep(
            index=work.index,
            action=work.action,
            repo="",
            version=resolved.version,
            tag=resolved.tag,
            asset_name=work.asset or work.name,
            url=work.url,
            download_name=work.name,
            archive_format=work.format,
            strip_dirs=work.strip_dirs,
            install_mode=work.install_mode,
            binaries=work.binaries or (),
            checksum_url=work.checksum_url,
            checksum=work.checksum,
            chmod=work.chmod,
            signature_url=work.signature[0] if work.signature else None,
            signature_key_url=work.signature[1] if work.signature else None,
            signature_key_fingerprint=work.signature[2] if work.signature else None,
            commands=work.commands,
            fallback_urls=work.fallback_urls,
            skip_verification_reason=work.skip_verification_reason,
            files=work.files,
            build=work.build,
            libraries=work.libraries,
        )
        for work in works
    ]


def render_recipe(
    recipe: Recipe,
    resolved: ResolvedVersion,
    target: Platform,
    *,
    assets: Sequence[str] | None = None,
    github_url: str = DEFAULT_GITHUB_URL,
    bottles: Mapping[int, BottleRef] | None = None,
    take_first: bool = False,
) -> list[RenderedStep]:
    """All steps selected for ``target``; raises if any of them cannot be installed.
    ``bottles``: the looked-up bottle of each ``homebrew`` step, by step index.
    ``take_first``: read a wildcard over several assets as tsuku does (the installer
    passes :func:`takes_first_match`); strict by default, so writing and validating a
    recipe never picks among several builds."""
    name = recipe.metadata.name
    out: list[RenderedStep] = []
    url_steps: list[tuple[int, UrlStep]] = []
    for index, step in require_supported(recipe, target, resolved.version):
        if isinstance(step, GitHubArchiveStep | GitHubFileStep):
            out.append(
                render_step(
                    step,
                    resolved,
                    target,
                    assets=assets,
                    github_url=github_url,
                    index=index,
                    recipe_name=name,
                    take_first=take_first,
                )
            )
        elif isinstance(step, EcosystemStep | PackageStep | HostStep | ToolStep):
            # Nothing to download by URL: its package manager fetches it, or the step
            # acts on the host (install/system_packages.py).
            continue
        else:
            url_steps.append((index, step))
    if url_steps:
        deps = build_dependencies(recipe, target, resolved.version)
        out.extend(
            render_url_steps(
                url_steps, resolved, target, recipe_name=name, bottles=bottles, dependencies=deps
            )
        )
        out.sort(key=lambda r: r.index)
    return out


def env_file(recipe: Recipe, target: Platform, version: str, install_dir: str) -> str | None:
    """``env.sh`` for the recipe's ``set_env`` steps on ``target`` (tsuku's file: one
    ``export NAME=value`` line each), every value quoted for the shell, or ``None``
    when there are none."""
    import shlex

    lines = [
        f"export {name}={shlex.quote(_subst(value, version, install_dir))}\n"
        for _, step in matching_steps(recipe, target, version)
        if isinstance(step, SetEnvStep)
        for name, value in step.pairs
    ]
    return "".join(lines) or None


def render_command(command: str, *, work_dir: str, install_dir: str) -> str:
    """A ``run_command`` as it will run: the exact text a person is shown before saying
    yes (``{version}`` was filled in when the step was rendered)."""
    return command.replace("{work_dir}", work_dir).replace("{install_dir}", install_dir)


# --------------------------------------------------------------------------- verify


def _subst(text: str, version: str, install_dir: str | None) -> str:
    text = text.replace("{version}", version)
    return text.replace("{install_dir}", install_dir) if install_dir is not None else text


def render_verify(verify: Verify | None, version: str, install_dir: str) -> RenderedVerify | None:
    """The verify command and patterns with ``{version}``/``{install_dir}`` filled in;
    ``None`` when the recipe has no verify command (the reference skips verification).
    ``[[verify.additional]]`` patterns get ``{version}`` only, as in the reference."""
    if verify is None or not verify.command:
        return None
    patterns = verify.patterns if verify.patterns is not None else (verify.pattern,)
    main = VerifyCheck(
        command=_subst(verify.command, version, install_dir),
        patterns=tuple(_subst(p, version, install_dir) for p in patterns if p),
        exit_code=verify.exit_code or 0,
    )
    additional = tuple(
        VerifyCheck(
            command=_subst(extra.command, version, install_dir),
            patterns=(_subst(extra.pattern, version, None),) if extra.pattern else (),
        )
        for extra in verify.additional or ()
    )
    return RenderedVerify(check=main, mode=verify.mode or "version", additional=additional)


def check_verify_output(check: VerifyCheck, exit_code: int, output: str) -> None:
    """Judge one run of a verify command (combined stdout+stderr).

    Patterns are plain substrings of the trimmed output, in both ``version`` and
    ``output`` modes. ``exit_code`` is honoured everywhere (the reference only does so in
    its sandbox), so a recipe that expects ``--version`` to exit 1 validates the same way
    it installs.
    """
    out = output.strip()
    if exit_code != check.exit_code:
        raise VerifyFailed(
            f"verify command `{check.command}` exited with {exit_code} "
            f"(expected {check.exit_code})\nOutput: {out}",
            command=check.command,
            exit_code=exit_code,
        )
    for pattern in check.patterns:
        if pattern not in out:
            raise VerifyFailed(
                f"pattern mismatch\n  Missing: {pattern}\n  Got: {out}",
                command=check.command,
                missing=pattern,
            )
