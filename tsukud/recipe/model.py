"""The tsuku recipe format as typed, immutable values.

The Structs mirror the TOML one to one: a field is ``None`` when the key was absent, so
a recipe read and written back keeps exactly the keys it had, and keys we do not model
(other metadata, parameters of actions we cannot run yet, ``[[resources]]``) ride along
in ``extra``/``params``. ``schema/recipe.md`` documents the format; ``toml_io`` converts.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import msgspec

from tsukud.errors import TsukuError
from tsukud.recipe.build import DEFAULT_RPATH, dependency_names, rpath_problem
from tsukud.recipe.platform import Platform
from tsukud.recipe.system import FAMILY_OF_MANAGER, SYSTEM_MANAGERS
from tsukud.recipe.version_range import in_range
from tsukud.registries.ecosystems import BY_ACTION, ECOSYSTEMS, Ecosystem

# ---------------------------------------------------------------------------- errors


class RecipeError(TsukuError):
    """A recipe that cannot be read or used as written."""

    code = "recipe_invalid"


class RecipeParseError(RecipeError):
    """The TOML is malformed or a field has the wrong shape; the message names both."""

    code = "recipe_parse_error"


class UnsupportedAction(RecipeError):
    code = "recipe_unsupported_action"


class UnsupportedFeature(RecipeError):
    """A supported action uses a parameter or value we cannot honour yet."""

    code = "recipe_unsupported_feature"


class UnsupportedVersionSource(UnsupportedFeature):
    """``[version] source`` names a source tsuku cannot query yet: neither its newest
    version can be looked up nor the recipe installed; a plan at a named version still
    shows the steps."""

    def __init__(self, recipe: str, source: str) -> None:
        super().__init__(
            f"{recipe}: version source {source!r} is not supported yet",
            hint=f"`tsukuctl plan {recipe} --version <version>` shows what an install "
            "would do; installing it needs tsuku to learn that source.",
            recipe=recipe,
        )
        self.source = source


class UnsupportedPlatform(RecipeError):
    code = "recipe_unsupported_platform"


class NoMatchingStep(UnsupportedPlatform):
    code = "recipe_no_matching_step"


class AssetMatchError(RecipeError):
    """An asset pattern does not name exactly one asset of the release."""

    code = "asset_mismatch"


class AssetNotFound(AssetMatchError):
    code = "asset_not_found"


class AmbiguousAsset(AssetMatchError):
    code = "asset_ambiguous"


class VersionNotFound(RecipeError):
    code = "version_not_found"


class VerifyFailed(RecipeError):
    code = "verify_failed"


# ----------------------------------------------------------------------- value types


class ArchiveFormat(enum.StrEnum):
    """How a downloaded asset is unpacked. ``RAW`` is a bare executable."""

    TAR_GZ = "tar.gz"
    TAR_XZ = "tar.xz"
    TAR_BZ2 = "tar.bz2"
    TAR_ZST = "tar.zst"
    TAR = "tar"
    ZIP = "zip"
    GZ = "gz"
    XZ = "xz"
    BZ2 = "bz2"
    ZST = "zst"
    RAW = "raw"

    @property
    def is_tar(self) -> bool:
        return self.value == "tar" or self.value.startswith("tar.")

    @property
    def is_single_file(self) -> bool:
        """One compressed file (``tool.gz``): unpacks to one file, not a tree."""
        return self in (ArchiveFormat.GZ, ArchiveFormat.XZ, ArchiveFormat.BZ2, ArchiveFormat.ZST)


# ``archive_format`` spellings accepted in recipes: the reference's list plus the short
# aliases its own LLM generator emits (tgz, tbz). tar.lz parses but cannot be unpacked.
ARCHIVE_FORMAT_ALIASES: dict[str, ArchiveFormat | None] = {
    "tar.gz": ArchiveFormat.TAR_GZ,
    "tgz": ArchiveFormat.TAR_GZ,
    "tar.xz": ArchiveFormat.TAR_XZ,
    "txz": ArchiveFormat.TAR_XZ,
    "tar.bz2": ArchiveFormat.TAR_BZ2,
    "tbz": ArchiveFormat.TAR_BZ2,
    "tbz2": ArchiveFormat.TAR_BZ2,
    "tar.zst": ArchiveFormat.TAR_ZST,
    "tzst": ArchiveFormat.TAR_ZST,
    "tar": ArchiveFormat.TAR,
    "zip": ArchiveFormat.ZIP,
    "tar.lz": None,
    "tlz": None,
}

INSTALL_MODES = ("binaries", "directory", "directory_wrapped")
SUPPORTED_INSTALL_MODES = ("binaries", "directory")


class Binary(msgspec.Struct, frozen=True):
    """One entry of ``binaries``: ``"path/in/archive"`` (``dest`` None) or ``{src, dest}``."""

    src: str
    dest: str | None = None


class When(msgspec.Struct, frozen=True, kw_only=True):
    """A step's platform condition. ``os``, ``platform``, ``libc`` and ``gpu`` accept a
    string or a list in TOML and are stored as tuples; ``arch``, ``linux_family`` and
    ``package_manager`` are single strings, as in the reference, except that the
    registry also writes ``arch`` as a list (``arch = ["amd64", "arm64"]``), so it is a
    tuple too. ``platform`` entries may carry a libc (``linux/arm64/musl``)."""

    platform: tuple[str, ...] | None = None
    os: tuple[str, ...] | None = None
    arch: tuple[str, ...] | None = None
    linux_family: str | None = None
    package_manager: str | None = None
    libc: tuple[str, ...] | None = None
    gpu: tuple[str, ...] | None = None
    # A version range (``">=0.12.5"``, ``">=1.0, <2.0"``): the step serves only those
    # releases, so a recipe can follow asset names that changed between releases.
    version: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def matches(self, target: Platform, version: str | None = None) -> bool:
        """The reference's ``WhenClause.Matches`` plus libc (checked on Linux only) and
        the version range, checked when ``version`` is known (before a version is
        resolved, a ranged step is still a candidate for the platform).

        ``package_manager`` matches on Linux when it names the family's own manager
        (``apt`` on debian, ``dnf`` on rhel, ...). Conditions we cannot evaluate (another
        manager such as ``brew``, ``gpu``, unknown keys) never match: skipping a step is
        safer than running one meant for other hardware.
        """
        if self.gpu or self.extra:
            return False
        if self.package_manager and (
            target.os != "linux"
            or target.linux_family is None
            or FAMILY_OF_MANAGER.get(self.package_manager) != target.linux_family
        ):
            return False
        if self.version and version is not None and not in_range(version, self.version):
            return False
        if self.platform:
            if not platform_listed(self.platform, target):
                return False
        elif self.os and target.os not in self.os:
            return False
        if self.arch and target.arch not in self.arch:
            return False
        if self.linux_family and self.linux_family != target.linux_family:
            return False
        return not (
            self.libc and target.os == "linux" and target.libc and target.libc not in self.libc
        )


def platform_listed(entries: tuple[str, ...], target: Platform) -> bool:
    """``target`` is one of ``entries`` (``os/arch``, or ``os/arch/libc`` which names
    only that libc's builds)."""
    keys = {target.key}
    if target.libc:
        keys.add(f"{target.key}/{target.libc}")
    return not keys.isdisjoint(entries)


class _StepBase(msgspec.Struct, frozen=True, kw_only=True):
    when: When | None = None
    phase: str | None = None
    note: str | None = None
    description: str | None = None
    dependencies: tuple[str, ...] | None = None

    def matches(self, target: Platform, version: str | None = None) -> bool:
        return self.when is None or self.when.matches(target, version)


class GitHubArchiveStep(_StepBase, frozen=True, kw_only=True):
    """Download a release archive, unpack it, install ``binaries`` from it."""

    ACTION: ClassVar[str] = "github_archive"
    action: Literal["github_archive"] = "github_archive"
    repo: str
    asset_pattern: str
    archive_format: str | None = None
    strip_dirs: int | None = None
    install_mode: str | None = None
    binaries: tuple[Binary, ...]
    os_mapping: dict[str, str] | None = None
    arch_mapping: dict[str, str] | None = None
    checksum_asset: str | None = None
    checksum_url: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class GitHubFileStep(_StepBase, frozen=True, kw_only=True):
    """Download a bare release executable; ``binary`` (legacy) or ``binaries[0]`` names it."""

    ACTION: ClassVar[str] = "github_file"
    action: Literal["github_file"] = "github_file"
    repo: str
    asset_pattern: str
    binary: str | None = None
    binaries: tuple[Binary, ...] | None = None
    os_mapping: dict[str, str] | None = None
    arch_mapping: dict[str, str] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class DownloadStep(_StepBase, frozen=True, kw_only=True):
    """``download`` (a URL template) or ``download_file`` (a fixed URL): fetch one file
    into the step's work directory as ``dest`` (default: the URL's last segment).

    ``checksum`` is a sha256 the recipe pins; ``checksum_url`` names a checksum file
    (one hash, or ``<hash>  <name>`` lines). ``signature_url`` (a detached OpenPGP
    signature), ``signature_key_url`` (the public key) and ``signature_key_fingerprint``
    (the key the recipe trusts) come together; the installer checks them with GnuPG.
    """

    ACTIONS: ClassVar[tuple[str, ...]] = ("download", "download_file")
    action: Literal["download", "download_file"] = "download"
    url: str
    dest: str | None = None
    checksum: str | None = None
    checksum_algo: str | None = None
    checksum_url: str | None = None
    signature_url: str | None = None
    signature_key_url: str | None = None
    signature_key_fingerprint: str | None = None
    # Mirrors tried in order when ``url`` fails, each held to the same checksum rules
    # (zig's community mirrors); ``{version}``, ``{os}``, ``{arch}`` are filled in.
    fallback_urls: tuple[str, ...] | None = None
    # Why this file has no upstream checksum or signature (tsuku's key): the download is
    # accepted unverified only with this reason, shown in the plan and the install.
    skip_verification_reason: str | None = None
    os_mapping: dict[str, str] | None = None
    arch_mapping: dict[str, str] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class DownloadArchiveStep(_StepBase, frozen=True, kw_only=True):
    """``download_archive``: ``download`` + ``extract`` + ``chmod`` + ``install_binaries``
    in one step (tsuku decomposes it into exactly those)."""

    ACTION: ClassVar[str] = "download_archive"
    action: Literal["download_archive"] = "download_archive"
    url: str
    archive_format: str | None = None
    strip_dirs: int | None = None
    # Empty in directory mode: the whole tree is the tool, no command is linked (nvm's
    # shell scripts). Empty otherwise: download and unpack only, and a later
    # ``install_binaries`` takes the tree (cuda-runtime), as tsuku reads it.
    binaries: tuple[Binary, ...] = ()
    install_mode: str | None = None
    checksum_url: str | None = None
    # ``download``'s mirrors (tsuku's zig): templated like ``url``, tried in order when
    # the one before fails, each held to the same checks as ``url``.
    fallback_urls: tuple[str, ...] | None = None
    os_mapping: dict[str, str] | None = None
    arch_mapping: dict[str, str] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class ExtractStep(_StepBase, frozen=True, kw_only=True):
    """``extract``: unpack ``archive`` (a file an earlier download saved) in place."""

    ACTION: ClassVar[str] = "extract"
    action: Literal["extract"] = "extract"
    archive: str
    format: str | None = None
    strip_dirs: int | None = None
    # ``{os}``/``{arch}`` in ``archive`` take the same spellings as the download's URL.
    os_mapping: dict[str, str] | None = None
    arch_mapping: dict[str, str] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class ChmodStep(_StepBase, frozen=True, kw_only=True):
    """``chmod``: make ``files`` (paths in the work directory) executable."""

    ACTION: ClassVar[str] = "chmod"
    action: Literal["chmod"] = "chmod"
    files: tuple[str, ...]
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class InstallBinariesStep(_StepBase, frozen=True, kw_only=True):
    """``install_binaries``: what of the work directory becomes the tool (see
    ``GitHubArchiveStep.binaries`` and ``install_mode``)."""

    ACTION: ClassVar[str] = "install_binaries"
    action: Literal["install_binaries"] = "install_binaries"
    binaries: tuple[Binary, ...] = ()
    install_mode: str | None = None
    # tsuku's newer spelling (``outputs = ["bin/tmux"]``, or ``{src, dest}`` tables):
    # what the step exports, an entry landing under ``bin/`` being a command. Read,
    # ``binaries`` is those commands (the rest lives in the tool's directory in
    # directory mode); written back as it was.
    outputs: tuple[Binary, ...] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class RunCommandStep(_StepBase, frozen=True, kw_only=True):
    """``run_command``: a shell command (``sh -c``) run in the work directory of the
    download before it, after its ``extract`` and before ``install_binaries`` (awscli
    flattens its bundle this way). ``{version}``, ``{work_dir}`` and ``{install_dir}``
    are filled in. It runs inside the validation container, or on the host only after
    the user has seen the exact command and said yes (docs/install.md);
    ``requires_sudo`` and ``working_dir`` stay in ``extra`` and are refused."""

    ACTION: ClassVar[str] = "run_command"
    action: Literal["run_command"] = "run_command"
    command: str
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class EcosystemStep(_StepBase, frozen=True, kw_only=True):
    """An install by a language's package manager into the tool's own directory:
    ``<tool>_install``, one action per record of ``registries/ecosystems.py``.

    One Struct serves every ecosystem, so adding one is its record, reader and runner
    and no class here: the record says what the action calls its package in a recipe
    (``package_key``: ``package``, ``crate``, ``gem``, ``module``; ``toml_io`` reads and
    writes that key into ``package_name``) and where its versions come from
    (``version_source``) unless ``[version]`` says otherwise. ``executables`` are the
    commands it puts on PATH. A step is made only for an action a record declares."""

    action: str
    package_name: str
    # Required to install (tsuku's runners need them too); a recipe without them still
    # reads, so a registry's every recipe can be read.
    executables: tuple[str, ...] = ()
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.action not in BY_ACTION:
            raise ValueError(f"{self.action!r} is no ecosystem's action")

    @property
    def record(self) -> Ecosystem:
        """The ecosystem whose action this is: its package key, version source, runner."""
        return BY_ACTION[self.action]


# The ecosystem actions whose record names a runner (registries/ecosystems.py; a test
# holds them to tsukud/install/ecosystem/actions.py): the others parse and resolve
# versions, but are reported as unsupported wherever support is judged.
RUNNABLE_ECOSYSTEM_ACTIONS = frozenset(e.action for e in ECOSYSTEMS if e.runner is not None)
# [version] source names of the ecosystems' registries (tsuku's names).
ECOSYSTEM_VERSION_SOURCES = tuple(e.version_source for e in ECOSYSTEMS)


class HomebrewStep(_StepBase, frozen=True, kw_only=True):
    """``homebrew``: pour the Homebrew bottle of ``formula`` (the whole keg) into the
    work directory; an ``install_binaries`` after it names the tool's commands. The
    bottle is found at install time (``install/homebrew/``), so rendering needs it given."""

    ACTION: ClassVar[str] = "homebrew"
    action: Literal["homebrew"] = "homebrew"
    formula: str
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class SystemPackagesStep(_StepBase, frozen=True, kw_only=True):
    """``apt_install``, ``apk_install``, ``dnf_install``, ``pacman_install``,
    ``zypper_install``: packages of the system's own package manager, as tsuku's
    actions name them. Each runs only on its Linux family (tsuku's implicit
    constraint: ``apt_install`` on debian, whatever ``when`` says). ``unless_command``:
    nothing to do when that command is on PATH; ``fallback``: what to tell the person
    when the install fails. On the host the packages are installed only after a person
    read the exact command and said yes (``install/system_packages.py``)."""

    ACTIONS: ClassVar[tuple[str, ...]] = tuple(SYSTEM_MANAGERS)
    action: Literal["apt_install", "apk_install", "dnf_install", "pacman_install", "zypper_install"]
    packages: tuple[str, ...]
    fallback: str | None = None
    unless_command: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def family(self) -> str:
        return SYSTEM_MANAGERS[self.action].family

    def matches(self, target: Platform, version: str | None = None) -> bool:
        if target.os != "linux" or target.linux_family != self.family:
            return False
        return super().matches(target, version)


class RequireCommandStep(_StepBase, frozen=True, kw_only=True):
    """``require_command``: ``command`` must be on PATH; with ``min_version`` its
    ``command version_flag`` output, read by ``version_regex`` (group 1), must be at
    least that version (tsuku requires both when ``min_version`` is set)."""

    ACTION: ClassVar[str] = "require_command"
    action: Literal["require_command"] = "require_command"
    command: str
    version_flag: str | None = None
    version_regex: str | None = None
    min_version: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class ConfigureMakeStep(_StepBase, frozen=True, kw_only=True):
    """``configure_make``: build the unpacked source in ``source_dir`` (relative to the
    work directory) with ``./configure --prefix=<the tool's directory>
    [configure_args...]``, then ``make`` with each of ``make_targets`` (default: the
    default target, then ``install``); ``executables`` must then be in ``bin/``.

    The source is untrusted code: it is built only in the build container (no network,
    the validation limits), never on the host, and what its ``make install`` wrote is
    what gets installed (``install/build.py``). ``prefix`` (tsuku's key to install
    elsewhere) stays in ``extra`` and is refused: the prefix is the tool's directory."""

    ACTION: ClassVar[str] = "configure_make"
    action: Literal["configure_make"] = "configure_make"
    source_dir: str
    configure_args: tuple[str, ...] | None = None
    make_targets: tuple[str, ...] | None = None
    executables: tuple[str, ...] = ()
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class CMakeBuildStep(_StepBase, frozen=True, kw_only=True):
    """``cmake_build``: ``cmake -S <source_dir> -B <build dir>
    -DCMAKE_INSTALL_PREFIX=<the tool's directory> -DCMAKE_BUILD_TYPE=<build_type>
    [cmake_args...]``, ``cmake --build``, ``cmake --install`` (tsuku's steps; its
    default build type is ``Release``); ``executables`` must then be in ``bin/``.
    Untrusted code like ``configure_make``'s, built the same way: only in the build
    container."""

    ACTION: ClassVar[str] = "cmake_build"
    action: Literal["cmake_build"] = "cmake_build"
    source_dir: str
    cmake_args: tuple[str, ...] | None = None
    build_type: str | None = None
    executables: tuple[str, ...] = ()
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class SetupBuildEnvStep(_StepBase, frozen=True, kw_only=True):
    """``setup_build_env``: tsuku points ``PKG_CONFIG_PATH``, ``CPPFLAGS``, ``LDFLAGS``
    (and ``PATH``, ``CMAKE_PREFIX_PATH``) at the recipe's build dependencies
    (``recipe/build.py`` ``build_dependencies``) before a build step. Here every build
    gets that environment in the build container, where the dependencies are mounted
    read-only (``install/build.py`` ``dependency_env``), so the step itself adds
    nothing; it is read, planned and accepted as that. The build image is the
    compiler (tsuku's ``CC``/``CXX`` are for hosts without one)."""

    ACTION: ClassVar[str] = "setup_build_env"
    action: Literal["setup_build_env"] = "setup_build_env"
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class SetEnvStep(_StepBase, frozen=True, kw_only=True):
    """``set_env``: environment variables the tool wants (``JAVA_HOME``), written as
    ``env.sh`` in the tool's directory, as tsuku writes it. ``vars`` as the recipe
    spells it: a table (``{ NVM_DIR = "{install_dir}" }``, the registry's spelling) or
    tsuku's older list of ``{name, value}``. Values are quoted for the shell (tsuku
    writes them bare, so a value could run a command when the file is sourced);
    ``{version}`` and ``{install_dir}`` are filled in."""

    ACTION: ClassVar[str] = "set_env"
    action: Literal["set_env"] = "set_env"
    vars: dict[str, str] | tuple[dict[str, str], ...]
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        if isinstance(self.vars, dict):
            return tuple(self.vars.items())
        return tuple((v["name"], v["value"]) for v in self.vars)


class SetRpathStep(_StepBase, frozen=True, kw_only=True):
    """``set_rpath``: the RPATH of ``binaries`` (paths in the work directory; tsuku's
    ``.install/`` prefix names the build's output) set to ``rpath`` (default
    ``$ORIGIN/../lib``) with patchelf, after a ``configure_make``, in the build
    container like the build itself. Each part of ``rpath`` must start with
    ``$ORIGIN`` (or macOS's ``@executable_path``, ``@loader_path``, ``@rpath``), as
    tsuku checks, or name a build dependency's directory as tsuku's registry does
    (``{libs_dir}/openssl-{deps.openssl.version}/lib``: that dependency's tool directory
    here, installed before the build; ``recipe/build.py`` ``fill_rpath``); any other
    absolute part is refused. ``create_wrapper`` (tsuku's fallback when patchelf fails)
    is read; a failure fails the build instead."""

    ACTION: ClassVar[str] = "set_rpath"
    action: Literal["set_rpath"] = "set_rpath"
    binaries: tuple[str, ...]
    rpath: str | None = None
    create_wrapper: bool | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class InstallLibrariesStep(_StepBase, frozen=True, kw_only=True):
    """``install_libraries``: the files of the work directory matching ``patterns``
    (globs such as ``lib/*.so*``, relative, without ``..``, as tsuku checks) are put at
    the same relative path in the tool's directory, symlinks kept as symlinks (a
    library's ``libyaml.so.2 -> libyaml.so.2.0.9`` chain) when they stay inside it,
    set-id bits cleared; a pattern set that matches nothing fails, as in tsuku."""

    ACTION: ClassVar[str] = "install_libraries"
    action: Literal["install_libraries"] = "install_libraries"
    patterns: tuple[str, ...]
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class LinkDependenciesStep(_StepBase, frozen=True, kw_only=True):
    """``link_dependencies``: each entry of ``library``'s ``lib/`` linked into the
    tool's ``lib/`` by a relative symlink (tsuku's meaning), so a binary whose RPATH is
    ``$ORIGIN/../lib`` loads the library another recipe installed. ``library`` names
    that recipe: it is installed first and recorded as a runtime dependency (``remove``
    refuses it while the links point into it); ``version``, when given, must be the
    installed one."""

    ACTION: ClassVar[str] = "link_dependencies"
    action: Literal["link_dependencies"] = "link_dependencies"
    library: str
    version: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class InstallShellInitStep(_StepBase, frozen=True, kw_only=True):
    """``install_shell_init``: shell start-up the tool asks for, tsuku's
    ``share/shell.d/<target>@<version>.<shell>`` per shell of ``shells`` (bash and
    zsh, tsuku's only ones and its default), from the tool's file ``source_file`` or
    what its program ``source_command`` prints (``{shell}``, ``{install_dir}`` filled
    in; split into words, no shell). A change to the person's shell start-up: written
    only after they read it and said yes (``install/shell_init.py``)."""

    ACTION: ClassVar[str] = "install_shell_init"
    action: Literal["install_shell_init"] = "install_shell_init"
    target: str
    source_file: str | None = None
    source_command: str | None = None
    shells: tuple[str, ...] = ("bash", "zsh")
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class PipExecStep(_StepBase, frozen=True, kw_only=True):
    """``pip_exec``: tsuku's primitive for Python packages, written in a recipe as it
    is planned: ``locked_requirements`` (a requirements file, every line
    ``name==version`` with its ``--hash=sha256:...``) installed into a venv of the
    tool's own (``venvs/<package>``), ``--require-hashes --no-deps --only-binary
    :all:``, so only the wheels the lock pins, and never a source package, whose build
    would run its code here. ``package`` and ``version`` name the tool (the version
    the lock pins is the one installed); ``executables`` are the commands it puts on
    PATH, nothing else of the venv's ``bin/``. ``python_version`` and
    ``has_native_addons`` are tsuku's notes (a warning there); they are kept and
    planned as written."""

    ACTION: ClassVar[str] = "pip_exec"
    action: Literal["pip_exec"] = "pip_exec"
    package: str
    version: str | None = None
    executables: tuple[str, ...] = ()
    locked_requirements: str
    python_version: str | None = None
    has_native_addons: bool | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)

    @property
    def package_name(self) -> str:
        return self.package


