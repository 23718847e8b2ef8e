"""How release asset names spell platforms, and one asset name taken apart.

Every decision about assets (what to hide from the model, which build a platform gets,
whether a rendered name is the right OS) rests on the same reading of a name, so it
lives here once. The vocabulary is the union of what the peers recognise (ubi, aqua's
generator, mise; see the shared peers notes): Go spellings (``linux_amd64``), Rust
triples (``x86_64-unknown-linux-musl``), capitalised goreleaser names (``Darwin_x86_64``)
and the odd ones (``macOS-64bit``, ``x64``, ``macos-intel``).

Tokens only count at word boundaries (start/end of the name or a non-alphanumeric
character), so ``mac`` inside ``macchina`` or ``arm`` inside ``arm64`` never match, and
digit-led tokens (``386``, ``64bit``) never match right after a ``.``, where they would
be part of a version number (``tool_v1.3.386``).
"""

from __future__ import annotations

import re
from typing import Literal

import msgspec

from tsukud.recipe import ArchiveFormat, UnsupportedFeature, detect_format

Libc = Literal["musl", "gnu", "static"]

# Architectures tsuku builds recipes for, plus "universal" (fat macOS builds).
TARGET_OSES = ("linux", "darwin")
TARGET_ARCHES = ("amd64", "arm64")
UNIVERSAL = "universal"

_B = r"(?<![A-Za-z0-9])"  # left word boundary
_E = r"(?![A-Za-z0-9])"  # right word boundary

# Longer spellings first: alternation takes the first alternative that matches here.
_OS_ALTERNATIVES: tuple[tuple[str, str], ...] = (
    (r"unknown[-_]linux[-_](?:musl|gnu)(?:eabihf|eabi|abi64|x32|spe)?", "linux"),
    (r"unknown[-_]linux", "linux"),
    (r"linux[-_](?:musl|gnu)", "linux"),
    (r"linux(?:64|32)", "linux"),
    (r"linux", "linux"),
    (r"apple[-_]darwin", "darwin"),
    (r"(?:darwin|macosx?|osx|mac)(?:64|32)", "darwin"),
    (r"darwin", "darwin"),
    (r"macosx?", "darwin"),
    (r"osx", "darwin"),
    (r"mac", "darwin"),
    (r"pc[-_]windows[-_](?:msvc|gnu(?:llvm)?)", "windows"),
    (r"windows", "windows"),
    (r"win(?:64|32)?", "windows"),
    (r"mingw(?:32|64)?", "windows"),
    (r"freebsd|netbsd|openbsd|dragonfly(?:bsd)?|illumos|solaris|sunos|android|aix|plan9", "other"),
)

_ARCH_ALTERNATIVES: tuple[tuple[str, str], ...] = (
    (r"x86[-_]64", "amd64"),
    (r"amd64", "amd64"),
    (r"x64", "amd64"),
    (r"(?<!\.)64[-_]?bit", "amd64"),
    (r"intel", "amd64"),
    (r"aarch[-_]?64", "arm64"),
    (r"arm[-_]?64", "arm64"),
    (r"i[3-6]86", "386"),
    (r"x86[-_]?32", "386"),
    (r"x86", "386"),
    (r"ia32", "386"),
    (r"x32", "386"),
    (r"(?<!\.)386", "386"),
    (r"(?<!\.)32[-_]?bit", "386"),
    (r"armv[5-7][a-z0-9]*", "arm"),
    (r"armhf|armel|arm", "arm"),
    (r"s390x", "s390x"),
    (r"ppc64le|powerpc64le|ppc64|powerpc64|ppc|powerpc", "ppc64"),
    (r"riscv64(?:gc)?|riscv", "riscv64"),
    (r"mips64(?:el|le)?|mips(?:el|le)?", "mips"),
    (r"loong(?:arch)?64", "loong64"),
    (r"sparc64|sparc", "sparc"),
    (r"universal2?|all", UNIVERSAL),
)

_LIBC = re.compile(_B + r"(musl|gnu|glibc|static)(?![A-Za-z])", re.IGNORECASE)


def _alternation(alternatives: tuple[tuple[str, str], ...]) -> re.Pattern[str]:
    body = "|".join(f"(?P<g{i}>{regex})" for i, (regex, _) in enumerate(alternatives))
    return re.compile(f"{_B}(?:{body}){_E}", re.IGNORECASE)


_OS_RE = _alternation(_OS_ALTERNATIVES)
_ARCH_RE = _alternation(_ARCH_ALTERNATIVES)


class Token(msgspec.Struct, frozen=True):
    """One platform word in a name: what it means, how it is spelled, where it is."""

    meaning: str
    raw: str
    start: int
    end: int


