"""Read and write recipe TOML.

Reading validates every modelled field and reports the first problem as
``<source>: <field path>: expected <what>, got <value>``, because recipes are written by
people and by LLMs and both need to be told exactly what to fix. Writing emits the same
layout as tsuku's registry (``[metadata]``, ``[version]``, ``[[steps]]`` with inline
tables, ``[verify]``), so ``parse(dump(r)) == r`` for every recipe; comments and key
order inside unmodelled tables are the only things lost.
"""

from __future__ import annotations

import datetime as dt
import json
import posixpath
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

import msgspec
import tomli_w

from tsukud.recipe.build import (
    valid_build_type,
    valid_cmake_arg,
    valid_configure_arg,
    valid_executable,
    valid_make_target,
)
from tsukud.recipe.model import (
    ARCHIVE_FORMAT_ALIASES,
    INSTALL_MODES,
    Binary,
    ChmodStep,
    CMakeBuildStep,
    ConfigureMakeStep,
    CpanInstallStep,
    DownloadArchiveStep,
    DownloadStep,
    EcosystemStep,
    ExtractStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    InstallBinariesStep,
    InstallLibrariesStep,
    InstallShellInitStep,
    LinkDependenciesStep,
    Metadata,
    PipExecStep,
    Recipe,
    RecipeParseError,
    RequireCommandStep,
    RunCommandStep,
    SetEnvStep,
    SetRpathStep,
    SetupBuildEnvStep,
    Step,
    SystemPackagesStep,
    Verify,
    VerifyAdditional,
    VersionSection,
    When,
    normalize_fingerprint,
    ranged,
)
from tsukud.recipe.platform import LIBCS
from tsukud.recipe.system import SYSTEM_MANAGERS, valid_command, valid_package
from tsukud.recipe.version_range import parse_range
from tsukud.registries.ecosystems import BY_ACTION, ECOSYSTEMS

# Keys every step may carry that are not action parameters (the reference's list).
RESERVED_STEP_KEYS = ("action", "note", "description", "phase", "when", "dependencies")

_SHA256 = re.compile(r"[0-9a-f]{64}")
_HEX = re.compile(r"[0-9A-Fa-f]{32,128}")
_FINGERPRINT = re.compile(r"[0-9A-F]{40}|[0-9A-F]{64}")
_REPO = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


class _Bad(Exception):
    """A field problem, raised deep in the converters and given its source at the top."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
        return text if len(text) <= 60 else text[:57] + '…"'
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return f"a date/time ({value.isoformat()})"
    return type(value).__name__


def _expected(path: str, what: str, value: Any) -> NoReturn:
    raise _Bad(path, f"expected {what}, got {_describe(value)}")


# ------------------------------------------------------------------------ converters

Conv = Callable[[Any, str], Any]


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        _expected(path, "a string", value)
    return value


def _version_range(value: Any, path: str) -> str:
    text = _str(value, path)
    try:
        parse_range(text)
    except ValueError as exc:
        _expected(path, f'a version range such as ">=1.2.0" ({exc})', value)
    return text


def _nonempty(value: Any, path: str) -> str:
    text = _str(value, path)
    if not text.strip():
        _expected(path, "a non-empty string", value)
    return text


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        _expected(path, "an integer", value)
    return value


def _count(value: Any, path: str) -> int:
    number = _int(value, path)
    if number < 0:
        _expected(path, "a non-negative integer", value)
    return number


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        _expected(path, "true or false", value)
    return value


def _str_list(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        _expected(path, "an array of strings", value)
    return tuple(_str(item, f"{path}[{i}]") for i, item in enumerate(value))


def _str_or_list(value: Any, path: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list):
        _expected(path, "a string or an array of strings", value)
    return _str_list(value, path)


def _table(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        _expected(path, "a table", value)
    return value


def _str_map(value: Any, path: str) -> dict[str, str]:
    table = _table(value, path)
    return {key: _str(item, f"{path}.{key}") for key, item in table.items()}


def _name_map(value: Any, path: str) -> dict[str, str]:
    """os/arch mappings: their values end up in asset names and so in URLs."""
    mapping = _str_map(value, path)
    for key, item in mapping.items():
        if "/" in item or "\\" in item:
            _expected(f"{path}.{key}", "a name without '/' or '\\'", item)
    return mapping


def _str_list_map(value: Any, path: str) -> dict[str, tuple[str, ...]]:
    table = _table(value, path)
    return {key: _str_list(item, f"{path}.{key}") for key, item in table.items()}


def _sha256_map(value: Any, path: str) -> dict[str, str]:
    mapping = _str_map(value, path)
    for key, digest in mapping.items():
        if not _SHA256.fullmatch(digest):
            _expected(f"{path}.{key}", "a lowercase hex sha256 (64 characters)", digest)
    return mapping


def _timestamp(value: Any, path: str) -> str:
    """RFC 3339 text; a bare TOML datetime is accepted and kept as text."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return _nonempty(value, path)


def _repo(value: Any, path: str) -> str:
    """GitHub's own character rules, so a name that could change the API URL it goes
    into (``?``, ``#``, ``@``, ``..``) is the recipe's error, not GitHub's."""
    text = _str(value, path)
    if not _REPO.fullmatch(text) or ".." in text:
        _expected(path, '"owner/repo"', value)
    return text