class CpanInstallStep(_StepBase, frozen=True, kw_only=True):
    """``cpan_install``: tsuku's install of a CPAN ``distribution`` (``module``, when
    given, is what cpanm is asked for; otherwise the distribution's name with ``-`` as
    ``::``) with cpanm into the tool's directory, ``executables`` from its ``bin/``.
    ``perl_version``, ``cpanfile``, ``mirror``, ``mirror_only`` and ``offline`` are
    tsuku's other keys, read and planned as written. A distribution's
    ``Makefile.PL`` is code it runs to build, so cpanm runs only in the build
    container, from a mirror of the distribution's bytes fetched here
    (``install/cpan.py``); like ``pip_exec`` it is the whole install on its platform."""

    ACTION: ClassVar[str] = "cpan_install"
    action: Literal["cpan_install"] = "cpan_install"
    distribution: str
    module: str | None = None
    executables: tuple[str, ...] = ()
    perl_version: str | None = None
    cpanfile: str | None = None
    mirror: str | None = None
    mirror_only: bool | None = None
    offline: bool | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


# tsuku's package-manager primitives written as recipe steps: like an ecosystem step,
# each installs into the tool's own directory and is the whole install on its platform.
PackageStep = PipExecStep | CpanInstallStep


# Steps that build from source: they run only in the build container.
BuildStep = ConfigureMakeStep | CMakeBuildStep | SetupBuildEnvStep | SetRpathStep
BUILD_ACTIONS = (
    ConfigureMakeStep.ACTION,
    CMakeBuildStep.ACTION,
    SetupBuildEnvStep.ACTION,
    SetRpathStep.ACTION,
)


