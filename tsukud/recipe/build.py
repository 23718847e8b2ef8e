"""Builds from source as the recipe format knows them: what a ``configure_make`` step
may say, and the build it renders to.

Pure. ``install/build.py`` runs a :class:`Build` in the build container; nothing here
runs anything. The checks are tsuku's own (``isValidConfigureArg``: no shell
metacharacters, at most 500 characters; executables are names, not paths), kept
although the words are passed as separate arguments and never through a shell on the
host: a recipe that tsuku would refuse is refused here too.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

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

# What tsuku installs as recipes for its build actions (its ActionDependencies:
# configure_make needs make, zig and pkg-config; cmake_build also cmake). Here the
# build image is the toolchain (gcc, make, cmake, patchelf), so a recipe naming them
# among its dependencies is not asked to install them on the host.
BUILD_TOOLCHAIN = frozenset({"make", "zig", "pkg-config", "cmake", "gcc", "patchelf"})

# A recipe name as a dependency list writes it (``openssl``, ``openssl@3``).
_NAME = r"[A-Za-z0-9][A-Za-z0-9._+@-]*"
# The one absolute spelling tsuku's registry gives an rpath part (curl's):
# ``{libs_dir}/<name>-{deps.<name>.version}/lib``. tsuku fills ``{libs_dir}`` with
# ``$TSUKU_HOME/libs`` and the version with the dependency's, and accepts an absolute
# part only inside that directory: it names a build dependency's library directory.
_DEPENDENCY_PART = re.compile(
    rf"\{{libs_dir\}}/(?P<name>{_NAME})-\{{deps\.(?P<dep>{_NAME})\.version\}}(?P<rest>/.*)?"
)


def dependency_part(part: str) -> tuple[str, str] | None:
    """``(dependency, rest)`` when an rpath part is a build dependency's directory as
    tsuku's registry spells it (``rest``, such as ``/lib``, stays inside it: no
    ``..``, no other placeholder), else ``None``."""
    match = _DEPENDENCY_PART.fullmatch(part)
    if match is None or match["name"] != match["dep"]:
        return None
    rest = match["rest"] or ""
    if "{" in rest or "}" in rest or any(s in (".", "..") for s in rest.split("/")[1:]):
        return None
    return match["name"], rest


def dependency_names(named: Iterable[str]) -> tuple[str, ...]:
    """The recipes among ``named`` that a build installs first, in order, each once:
    all but the build image's toolchain."""
    return tuple(dict.fromkeys(n for n in named if n not in BUILD_TOOLCHAIN))


def rpath_problem(rpath: str, dependencies: Collection[str] = ()) -> str | None:
    """Why ``rpath`` cannot be set here (tsuku's rules), or ``None``. ``dependencies``:
    the recipe's build dependencies, the only ones whose directory a part may name
    (each is installed first, so the part becomes its tool directory: :func:`fill_rpath`);
    any other absolute part is refused, as tsuku refuses one outside its libs."""
    for part in (p.strip() for p in rpath.split(":")):
        if not part:
            continue
        if any(c in part for c in "\n\r\0"):
            return f"an rpath part with a control character: {part!r}"
        if "{libs_dir}" in part or "{deps." in part:
            named = dependency_part(part)
            if named is None:
                return (
                    f"a refused rpath part ({part}): a dependency's directory is "
                    "{libs_dir}/<name>-{deps.<name>.version}/<path inside it>"
                )
            if named[0] not in dependencies:
                return f"a refused rpath part ({part}): {named[0]} is not a build dependency"
            continue
        if part.startswith("/"):
            return f"an absolute rpath part ({part}) is not supported yet"
        if not part.startswith(RPATH_PREFIXES):
            return f"a relative rpath part must start with $ORIGIN: {part}"
    return None


def rpath_dependencies(rpath: str) -> tuple[str, ...]:
    """The build dependencies whose directory ``rpath`` names, in order."""
    named = (dependency_part(p.strip()) for p in rpath.split(":"))
    return tuple(n[0] for n in named if n is not None)


def fill_rpath(rpath: str, dirs: Mapping[str, str]) -> str:
    """``rpath`` with each dependency part (:func:`dependency_part`) made the
    dependency's tool directory in ``dirs`` (name → directory) plus the path inside
    it; the other parts as written. Raises ``KeyError`` naming a dependency ``dirs``
    lacks (the install did not install it: never guessed)."""
    out: list[str] = []
    for part in rpath.split(":"):
        named = dependency_part(part.strip())
        out.append(part if named is None else dirs[named[0]] + named[1])
    return ":".join(out)


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