def _asset_pattern(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if "/" in text or "\\" in text:
        _expected(path, "an asset file name (no '/' or '\\')", value)
    return text


def _rel_path(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if text.startswith("/") or ".." in text.replace("\\", "/").split("/"):
        _expected(path, "a relative path without '..'", value)
    return text


def _file_path(value: Any, path: str) -> str:
    """A binary's source or destination names a file: not ``.``, not ``dir/``."""
    text = _rel_path(value, path)
    if posixpath.normpath(text.replace("\\", "/")) == "." or text.endswith(("/", "\\")):
        _expected(path, "the relative path of a file", value)
    return text


def _libc_list(value: Any, path: str) -> tuple[str, ...]:
    values = _str_or_list(value, path)
    for i, item in enumerate(values):
        if item not in LIBCS:
            _expected(f"{path}[{i}]", " or ".join(f'"{c}"' for c in LIBCS), item)
    return values


def _platform_list(value: Any, path: str) -> tuple[str, ...]:
    """``os/arch`` entries, or ``os/arch/libc`` for one libc's builds only."""
    values = _str_or_list(value, path)
    for i, item in enumerate(values):
        parts = item.split("/")
        libc_ok = len(parts) == 2 or (len(parts) == 3 and parts[2] in LIBCS)
        if not libc_ok or not all(parts):
            _expected(f"{path}[{i}]", 'an "os/arch" pair (or "os/arch/libc")', item)
    return values


def _hex(value: Any, path: str) -> str:
    text = _str(value, path)
    if not _HEX.fullmatch(text):
        _expected(path, "a hex digest", value)
    return text.lower()


def _checksum(value: Any, path: str) -> str:
    """A hex digest, bare or as ``sha256:<hex>`` (kept as written, lower-cased)."""
    text = _str(value, path)
    algo, colon, digest = text.partition(":")
    if colon and algo.lower() != "sha256":
        _expected(path, "a hex digest or sha256:<hex>", value)
    return f"sha256:{_hex(digest, path)}" if colon else _hex(text, path)


def _fingerprint(value: Any, path: str) -> str:
    text = _str(value, path)
    if not _FINGERPRINT.fullmatch(normalize_fingerprint(text)):
        _expected(path, "a full OpenPGP key fingerprint (40 or 64 hex digits)", value)
    return text


def _url(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if not text.startswith(("https://", "http://")):
        _expected(path, "an https:// URL", value)
    return text


def _url_list(value: Any, path: str) -> tuple[str, ...]:
    return tuple(_url(item, f"{path}[{i}]") for i, item in enumerate(_str_list(value, path)))


def _archive_format(value: Any, path: str) -> str:
    text = _str(value, path)
    if text.lower() not in ARCHIVE_FORMAT_ALIASES:
        _expected(path, "one of " + ", ".join(ARCHIVE_FORMAT_ALIASES), value)
    return text


def _install_mode(value: Any, path: str) -> str:
    text = _str(value, path)
    if text.lower() not in INSTALL_MODES:
        _expected(path, "one of " + ", ".join(INSTALL_MODES), value)
    return text


def _binary(value: Any, path: str) -> Binary:
    if isinstance(value, str):
        return Binary(_file_path(value, path))
    if not isinstance(value, dict):
        _expected(path, 'a path or a {src = "...", dest = "..."} table', value)
    for key in value:
        if key not in ("src", "dest"):
            raise _Bad(f"{path}.{key}", "unexpected key (a binary table has src and dest)")
    for key in ("src", "dest"):
        if key not in value:
            raise _Bad(f"{path}.{key}", "required")
    return Binary(
        _file_path(value["src"], f"{path}.src"), _file_path(value["dest"], f"{path}.dest")
    )


def _binaries(value: Any, path: str) -> tuple[Binary, ...]:
    if not isinstance(value, list) or not value:
        _expected(path, "a non-empty array of paths or {src, dest} tables", value)
    return tuple(_binary(item, f"{path}[{i}]") for i, item in enumerate(value))


def _outputs(value: Any, path: str) -> tuple[Binary, ...]:
    """tsuku's ``outputs``: paths (``"bin/tmux"``) or ``{src, dest}`` tables
    (``{ src = "cacert.pem", dest = "share/ca-certificates/cacert.pem" }``), as in
    ``binaries``."""
    if not isinstance(value, list) or not value:
        _expected(path, "a non-empty array of paths or {src, dest} tables", value)
    return tuple(_binary(item, f"{path}[{i}]") for i, item in enumerate(value))


def commands_of_outputs(outputs: tuple[Binary, ...]) -> tuple[Binary, ...]:
    """tsuku infers which outputs are commands from where they land: under ``bin/``."""
    return tuple(o for o in outputs if (o.dest or o.src).replace("\\", "/").startswith("bin/"))


def _binaries_or_outputs(known: dict[str, Any], table: Mapping[str, Any], path: str) -> None:
    """``install_binaries`` names its files as ``binaries`` or (tsuku's newer spelling)
    ``outputs``, or none in directory mode (the whole tree, libcap's bottle), as tsuku
    reads it. A ``download_archive`` without binaries only downloads and unpacks: a
    later ``install_binaries`` takes the tree (cuda-runtime)."""
    action = table.get("action")
    if action == InstallBinariesStep.ACTION and "binaries" not in known:
        if "outputs" in known:
            known["binaries"] = commands_of_outputs(known["outputs"])
        elif (known.get("install_mode") or "").lower() != "directory":
            raise _Bad(f"{path}.binaries", 'required (or outputs, or install_mode = "directory")')


def _split(
    table: Mapping[str, Any], path: str, spec: Mapping[str, Conv]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Convert the keys ``spec`` knows; return the rest untouched for ``extra``.

    ``""`` where a key needs a non-empty value means unset, as in tsuku (Go's zero
    value): its batch-generated recipes spell every unset key that way
    (``github_repo = ""``, ``formula = ""``). Where ``""`` is a value (a description),
    it is kept, so a recipe still reads back exactly as written.
    """
    known: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in table.items():
        conv = spec.get(key)
        if conv is None:
            extra[key] = value
            continue
        try:
            known[key] = conv(value, f"{path}.{key}")
        except _Bad:
            if value != "":
                raise
    return known, extra


def _require(table: Mapping[str, Any], path: str, *keys: str) -> None:
    for key in keys:
        if key not in table:
            raise _Bad(f"{path}.{key}", "required")


def _exact_table(value: Any, path: str, keys: tuple[str, ...], why: str) -> dict[str, Any]:
    """A table with exactly ``keys``: one missing or another one is refused."""
    table = _table(value, path)
    _require(table, path, *keys)
    unknown = sorted(set(table) - set(keys))
    if unknown:
        raise _Bad(f"{path}.{unknown[0]}", why)
    return table


# ---------------------------------------------------------------------------- specs

_METADATA: dict[str, Conv] = {
    "name": _nonempty,
    "description": _str,
    "homepage": _str,
    "version_format": _str,
    "type": _str,
    "tier": _int,
    "curated": _bool,
    "requires_sudo": _bool,
    "binaries": _str_list,
    "dependencies": _str_list,
    "runtime_dependencies": _str_list,
    "extra_dependencies": _str_list,
    "supported_os": _str_list,
    "supported_arch": _str_list,
    "supported_libc": _libc_list,
    "unsupported_platforms": _platform_list,
    "unsupported_reason": _str,
    "satisfies": _str_list_map,
    "llm_validation": _str,
    "generated_by": _str,
    "validated_at": _timestamp,
    "validation_platform": _str,
    "validation_image": _str,
    "validated_version": _str,
    "asset_sha256": _sha256_map,
}
_VERSION: dict[str, Conv] = {
    "source": _nonempty,
    "github_repo": _repo,
    "tag_prefix": _str,
    "url": _url,
    "version_path": _nonempty,
    "stable_qualifiers": _str_list,
    "formula": _str,
    "cask": _str,
    "module": _str,
}
_WHEN: dict[str, Conv] = {
    "platform": _platform_list,
    "os": _str_or_list,
    "arch": _str_or_list,
    "linux_family": _str,
    "package_manager": _str,
    "libc": _libc_list,
    "gpu": _str_or_list,
    "version": _version_range,
}
_STEP_COMMON: dict[str, Conv] = {
    "note": _str,
    "description": _str,
    "phase": _str,
    "dependencies": _str_list,
}
_GITHUB_ARCHIVE: dict[str, Conv] = {
    "repo": _repo,
    "asset_pattern": _asset_pattern,
    "archive_format": _archive_format,
    "strip_dirs": _count,
    "install_mode": _install_mode,
    "binaries": _binaries,
    "os_mapping": _name_map,
    "arch_mapping": _name_map,
    "checksum_asset": _asset_pattern,
    "checksum_url": _nonempty,
}
_GITHUB_FILE: dict[str, Conv] = {
    "repo": _repo,
    "asset_pattern": _asset_pattern,
    "binary": _file_path,
    "binaries": _binaries,
    "os_mapping": _name_map,
    "arch_mapping": _name_map,
}
_DOWNLOAD: dict[str, Conv] = {
    "url": _url,
    "dest": _file_path,
    "checksum": _checksum,
    "checksum_algo": _nonempty,
    "checksum_url": _url,
    "signature_url": _url,
    "signature_key_url": _url,
    "signature_key_fingerprint": _fingerprint,
    "fallback_urls": _url_list,
    "skip_verification_reason": _nonempty,
    "os_mapping": _name_map,
    "arch_mapping": _name_map,
}
_DOWNLOAD_ARCHIVE: dict[str, Conv] = {
    "url": _url,
    "archive_format": _archive_format,
    "strip_dirs": _count,
    "binaries": _binaries,
    "install_mode": _install_mode,
    "checksum_url": _url,
    "fallback_urls": _url_list,
    "os_mapping": _name_map,
    "arch_mapping": _name_map,
}
_EXTRACT: dict[str, Conv] = {
    "archive": _file_path,
    "format": _archive_format,
    "strip_dirs": _count,
    "os_mapping": _name_map,
    "arch_mapping": _name_map,
}
_CHMOD: dict[str, Conv] = {"files": _str_list}
_INSTALL_BINARIES: dict[str, Conv] = {
    "binaries": _binaries,
    "install_mode": _install_mode,
    "outputs": _outputs,
}
_RUN_COMMAND: dict[str, Conv] = {"command": _nonempty}


def _packages(value: Any, path: str) -> tuple[str, ...]:
    """System package names: each becomes an argument of a command run as root."""
    names = _str_list(value, path)
    if not names:
        raise _Bad(path, "at least one package is required")
    for i, name in enumerate(names):
        if not valid_package(name):
            _expected(f"{path}[{i}]", "a package name (letters, digits, .+_:@~=-)", name)
    return names


def _command_name(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if not valid_command(text):
        _expected(path, "a command name (no path, no option, no shell characters)", value)
    return text


# ``require_command`` runs ``command version_flag`` on the host while checking, before
# anything is approved: a free-form flag would let a recipe run code through any
# interpreter on PATH (``python3 -mensurepip``, ``python3 "-cimport os; ..."``). So the
# flag is one of the spellings programs use for "print your version".
VERSION_FLAGS = ("--version", "-version", "-V", "-v", "version", "--Version", "-Version")


def _version_flag(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if text not in VERSION_FLAGS:
        raise _Bad(
            path,
            f"one of {', '.join(VERSION_FLAGS)}, not {text!r}: the check runs the command "
            "on this machine before anything is approved",
        )
    return text


def _regex(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    try:
        compiled = re.compile(text)
    except re.error as exc:
        raise _Bad(path, f"a regular expression ({exc})") from None
    if compiled.groups < 1:
        _expected(path, "a regular expression with a group (the version)", value)
    return text


_SYSTEM_PACKAGES: dict[str, Conv] = {
    "packages": _packages,
    "fallback": _str,
    "unless_command": _command_name,
}
_REQUIRE_COMMAND: dict[str, Conv] = {
    "command": _command_name,
    "version_flag": _version_flag,
    "version_regex": _regex,
    "min_version": _nonempty,
}
_HOMEBREW: dict[str, Conv] = {"formula": _nonempty}


def _words(valid: Callable[[str], bool], what: str) -> Conv:
    """A list of words a build passes on (configure arguments, make targets)."""

    def conv(value: Any, path: str) -> tuple[str, ...]:
        words = _str_list(value, path)
        for i, word in enumerate(words):
            if not valid(word):
                _expected(f"{path}[{i}]", what, word)
        return words

    return conv


def _build_executables(value: Any, path: str) -> tuple[str, ...]:
    names = _str_list(value, path)
    for i, name in enumerate(names):
        if not valid_executable(name):
            _expected(f"{path}[{i}]", "an executable name in bin/ (no path separators)", name)
    return names


_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _env_name(name: Any, path: str) -> str:
    text = _str(name, path)
    if not _ENV_NAME.fullmatch(text):
        _expected(path, "an environment variable name (letters, digits, _)", name)
    return text


def _env_vars(value: Any, path: str) -> dict[str, str] | tuple[dict[str, str], ...]:
    """``vars`` as a table (the registry's spelling) or tsuku's list of ``{name,
    value}``, kept in the shape it was written in."""
    if isinstance(value, dict):
        out = {_env_name(k, f"{path}.{k}"): _str(v, f"{path}.{k}") for k, v in value.items()}
    elif isinstance(value, list):
        items = []
        for i, item in enumerate(value):
            where = f"{path}[{i}]"
            table = _exact_table(item, where, ("name", "value"), "unknown key (name and value)")
            name = _env_name(table["name"], f"{where}.name")
            items.append({"name": name, "value": _str(table["value"], f"{where}.value")})
        return tuple(items)
    else:
        _expected(path, "a table of variables (or a list of {name, value})", value)
    if not out:
        raise _Bad(path, "at least one variable is required")
    return out


def _rel_paths(value: Any, path: str) -> tuple[str, ...]:
    names = _str_list(value, path)
    if not names:
        raise _Bad(path, "at least one path is required")
    return tuple(_file_path(name, f"{path}[{i}]") for i, name in enumerate(names))


_SET_RPATH: dict[str, Conv] = {
    "binaries": _rel_paths,
    "rpath": _str,
    "create_wrapper": _bool,
}
_CONFIGURE_MAKE: dict[str, Conv] = {
    "source_dir": _rel_path,
    "configure_args": _words(
        valid_configure_arg, "a configure argument (no shell characters, at most 500)"
    ),
    "make_targets": _words(valid_make_target, "a make target (no shell characters, no option)"),
    "executables": _build_executables,
}


def _build_type(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if not valid_build_type(text):
        _expected(path, "a CMake build type (a word: Release, Debug, RelWithDebInfo)", value)
    return text


_CMAKE_BUILD: dict[str, Conv] = {
    "source_dir": _rel_path,
    "cmake_args": _words(valid_cmake_arg, "a cmake argument (no shell characters, at most 500)"),
    "build_type": _build_type,
    "executables": _build_executables,
}


# action -> (step type, parameter spec, required parameters)
def _library_patterns(value: Any, path: str) -> tuple[str, ...]:
    """tsuku's ``install_libraries`` checks: at least one pattern, each relative and
    without ``..`` anywhere in it."""
    patterns = _str_list(value, path)
    if not patterns:
        raise _Bad(path, "at least one pattern is required")
    for i, pattern in enumerate(patterns):
        if not pattern or pattern.startswith(("/", "\\")) or ".." in pattern:
            _expected(f"{path}[{i}]", "a relative glob without '..' (lib/*.so*)", pattern)
    return patterns


def _library_name(value: Any, path: str) -> str:
    """A recipe's name (tsuku's validateLibraryName: no ``..``, no path separator)."""
    text = _nonempty(value, path)
    if ".." in text or "/" in text or "\\" in text:
        _expected(path, "a library's recipe name (no '/' or '..')", value)
    return text


def _library_version(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if ".." in text or "/" in text or "\\" in text:
        _expected(path, "a version (no '/' or '..')", value)
    return text


# tsuku's shellDTargetPattern: the first "@" of a fragment's name is the version's.
_SHELL_D_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9._-]*")
SHELL_INIT_SHELLS = ("bash", "zsh")


def _shell_d_target(value: Any, path: str) -> str:
    text = _nonempty(value, path)
    if not _SHELL_D_TARGET.fullmatch(text):
        _expected(path, "a name ([A-Za-z_][A-Za-z0-9._-]*)", value)
    return text


def _init_shells(value: Any, path: str) -> tuple[str, ...]:
    shells = _str_list(value, path)
    for i, shell in enumerate(shells):
        if shell not in SHELL_INIT_SHELLS:
            # tsuku: fragments load from a POSIX file fish cannot read.
            _expected(f"{path}[{i}]", "bash or zsh (fish cannot read the start-up file)", shell)
    return shells or SHELL_INIT_SHELLS


_SHELL_INIT: dict[str, Conv] = {
    "target": _shell_d_target,
    "source_file": _file_path,
    "source_command": _nonempty,
    "shells": _init_shells,
}


_URL_ACTIONS: dict[str, tuple[type[Any], dict[str, Conv], tuple[str, ...]]] = {
    "download": (DownloadStep, _DOWNLOAD, ("url",)),
    "download_file": (DownloadStep, _DOWNLOAD, ("url",)),
    "download_archive": (DownloadArchiveStep, _DOWNLOAD_ARCHIVE, ("url",)),
    "extract": (ExtractStep, _EXTRACT, ("archive",)),
    "chmod": (ChmodStep, _CHMOD, ("files",)),
    "install_binaries": (InstallBinariesStep, _INSTALL_BINARIES, ()),
    "run_command": (RunCommandStep, _RUN_COMMAND, ("command",)),
    "homebrew": (HomebrewStep, _HOMEBREW, ("formula",)),
    "configure_make": (ConfigureMakeStep, _CONFIGURE_MAKE, ("source_dir",)),
    "cmake_build": (CMakeBuildStep, _CMAKE_BUILD, ("source_dir",)),
    "setup_build_env": (SetupBuildEnvStep, {}, ()),
    "set_env": (SetEnvStep, {"vars": _env_vars}, ("vars",)),
    "set_rpath": (SetRpathStep, _SET_RPATH, ("binaries",)),
    "install_libraries": (InstallLibrariesStep, {"patterns": _library_patterns}, ("patterns",)),
    "install_shell_init": (InstallShellInitStep, _SHELL_INIT, ("target",)),
    "link_dependencies": (
        LinkDependenciesStep,
        {"library": _library_name, "version": _library_version},
        ("library",),
    ),
}
_SIGNATURE_KEYS = ("signature_url", "signature_key_url", "signature_key_fingerprint")


def _package(valid: Callable[[str], bool], what: str) -> Conv:
    """A registry's package name: it becomes an argument of that registry's client, so
    a URL, path or VCS spec (``git+https://…``, ``../x``, ``-flag``) is refused here."""

    def conv(value: Any, path: str) -> str:
        text = _nonempty(value, path)
        if not valid(text):
            _expected(path, what, value)
        return text

    return conv


def _executables(value: Any, path: str) -> tuple[str, ...]:
    names = _str_list(value, path)  # empty reads (installing says what is missing)
    for i, name in enumerate(names):
        if not name or "/" in name or "\\" in name or name in (".", "..") or name[0] == "-":
            _expected(f"{path}[{i}]", "a command name (no '/')", name)
    return names


# action -> the key naming its package, and that key's converter
_ECOSYSTEM: dict[str, Conv] = {
    e.action: _package(e.valid_name, e.step_name_kind or e.name_kind) for e in ECOSYSTEMS
}
# pip_exec names its package as the ecosystem whose primitive it is does.
_PIP_RECORD = next(e for e in ECOSYSTEMS if e.plan_action == PipExecStep.ACTION)
_PIP_EXEC: dict[str, Conv] = {
    "package": _package(_PIP_RECORD.valid_name, _PIP_RECORD.name_kind),
    "version": _nonempty,
    "executables": _executables,
    "locked_requirements": _nonempty,
    "python_version": _nonempty,
    "has_native_addons": _bool,
}
# tsuku's isValidDistribution and isValidModuleName: the names become cpanm's
# arguments, so nothing else is read.
_CPAN_DISTRIBUTION = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,127}")
_CPAN_MODULE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(::[A-Za-z][A-Za-z0-9_]*)*")


def _cpan_name(pattern: re.Pattern[str], what: str) -> Conv:
    def conv(value: Any, path: str) -> str:
        text = _nonempty(value, path)
        if len(text) > 128 or not pattern.fullmatch(text):
            _expected(path, what, value)
        return text

    return conv


_CPAN_INSTALL: dict[str, Conv] = {
    "distribution": _cpan_name(_CPAN_DISTRIBUTION, "a CPAN distribution name (App-Ack)"),
    "module": _cpan_name(_CPAN_MODULE, "a Perl module name (App::Ack)"),
    "executables": _executables,
    "perl_version": _nonempty,
    "cpanfile": _rel_path,
    "mirror": _url,
    "mirror_only": _bool,
    "offline": _bool,
}
# action -> (step type, parameter spec, required parameters): tsuku's package-manager
# primitives written as steps.
_PACKAGE_ACTIONS: dict[str, tuple[type[Any], dict[str, Conv], tuple[str, ...]]] = {
    PipExecStep.ACTION: (PipExecStep, _PIP_EXEC, ("package", "locked_requirements")),
    CpanInstallStep.ACTION: (CpanInstallStep, _CPAN_INSTALL, ("distribution",)),
}
_VERIFY: dict[str, Conv] = {
    "command": _str,
    "pattern": _str,
    "patterns": _str_list,
    "mode": _str,
    "version_format": _str,
    "reason": _str,
    "exit_code": _int,
}


# --------------------------------------------------------------------------- parsing


def _when(value: Any, path: str) -> When:
    known, extra = _split(_table(value, path), path, _WHEN)
    if known.get("platform") and known.get("os"):
        raise _Bad(path, "a when clause cannot have both platform and os")
    return When(**known, extra=extra)


def _step(value: Any, path: str) -> Step:
    table = _table(value, path)
    _require(table, path, "action")
    action = _nonempty(table["action"], f"{path}.action")
    params = {k: v for k, v in table.items() if k not in RESERVED_STEP_KEYS}
    common, _ = _split({k: v for k, v in table.items() if k in _STEP_COMMON}, path, _STEP_COMMON)
    if "when" in table:
        common["when"] = _when(table["when"], f"{path}.when")

    if action == GitHubArchiveStep.ACTION:
        known, extra = _split(params, path, _GITHUB_ARCHIVE)
        _require(known, path, "repo", "asset_pattern", "binaries")
        if "checksum_asset" in known and "checksum_url" in known:
            raise _Bad(path, "checksum_asset and checksum_url are mutually exclusive")
        if "checksum_asset" in known and any(c in known["asset_pattern"] for c in "*?["):
            raise _Bad(f"{path}.checksum_asset", "not allowed when asset_pattern has wildcards")
        return GitHubArchiveStep(**common, **known, extra=extra)

    if action == GitHubFileStep.ACTION:
        known, extra = _split(params, path, _GITHUB_FILE)
        _require(known, path, "repo", "asset_pattern")
        if "binary" not in known:
            if "binaries" not in known:
                raise _Bad(path, "either binary or binaries is required")
            if known["binaries"][0].dest is None:
                _expected(
                    f"{path}.binaries[0]",
                    "a {src, dest} table (github_file saves the download as its src)",
                    table["binaries"][0],
                )
        return GitHubFileStep(**common, **known, extra=extra)

    if action in _URL_ACTIONS:
        step_type, spec, required = _URL_ACTIONS[action]
        known, extra = _split(params, path, spec)
        _require(known, path, *required)
        _binaries_or_outputs(known, table, path)
        if step_type is InstallShellInitStep and ("source_file" in known) == (
            "source_command" in known
        ):
            raise _Bad(path, "exactly one of source_file and source_command is required")
        if step_type is DownloadStep:
            known["action"] = action
            signed = [k for k in _SIGNATURE_KEYS if k in known]
            if signed and len(signed) != len(_SIGNATURE_KEYS):
                raise _Bad(path, f"{', '.join(_SIGNATURE_KEYS)} come together")
        step: Step = step_type(**common, **known, extra=extra)
        return step

    if action in SYSTEM_MANAGERS:
        known, extra = _split(params, path, _SYSTEM_PACKAGES)
        _require(known, path, "packages")
        known["action"] = action
        return SystemPackagesStep(**common, **known, extra=extra)

    if action == RequireCommandStep.ACTION:
        known, extra = _split(params, path, _REQUIRE_COMMAND)
        _require(known, path, "command")
        if "min_version" in known:  # tsuku's preflight: both, to read the version
            _require(known, path, "version_flag", "version_regex")
        return RequireCommandStep(**common, **known, extra=extra)

    if action in BY_ACTION:  # any action an ecosystem's record declares
        key = BY_ACTION[action].package_key
        known, extra = _split(params, path, {key: _ECOSYSTEM[action], "executables": _executables})
        _require(known, path, key)
        package = known.pop(key)
        return EcosystemStep(action=action, package_name=package, **common, **known, extra=extra)

    if action in _PACKAGE_ACTIONS:
        package_type, spec, required = _PACKAGE_ACTIONS[action]
        known, extra = _split(params, path, spec)
        _require(known, path, *required)
        package_step: Step = package_type(**common, **known, extra=extra)
        return package_step

    return GenericStep(action=action, params=params, **common)


def _verify(value: Any, path: str) -> Verify:
    table = _table(value, path)
    known, extra = _split(table, path, _VERIFY)
    if "pattern" in known and "patterns" in known:
        raise _Bad(path, "pattern and patterns are mutually exclusive")
    additional = extra.pop("additional", None)
    if additional is not None:
        apath = f"{path}.additional"
        if not isinstance(additional, list):
            _expected(apath, "an array of tables", additional)
        items = []
        for i, item in enumerate(additional):
            ipath = f"{apath}[{i}]"
            entry = _table(item, ipath)
            _require(entry, ipath, "command")
            known_item, extra_item = _split(entry, ipath, {"command": _str, "pattern": _str})
            items.append(VerifyAdditional(**known_item, extra=extra_item))
        known["additional"] = tuple(items)
    return Verify(**known, extra=extra)


# Older asset namings, read by this project and ignored whole by tsuku (its recipe
# struct has no such key and its TOML decoder drops unknown keys), so tsuku runs only
# the newest naming in [[steps]]. Each override's steps become steps whose
# ``when.version`` is the override's range (model.matching_steps gives them meaning).
OVERRIDES = "version_overrides"
_TOP_LEVEL = ("metadata", "version", "steps", "verify", OVERRIDES)


def _overrides(value: Any) -> tuple[Step, ...]:
    if not isinstance(value, list):
        _expected(OVERRIDES, "an array of tables ([[version_overrides]])", value)
    steps: list[Step] = []
    for i, item in enumerate(value):
        path = f"{OVERRIDES}[{i}]"
        table = _exact_table(
            item, path, ("version", "steps"), "unknown key (an override has version and steps)"
        )
        versions = _version_range(table["version"], f"{path}.version")
        raw = table["steps"]
        if not isinstance(raw, list) or not raw:
            _expected(f"{path}.steps", "a non-empty array of tables", raw)
        for j, entry in enumerate(raw):
            step = _step(entry, f"{path}.steps[{j}]")
            when = step.when or When()
            if when.version is not None:
                raise _Bad(
                    f"{path}.steps[{j}].when.version",
                    "the override's version applies to its steps; a step has none of its own",
                )
            ranged_when = msgspec.structs.replace(when, version=versions)
            steps.append(msgspec.structs.replace(step, when=ranged_when))
    return tuple(steps)


def _recipe(data: Mapping[str, Any]) -> Recipe:
    _require(data, "", "metadata")
    extra = {k: v for k, v in data.items() if k not in _TOP_LEVEL}
    meta_table = _table(data["metadata"], "metadata")
    meta_known, meta_extra = _split(meta_table, "metadata", _METADATA)
    _require(meta_known, "metadata", "name")
    metadata = Metadata(**meta_known, extra=meta_extra)

    version = None
    if "version" in data:
        known, vextra = _split(_table(data["version"], "version"), "version", _VERSION)
        version = VersionSection(**known, extra=vextra)

    steps: tuple[Step, ...] = ()
    if "steps" in data:
        raw_steps = data["steps"]
        if not isinstance(raw_steps, list):
            _expected("steps", "an array of tables ([[steps]])", raw_steps)
        steps = tuple(_step(item, f"steps[{i}]") for i, item in enumerate(raw_steps))
    if OVERRIDES in data:
        steps += _overrides(data[OVERRIDES])

    verify = _verify(data["verify"], "verify") if "verify" in data else None
    return Recipe(metadata=metadata, version=version, steps=steps, verify=verify, extra=extra)


def recipe_from_dict(data: Mapping[str, Any], source: str) -> Recipe:
    """Build a Recipe from TOML-shaped data (what ``tomllib`` returns, or JSON)."""
    try:
        return _recipe(data)
    except _Bad as bad:
        where = f"{bad.path.lstrip('.')}: " if bad.path else ""
        raise RecipeParseError(
            f"{source}: {where}{bad.message}", source=source, field=bad.path.lstrip(".")
        ) from None


def parse_recipe(text: str, source: str = "<recipe>") -> Recipe:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecipeParseError(f"{source}: invalid TOML: {exc}", source=source) from None
    return recipe_from_dict(data, source)


def load_recipe(path: str | Path) -> Recipe:
    source = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecipeParseError(f"{source}: not UTF-8 text: {exc}", source=source) from None
    return parse_recipe(text, source)


# --------------------------------------------------------------------------- writing


def _plain(value: Any) -> Any:
    """Structs and tuples → TOML-shaped dicts and lists; ``None`` fields are dropped
    (absent in TOML) and each Struct's ``extra``/``params`` merge back into it."""
    if isinstance(value, Binary):
        return value.src if value.dest is None else {"src": value.src, "dest": value.dest}
    if isinstance(value, msgspec.Struct):
        out: dict[str, Any] = {}
        spill: dict[str, Any] = {}
        for name in value.__struct_fields__:
            item = getattr(value, name)
            if name in ("extra", "params"):
                spill = item
            elif item is not None:
                out[_toml_key(value, name)] = _plain(item)
        out.update((k, _plain(v)) for k, v in spill.items())
        return out
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _toml_key(value: msgspec.Struct, field: str) -> str:
    """The recipe's key for a Struct's field: its name, but for an ecosystem step's
    package, which the record names (``crate = "ripgrep"``)."""
    if isinstance(value, EcosystemStep) and field == "package_name":
        return value.record.package_key
    return field


def _step_dict(step: Step) -> dict[str, Any]:
    body = _plain(step)
    from_outputs = (
        isinstance(step, InstallBinariesStep)
        and step.outputs is not None
        and step.binaries == commands_of_outputs(step.outputs)
    )
    empty = isinstance(step, DownloadArchiveStep | InstallBinariesStep) and not step.binaries
    if from_outputs or empty:  # read from outputs, or none: not written
        body.pop("binaries", None)
    arch = body.get("when", {}).get("arch")
    if arch is not None and len(arch) == 1:  # the registry's usual spelling
        body["when"]["arch"] = arch[0]
    head = {"action": body.pop("action")}
    for key in ("note", "description", "phase", "when"):
        if key in body:
            head[key] = body.pop(key)
    deps = body.pop("dependencies", None)
    if "executables" in body:  # after the package, as the registry writes it
        body["executables"] = body.pop("executables")
    head.update(body)
    if deps is not None:
        head["dependencies"] = deps
    return head


def recipe_to_dict(recipe: Recipe) -> dict[str, Any]:
    """TOML-shaped data for a Recipe; ``recipe_from_dict`` inverts it."""
    data: dict[str, Any] = {"metadata": _plain(recipe.metadata)}
    if recipe.version is not None:
        data["version"] = _plain(recipe.version)
    main = [step for step in recipe.steps if not ranged(step)]
    if main:
        data["steps"] = [_step_dict(step) for step in main]
    overrides = _override_tables([step for step in recipe.steps if ranged(step)])
    if overrides:
        data[OVERRIDES] = overrides
    if recipe.verify is not None:
        data["verify"] = _plain(recipe.verify)
    data.update((k, _plain(v)) for k, v in recipe.extra.items())
    return data


def _override_tables(steps: list[Step]) -> list[dict[str, Any]]:
    """Ranged steps as ``[[version_overrides]]`` tables, in order: a new table wherever
    the range changes, so reading them back gives the same steps in the same order."""
    tables: list[dict[str, Any]] = []
    for step in steps:
        assert step.when is not None and step.when.version is not None
        versions = step.when.version
        when = msgspec.structs.replace(step.when, version=None)
        body = _step_dict(msgspec.structs.replace(step, when=None if when == When() else when))
        if tables and tables[-1]["version"] == versions:
            tables[-1]["steps"].append(body)
        else:
            tables.append({"version": versions, "steps": [body]})
    return tables


def _key(key: str) -> str:
    return tomli_w.dumps({key: 0}).removesuffix(" = 0\n")


def _inline(value: Any) -> str:
    """One-line TOML for a step value: nested tables stay inline, as in the registry."""
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{_key(k)} = {_inline(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_inline(item) for item in value) + "]"
    return tomli_w.dumps({"v": value}).removeprefix("v = ").removesuffix("\n")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _emit(
    path: str, table: Mapping[str, Any], *, aot: bool = False, flat: bool = False
) -> list[str]:
    """Chunks for one table: its header and ``key = value`` lines, then its sub-tables
    (``[a.b]``, ``[[a.b]]``). ``flat`` keeps every value inline, the registry's style
    for ``[[steps]]``."""
    lines = [f"[[{path}]]" if aot else f"[{path}]"] if path else []
    nested: list[tuple[str, Any]] = []
    for key, value in table.items():
        if not flat and (isinstance(value, Mapping) or _is_table_array(value)):
            nested.append((key, value))
        else:
            lines.append(f"{_key(key)} = {_inline(value)}")
    chunks = ["".join(line + "\n" for line in lines)] if lines else []
    for key, value in nested:
        sub = f"{path}.{_key(key)}" if path else _key(key)
        if isinstance(value, Mapping):
            chunks.extend(_emit(sub, value))
        else:
            for item in value:
                chunks.extend(_emit(sub, item, aot=True))
    return chunks


def dump_recipe(recipe: Recipe) -> str:
    """TOML text in the registry's layout; ``parse_recipe`` of it equals ``recipe``."""
    data = recipe_to_dict(recipe)
    steps = data.pop("steps", [])
    overrides = data.pop(OVERRIDES, [])
    verify = data.pop("verify", None)
    # Root-level literals (unmodelled top-level keys) come out first, before any header.
    chunks = _emit("", data)
    for step in steps:
        chunks.extend(_emit("steps", step, aot=True, flat=True))
    if verify is not None:
        chunks.extend(_emit("verify", verify))
    for override in overrides:
        chunks.extend(_emit(OVERRIDES, {"version": override["version"]}, aot=True))
        for step in override["steps"]:
            chunks.extend(_emit(f"{OVERRIDES}.steps", step, aot=True, flat=True))
    return "\n".join(chunks)