# Steps that act on the host itself rather than on the tool's directory: checked or
# run (after a person's yes) before anything is downloaded.
HostStep = SystemPackagesStep | RequireCommandStep
# Steps that say something about the installed tool rather than fetch or build it.
ToolStep = SetEnvStep | LinkDependenciesStep | InstallShellInitStep


class GenericStep(_StepBase, frozen=True, kw_only=True):
    """Any other action (apk_install, nix_install, ...): kept verbatim so it round-trips."""

    action: str
    params: dict[str, Any] = msgspec.field(default_factory=dict)


InstallStep = GitHubArchiveStep | GitHubFileStep
# The URL actions: they share one work directory per recipe, in step order.
UrlStep = (
    DownloadStep
    | DownloadArchiveStep
    | ExtractStep
    | ChmodStep
    | InstallBinariesStep
    | RunCommandStep
    | HomebrewStep
    | ConfigureMakeStep
    | CMakeBuildStep
    | SetupBuildEnvStep
    | SetRpathStep
    | InstallLibrariesStep
)
SupportedStep = (
    GitHubArchiveStep | GitHubFileStep | UrlStep | EcosystemStep | PackageStep | HostStep | ToolStep
)
Step = SupportedStep | GenericStep


class Metadata(msgspec.Struct, frozen=True, kw_only=True):
    """``[metadata]``. The last block is what tsuku writes into recipes it generated."""

    name: str
    description: str | None = None
    homepage: str | None = None
    version_format: str | None = None
    type: str | None = None
    tier: int | None = None
    curated: bool | None = None
    requires_sudo: bool | None = None
    binaries: tuple[str, ...] | None = None
    dependencies: tuple[str, ...] | None = None
    runtime_dependencies: tuple[str, ...] | None = None
    # More recipes to install first, beside ``dependencies`` (tsuku's key). Both are
    # installed before a build from source (``recipe/build.py``); a recipe that builds
    # nothing has them read and written back only.
    extra_dependencies: tuple[str, ...] | None = None
    supported_os: tuple[str, ...] | None = None
    supported_arch: tuple[str, ...] | None = None
    supported_libc: tuple[str, ...] | None = None
    unsupported_platforms: tuple[str, ...] | None = None
    unsupported_reason: str | None = None
    satisfies: dict[str, tuple[str, ...]] | None = None
    llm_validation: str | None = None
    generated_by: str | None = None
    validated_at: str | None = None
    validation_platform: str | None = None
    validation_image: str | None = None
    validated_version: str | None = None
    # asset file name → sha256 hex of the file validated at ``validated_version``.
    asset_sha256: dict[str, str] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class VersionSection(msgspec.Struct, frozen=True, kw_only=True):
    """``[version]``. GitHub sources and ``http_json`` (``url`` answers JSON whose
    ``version_path``, dot-separated, holds the version) are modelled; other keys stay
    in ``extra``."""

    source: str | None = None
    github_repo: str | None = None
    tag_prefix: str | None = None
    url: str | None = None
    version_path: str | None = None
    stable_qualifiers: tuple[str, ...] | None = None
    # The name the version is looked up under for ``homebrew`` (``formula``, or a
    # ``cask``) and Go module proxy (``module``) sources, when it differs from the tool's.
    formula: str | None = None
    cask: str | None = None
    module: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class VerifyAdditional(msgspec.Struct, frozen=True, kw_only=True):
    command: str
    pattern: str | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class Verify(msgspec.Struct, frozen=True, kw_only=True):
    """``[verify]``: a command whose output must contain each pattern (plain substring)."""

    command: str | None = None
    pattern: str | None = None
    patterns: tuple[str, ...] | None = None
    mode: str | None = None
    version_format: str | None = None
    reason: str | None = None
    exit_code: int | None = None
    additional: tuple[VerifyAdditional, ...] | None = None
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


