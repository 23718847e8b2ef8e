"""Builds from source as the recipe format knows them: what a ``configure_make`` step
may say, and the build it renders to.

Pure. ``install/build.py`` runs a :class:`Build` in the build container; nothing here
runs anything. The checks are tsuku's own (``isValidConfigureArg``: no shell
metacharacters, at most 500 characters; executables are names, not paths), kept
although the words are passed as separate arguments and never through a shell on the
host: a recipe that tsuku would refuse is refused here too.
"""

from __future__ import annotations

import msgspec

# tsuku's configure_make.go ``isValidConfigureArg``.
_SHELL_CHARACTERS = frozenset(";&|`$(){}<>\n\r")
MAX_ARG = 500
# tsuku's default: the default target, then ``install``.
DEFAULT_MAKE_TARGETS = ("", "install")


# What the plan and the build fill in (tsuku checks the words after filling them in).
_PLACEHOLDERS = ("{version}", "{version_tag}", "{os}", "{arch}")


def valid_configure_arg(arg: str) -> bool:
    for placeholder in _PLACEHOLDERS:
        arg = arg.replace(placeholder, "0")
    return 0 < len(arg) <= MAX_ARG and _SHELL_CHARACTERS.isdisjoint(arg)


# tsuku's cmake_build.go ``isValidCMakeArg``: braces and angle brackets are allowed
# (generator expressions are ``$<...>``, but ``$`` is not).
_CMAKE_SHELL_CHARACTERS = frozenset(";&|`$()\n\r")


def valid_cmake_arg(arg: str) -> bool:
    for placeholder in _PLACEHOLDERS:
        arg = arg.replace(placeholder, "0")
    return 0 < len(arg) <= MAX_ARG and _CMAKE_SHELL_CHARACTERS.isdisjoint(arg)


def valid_build_type(value: str) -> bool:
    """A ``CMAKE_BUILD_TYPE`` (``Release``, ``RelWithDebInfo``, ...): a word."""
    return value.isascii() and value.isalnum() and len(value) <= 64


def valid_make_target(target: str) -> bool:
    """A make target (``""`` is the default one): no shell characters, and not an
    option (``-f``/``-C`` would point make at another makefile or directory)."""
    return target == "" or (valid_configure_arg(target) and not target.startswith("-"))


def valid_executable(name: str) -> bool:
    """tsuku's rule: a name in ``bin/``, never a path."""
    return bool(name) and name not in (".", "..") and not any(c in name for c in "/\\")


DEFAULT_RPATH = "$ORIGIN/../lib"
# tsuku's validateRpath: a relative part starts with one of these.
RPATH_PREFIXES = ("$ORIGIN", "@executable_path", "@loader_path", "@rpath")
# tsuku's WorkDir/.install, where its builds install: here the build's output itself.
TSUKU_INSTALL_PREFIX = ".install/"


def rpath_problem(rpath: str) -> str | None:
    """Why ``rpath`` cannot be set here (tsuku's rules; absolute parts name build
    dependencies' library directories, which are not installed yet), or ``None``."""
    for part in (p.strip() for p in rpath.split(":")):
        if not part:
            continue
        if part.startswith("/") or "{libs_dir}" in part:
            return f"an absolute rpath part ({part}) is not supported yet"
        if not part.startswith(RPATH_PREFIXES):
            return f"a relative rpath part must start with $ORIGIN: {part}"
        if any(c in part for c in "\n\r\0"):
            return f"an rpath part with a control character: {part!r}"
    return None


def output_path(binary: str) -> str:
    """A ``set_rpath`` binary's path in the build's output (tsuku names it under
    ``.install/``)."""
    return binary.removeprefix(TSUKU_INSTALL_PREFIX)


class Build(msgspec.Struct, frozen=True, kw_only=True):
    """One build rendered for a version: ``configure_make`` (``args`` are configure's,
    ``make_targets`` make's) or ``cmake_build`` (``args`` are cmake's, ``build_type``
    its ``CMAKE_BUILD_TYPE``); the source directory (relative to the unpacked
    download), ``{version}`` filled in, and the executables the install must put in
    ``bin/``."""

    index: int
    source_dir: str
    kind: str = "configure_make"
    args: tuple[str, ...] = ()
    build_type: str = "Release"
    make_targets: tuple[str, ...] = DEFAULT_MAKE_TARGETS
    executables: tuple[str, ...] = ()
    # (path in the output, rpath) for each binary a set_rpath names, in order.
    rpaths: tuple[tuple[str, str], ...] = ()