def _tokens(
    pattern: re.Pattern[str], alternatives: tuple[tuple[str, str], ...], text: str
) -> list[Token]:
    found = []
    for match in pattern.finditer(text):
        group = match.lastgroup or ""
        meaning = alternatives[int(group[1:])][1]
        found.append(Token(meaning, match.group(), match.start(), match.end()))
    return found


def os_tokens(text: str) -> list[Token]:
    return _tokens(_OS_RE, _OS_ALTERNATIVES, text)


def arch_tokens(text: str) -> list[Token]:
    return _tokens(_ARCH_RE, _ARCH_ALTERNATIVES, text)


def libc_of(text: str) -> Libc | None:
    """musl (or static) beats gnu when a name somehow says both."""
    found = {m.group(1).lower() for m in _LIBC.finditer(text)}
    if "musl" in found:
        return "musl"
    if "static" in found:
        return "static"
    if found & {"gnu", "glibc"}:
        return "gnu"
    return None


def version_spans(name: str, version: str) -> list[tuple[int, int]]:
    """Where ``version`` occurs in ``name`` as a whole version: ``1.2`` does not match
    inside ``1.2.3`` or ``11.2``."""
    if not version:
        return []
    regex = re.compile(r"(?<![0-9])(?<![0-9]\.)" + re.escape(version) + r"(?![0-9]|\.[0-9])")
    return [(m.start(), m.end()) for m in regex.finditer(name)]


def file_format(name: str) -> ArchiveFormat | None:
    """The recipe renderer's reading of a name; ``None`` for formats it cannot unpack."""
    try:
        return detect_format(name)
    except UnsupportedFeature:
        return None


class ParsedAsset(msgspec.Struct, frozen=True, kw_only=True):
    """An asset name with its version, OS and arch replaced by placeholders.

    ``template`` holds ``{version}``, ``{os}`` and ``{arch}`` exactly where the
    respective words were, so ``expand(template, version, os_raw, arch_raw)`` gives the
    name back, and the same template at another release's version gives that release's
    name for the same build.
    """

    name: str
    template: str
    os: str | None = None
    os_raw: str | None = None
    arch: str | None = None
    arch_raw: str | None = None
    libc: Libc | None = None
    format: ArchiveFormat | None = None
    has_version: bool = False


def _pick_arch(tokens: list[Token], os_token: Token | None) -> Token | None:
    """The last real architecture word; ``universal``/``all`` only on macOS names and
    only when no real architecture is named."""
    usable = [
        t for t in tokens if os_token is None or t.end <= os_token.start or t.start >= os_token.end
    ]
    real = [t for t in usable if t.meaning != UNIVERSAL]
    if real:
        return real[-1]
    if os_token is not None and os_token.meaning == "darwin":
        universal = [t for t in usable if t.meaning == UNIVERSAL]
        if universal:
            return universal[-1]
    return None


def parse_asset(name: str, version: str) -> ParsedAsset:
    """Take ``name`` apart, given the version of the release it belongs to.

    The version is masked before looking for platform words, so digits in a version
    (``1.3.386``) are never read as an architecture. The *last* OS word wins because
    tool names come first (``osx-cross-linux-amd64`` is a Linux build).
    """
    spans = version_spans(name, version)
    masked = list(name)
    for start, end in spans:
        masked[start:end] = ["\x00"] * (end - start)
    text = "".join(masked)
    oses = os_tokens(text)
    os_token = oses[-1] if oses else None
    arch_token = _pick_arch(arch_tokens(text), os_token)
    arch = arch_token.meaning if arch_token else None
    if arch_token is None and os_token is not None and os_token.raw[-2:] in ("64", "32"):
        # ``linux64``, ``mac64``, ``win32``: the OS word carries the word size.
        arch = "amd64" if os_token.raw.endswith("64") else "386"
    if arch == "arm" and os_token is not None and os_token.meaning == "darwin":
        # No Mac has a 32-bit ARM CPU: ``macos-arm`` is Apple silicon.
        arch = "arm64"
    pieces: list[tuple[int, int, str]] = [(s, e, "{version}") for s, e in spans]
    if os_token is not None:
        pieces.append((os_token.start, os_token.end, "{os}"))
    if arch_token is not None:
        pieces.append((arch_token.start, arch_token.end, "{arch}"))
    template, cursor = [], 0
    for start, end, placeholder in sorted(pieces):
        template.append(name[cursor:start])
        template.append(placeholder)
        cursor = end
    template.append(name[cursor:])
    return ParsedAsset(
        name=name,
        template="".join(template),
        os=os_token.meaning if os_token else None,
        os_raw=os_token.raw if os_token else None,
        arch=arch,
        arch_raw=arch_token.raw if arch_token else None,
        libc=libc_of(name) if os_token is not None and os_token.meaning == "linux" else None,
        format=file_format(name),
        has_version=bool(spans),
    )