class Recipe(msgspec.Struct, frozen=True, kw_only=True):
    metadata: Metadata
    version: VersionSection | None = None
    steps: tuple[Step, ...] = ()
    verify: Verify | None = None
    # Top-level keys we do not model ([[resources]], [[patches]], ...).
    extra: dict[str, Any] = msgspec.field(default_factory=dict)


# --------------------------------------------------------------------------- support

# Version sources whose tags come from GitHub; anything else needs a provider we lack.
GITHUB_VERSION_SOURCES = (None, "github", "github_releases", "github_tags")
HTTP_JSON_SOURCE = "http_json"
HOMEBREW_SOURCE = "homebrew"  # the formula's version from the Homebrew formulae API
# A cpan_install's distribution: the release the CPAN mirror's index names (tsuku asks
# MetaCPAN's API for the newest; a mirror indexes that one).
METACPAN_SOURCE = "metacpan"
SUPPORTED_VERSION_SOURCES = (
    *GITHUB_VERSION_SOURCES,
    HTTP_JSON_SOURCE,
    *ECOSYSTEM_VERSION_SOURCES,
    HOMEBREW_SOURCE,
    METACPAN_SOURCE,
)
# Hash algorithms the download pump computes while streaming.
CHECKSUM_ALGOS = ("sha256",)


def normalize_fingerprint(text: str) -> str:
    """An OpenPGP fingerprint as GnuPG prints it: ``"FB5D B77F ..."`` or ``0xfb5d...`` →
    upper-case hex without spaces."""
    return "".join(text.split()).upper().removeprefix("0X")


def ranged(step: Step) -> bool:
    """The step belongs to a version override (``when.version``)."""
    return step.when is not None and bool(step.when.version)


def matching_steps(
    recipe: Recipe, target: Platform, version: str | None = None
) -> list[tuple[int, Step]]:
    """Steps whose ``when`` clause selects ``target`` (at ``version``, when given), with
    their index in ``steps``.

    Version-ranged steps are overrides, as aqua's ``version_overrides`` are: at a
    version some range holds, the ranged steps holding it replace the unranged ones;
    at any other version only the unranged steps count. So the unranged steps (the only
    ones tsuku, which has no ``when.version``, ever reads) can carry the newest naming
    alone, and an older release never downloads two namings. Before a version is
    resolved every step for the platform is a candidate."""
    if version is None:
        return [(i, step) for i, step in enumerate(recipe.steps) if step.matches(target)]
    overridden = any(
        ranged(step) and step.when is not None and in_range(version, step.when.version or "")
        for step in recipe.steps
    )
    return [
        (i, step)
        for i, step in enumerate(recipe.steps)
        if ranged(step) == overridden and step.matches(target, version)
    ]


def check_platform(recipe: Recipe, target: Platform) -> None:
    """Raise :class:`UnsupportedPlatform` when the metadata rules ``target`` out."""
    meta = recipe.metadata
    why: str | None = None
    if meta.supported_os is not None and target.os not in meta.supported_os:
        why = f"supported_os is {', '.join(meta.supported_os) or 'empty'}"
    elif meta.supported_arch is not None and target.arch not in meta.supported_arch:
        why = f"supported_arch is {', '.join(meta.supported_arch) or 'empty'}"
    elif (
        meta.supported_libc is not None
        and target.os == "linux"
        and target.libc
        and target.libc not in meta.supported_libc
    ):
        why = f"supported_libc is {', '.join(meta.supported_libc) or 'empty'}"
    elif meta.unsupported_platforms and platform_listed(meta.unsupported_platforms, target):
        why = f"{target.key} is listed in unsupported_platforms"
    if why is not None:
        raise UnsupportedPlatform(
            f"{meta.name} is not available for {target}: {why}",
            hint=meta.unsupported_reason or None,
            recipe=meta.name,
            platform=str(target),
        )


def _check_step(recipe_name: str, index: int, step: SupportedStep) -> None:
    where = f"{recipe_name}: steps[{index}]"
    if isinstance(step, EcosystemStep) and step.action not in RUNNABLE_ECOSYSTEM_ACTIONS:
        raise UnsupportedAction(
            f"{where}: action {step.action} is not supported yet",
            hint=f"Install {step.package_name} with its own package manager for now.",
            recipe=recipe_name,
            action=step.action,
            step=index,
        )
    if isinstance(step, EcosystemStep) and not step.executables:
        raise RecipeError(
            f"{where}: {step.action} needs executables (the commands it puts on PATH)",
            recipe=recipe_name,
            action=step.action,
            step=index,
        )
    if isinstance(step, CpanInstallStep) and not step.executables:
        raise RecipeError(
            f"{where}: {step.action} needs executables (the commands it puts on PATH)",
            recipe=recipe_name,
            action=step.action,
            step=index,
        )
    unhonoured = cpan_unhonoured(step) if isinstance(step, CpanInstallStep) else []
    if unhonoured:
        raise UnsupportedFeature(
            f"{where}: {step.action}'s {' and '.join(unhonoured)} is not supported yet",
            hint="A cpanfile would change what is installed and perl_version which perl "
            "builds it; neither is honoured yet, so nothing was installed rather than "
            "something else.",
            recipe=recipe_name,
            action=step.action,
            step=index,
        )
    if isinstance(step, PipExecStep) and not (step.executables and step.version):
        raise RecipeError(
            f"{where}: {step.action} needs executables (the commands it puts on PATH) "
            "and version (the package's version its locked_requirements pin)",
            recipe=recipe_name,
            action=step.action,
            step=index,
        )
    if unmodelled_parameters(step):
        names = ", ".join(unmodelled_parameters(step))
        raise UnsupportedFeature(
            f"{where}: {step.action} parameter {names} is not supported yet",
            recipe=recipe_name,
            action=step.action,
            step=index,
        )
    if isinstance(step, DownloadStep):
        algo = (step.checksum_algo or "sha256").lower()
        if algo not in CHECKSUM_ALGOS:
            raise UnsupportedFeature(
                f"{where}: {step.action} checksum_algo {algo} is not supported yet",
                recipe=recipe_name,
                action=step.action,
                step=index,
            )
    if isinstance(step, GitHubArchiveStep | DownloadArchiveStep | InstallBinariesStep):
        mode = (step.install_mode or "binaries").lower()
        if mode not in SUPPORTED_INSTALL_MODES:
            raise UnsupportedFeature(
                f"{where}: install_mode {mode} is not supported yet",
                recipe=recipe_name,
                step=index,
            )
    if isinstance(step, GitHubArchiveStep | DownloadArchiveStep | ExtractStep):
        fmt = step.format if isinstance(step, ExtractStep) else step.archive_format
        if fmt is not None and ARCHIVE_FORMAT_ALIASES.get(fmt.lower()) is None:
            raise UnsupportedFeature(
                f"{where}: archive_format {fmt} is not supported yet",
                recipe=recipe_name,
                step=index,
            )


def require_supported(
    recipe: Recipe, target: Platform, version: str | None = None
) -> list[tuple[int, SupportedStep]]:
    """Everything we need to install ``recipe`` on ``target``, or a typed reason why not.

    Only steps selected for ``target`` are judged, so a recipe that uses homebrew on
    macOS and github_archive on Linux still installs on Linux. Returns the install steps
    with their indices.
    """
    name = recipe.metadata.name
    check_platform(recipe, target)
    source = recipe.version.source if recipe.version is not None else None
    if source not in SUPPORTED_VERSION_SOURCES:
        raise UnsupportedVersionSource(name, str(source))
    selected: list[tuple[int, SupportedStep]] = []
    for index, step in matching_steps(recipe, target, version):
        if isinstance(step, GenericStep):
            raise UnsupportedAction(
                f"{name}: steps[{index}]: action {step.action} is not supported yet",
                recipe=name,
                action=step.action,
                step=index,
            )
        _check_step(name, index, step)
        selected.append((index, step))
    if not selected:
        at = f" at version {version}" if version is not None else ""
        raise NoMatchingStep(
            f"{name}: no step installs on {target}{at}", recipe=name, platform=str(target)
        )
    _check_ecosystem(name, source, selected)
    return selected


def _check_ecosystem(
    name: str, source: str | None, selected: list[tuple[int, SupportedStep]]
) -> None:
    """An ecosystem step is the whole install: its package manager owns the tool's
    directory, so it stands alone, and its versions come from its own registry."""
    selected = [(i, s) for i, s in selected if not isinstance(s, HostStep | ToolStep)]
    locked = [(i, s) for i, s in selected if isinstance(s, PipExecStep | CpanInstallStep)]
    if locked and len(selected) > 1:
        index, alone = locked[0]
        raise UnsupportedFeature(
            f"{name}: steps[{index}]: {alone.action} cannot be combined with other steps "
            "on one platform yet",
            recipe=name,
            action=alone.action,
            step=index,
        )
    if source == METACPAN_SOURCE and not any(isinstance(s, CpanInstallStep) for _, s in selected):
        raise UnsupportedFeature(
            f"{name}: version source {source} needs a cpan_install step", recipe=name
        )
    eco = [(i, s) for i, s in selected if isinstance(s, EcosystemStep)]
    if not eco:
        if source in ECOSYSTEM_VERSION_SOURCES:
            raise UnsupportedFeature(
                f"{name}: version source {source} needs an ecosystem install step",
                recipe=name,
            )
        return
    index, step = eco[0]
    if len(selected) > 1:
        raise UnsupportedFeature(
            f"{name}: steps[{index}]: {step.action} cannot be combined with other steps "
            "on one platform yet",
            recipe=name,
            action=step.action,
            step=index,
        )
    if source not in (None, step.record.version_source):
        raise UnsupportedFeature(
            f"{name}: version source {source} cannot pin a {step.action} package "
            f"(its versions come from {step.record.version_source})",
            recipe=name,
            action=step.action,
            step=index,
        )


def ecosystem_step(
    recipe: Recipe, target: Platform, version: str | None = None
) -> EcosystemStep | None:
    """The ecosystem step that installs ``recipe`` on ``target``, if that is how it
    installs (checked by :func:`require_supported`)."""
    for _index, step in require_supported(recipe, target, version):
        if isinstance(step, EcosystemStep):
            return step
    return None


def package_step(
    recipe: Recipe, target: Platform, version: str | None = None
) -> PackageStep | None:
    """The ``pip_exec`` or ``cpan_install`` step that installs ``recipe`` on ``target``,
    if that is how it installs (alone on its platform: checked by
    :func:`require_supported`)."""
    for _index, step in require_supported(recipe, target, version):
        if isinstance(step, PipExecStep | CpanInstallStep):
            return step
    return None


def unsupported_actions(recipe: Recipe) -> list[str]:
    """The actions of ``recipe`` (on any platform) that tsuku cannot run yet, each once,
    in step order: what a registry coverage report counts, before any platform choice."""
    out: list[str] = []
    builds = [s for s in recipe.steps if isinstance(s, ConfigureMakeStep | CMakeBuildStep)]
    deps = declared_build_dependencies(recipe, builds)
    for step in recipe.steps:
        if isinstance(step, GenericStep) or (
            isinstance(step, EcosystemStep) and step.action not in RUNNABLE_ECOSYSTEM_ACTIONS
        ):
            found = [step.action]
        else:  # a parameter install refuses (requires_sudo, ...) makes the step unusable
            unhonoured = cpan_unhonoured(step) if isinstance(step, CpanInstallStep) else []
            found = [
                f"{step.action} parameter {k}" for k in [*unmodelled_parameters(step), *unhonoured]
            ]
        problem = (
            rpath_problem(step.rpath or DEFAULT_RPATH, deps)
            if isinstance(step, SetRpathStep)
            else None
        )
        if problem:  # install refuses it (curl's {libs_dir}/openssl-.../lib is absolute)
            kind = "an absolute" if problem.startswith("an absolute") else "a refused"
            found.append(f"{step.action} with {kind} rpath")
        out += [what for what in found if what not in out]
    source = recipe.version.source if recipe.version is not None else None
    if source not in SUPPORTED_VERSION_SOURCES:
        out.append(f"version source {source}")
    return out


def declared_build_dependencies(
    recipe: Recipe, builds: Sequence[ConfigureMakeStep | CMakeBuildStep]
) -> tuple[str, ...]:
    """tsuku's install-time dependencies of a build by ``builds`` (the recipe's build
    steps for a platform, or all of them): ``metadata.dependencies``,
    ``metadata.extra_dependencies`` and the steps' own ``dependencies``, in that order,
    each once, less the build image's toolchain. What is installed first, and the only
    recipes whose directory a ``set_rpath`` part may name."""
    meta = recipe.metadata
    named = [*(meta.dependencies or ()), *(meta.extra_dependencies or ())]
    for step in builds:
        named += step.dependencies or ()
    return dependency_names(named)


def unknown_keys(recipe: Recipe) -> list[str]:
    """Paths of keys the format does not model (kept in ``extra``, written back as they
    were): reported so a registry's new keys are seen, never fatal when reading."""
    out = [f"metadata.{k}" for k in _set_keys(recipe.metadata.extra)]
    if recipe.version is not None:
        out += [f"version.{k}" for k in _set_keys(recipe.version.extra)]
    for i, step in enumerate(recipe.steps):
        if step.when is not None:
            out += [f"steps[{i}].when.{k}" for k in _set_keys(step.when.extra)]
        if not isinstance(step, GenericStep):
            out += [
                f"steps[{i}].{k}" for k in _set_keys(step.extra) if k not in KNOWN_IGNORED_STEP_KEYS
            ]
    if recipe.verify is not None:
        out += [f"verify.{k}" for k in _set_keys(recipe.verify.extra)]
    out += _set_keys(recipe.extra)
    return out


# Step keys tsuku's registry writes where the action has no use for them (``files``
# beside an action that names none, ``os_mapping`` on a step without ``{os}``): tsuku
# ignores them there, and so do we; they stay in ``extra`` and are written back.
KNOWN_IGNORED_STEP_KEYS = frozenset({"files", "os_mapping"})


def cpan_unhonoured(step: CpanInstallStep) -> list[str]:
    """tsuku's ``cpan_install`` keys install does not honour yet, when set: a
    ``cpanfile`` (its dependencies instead of the distribution) and ``perl_version``
    (the perl it must build with; the build image has Debian's)."""
    return [k for k in ("cpanfile", "perl_version") if getattr(step, k)]


def unmodelled_parameters(step: SupportedStep) -> list[str]:
    """Parameters of ``step`` that install would have to honour but cannot (sorted):
    set (not ``""``), not modelled, and not among the keys tsuku ignores too."""
    return sorted(k for k in _set_keys(step.extra) if k not in KNOWN_IGNORED_STEP_KEYS)


def _set_keys(extra: Mapping[str, Any]) -> list[str]:
    """The unmodelled keys that carry a value. ``""`` is unset, as for modelled keys:
    tsuku's batch generator writes every key it has no value for that way
    (``module = ""``, ``cask = ""``), so such a key is neither news nor a parameter
    install would have to honour. It stays in ``extra`` and is written back."""
    return [k for k, v in extra.items() if v != ""]


def step_summary(step: SupportedStep) -> dict[str, Any]:
    """What ``tools.info`` shows of a step: where it downloads from."""
    if isinstance(step, GitHubArchiveStep | GitHubFileStep):
        return {"action": step.action, "repo": step.repo, "asset_pattern": step.asset_pattern}
    if isinstance(step, DownloadStep | DownloadArchiveStep):
        return {"action": step.action, "url": step.url}
    if isinstance(step, EcosystemStep):
        return {
            "action": step.action,
            step.record.package_key: step.package_name,
            "executables": list(step.executables),
        }
    if isinstance(step, PipExecStep):
        return {
            "action": step.action,
            "package": step.package,
            "executables": list(step.executables),
        }
    if isinstance(step, HomebrewStep):
        return {"action": step.action, "formula": step.formula}
    if isinstance(step, SystemPackagesStep):
        return {"action": step.action, "packages": list(step.packages)}
    if isinstance(step, RequireCommandStep):
        return {"action": step.action, "command": step.command}
    return {"action": step.action}
