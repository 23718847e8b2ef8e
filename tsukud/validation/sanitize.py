"""Cleaning validation output before it goes back to a model, and saying what it means.

The output of a failed install or verify run is sent to an LLM provider as repair
feedback, so anything identifying the machine or a person is removed first: home
directories, IP addresses and credentials (whatever :mod:`tsukud.secrets` counts as
one: known secret values, the values of credential-like keys, tokens by their shape).
What remains is cut from the *front*: errors are at the end of an output, and the
reference's head-keeping truncation lost them.

IPv4 rule. A dotted quad with every octet ≤ 255 is an address unless it is written as
a version: glued to a word (a letter, digit, ``_``, ``-``, ``+``, ``~`` or ``.`` right
before it, as in ``v1.2.3.4`` or ``tool-1.2.3.4``), followed by a version suffix
(``-rc1``, ``+build``, ``_x``) or by a further ``.N`` component, or right after the
word ``version``/``ver``/``release``/``tag`` (``version 1.2.3.4``, ``Version: 1.2.3.4``).
Everything else, including quads in a URL host, after ``@``, before ``:port`` or
``/prefix``, or after ``inet``/``addr:``, is redacted. Three-part versions (``1.2.3``)
never look like an address, so they are always kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from tsukud.secrets import redact as redact_secrets

MAX_FEEDBACK = 2000
IP = "[IP]"

_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![\w.+~-]){_OCTET}(?:\.{_OCTET}){{3}}(?![\w+~-]|\.\d)")
_VERSION_WORD = re.compile(r"(?i)\b(?:version|ver|release|tag)\s*[:=]?\s*[\"']?$")
_H = r"[0-9A-Fa-f]{1,4}"
_IPV6 = re.compile(
    rf"(?<![\w:.])(?:(?:{_H}:){{7}}{_H}|(?:{_H}(?::{_H}){{0,6}})?::(?:{_H}(?::{_H}){{0,6}})?)"
    r"(?:%[\w.]+)?(?![\w:])"
)

_HOMES = (
    (re.compile(r"[A-Za-z]:\\Users\\[^\\\s]+"), "%USERPROFILE%"),
    (re.compile(r"[A-Za-z]:/Users/[^/\s]+"), "%USERPROFILE%"),
    (re.compile(r"/home/[^/\s]+"), "$HOME"),
    (re.compile(r"/Users/[^/\s]+"), "$HOME"),
    (re.compile(r"(?<![\w./-])/root(?=/|\b)"), "$HOME"),
)

# --------------------------------------------------------------------------- redaction


def _ipv4(match: re.Match[str]) -> str:
    before = match.string[max(0, match.start() - 24) : match.start()]
    return match.group() if _VERSION_WORD.search(before) else IP


def _ipv6(match: re.Match[str]) -> str:
    """Only forms with a digit: ``Foo::Bar``-like hex words and a bare ``::`` stay."""
    text = match.group()
    return IP if any(c.isdigit() for c in text) else text


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without credentials, home directories and IP addresses."""
    text = redact_secrets(text, secrets)
    for pattern, replacement in _HOMES:
        text = pattern.sub(replacement, text)
    text = _IPV4.sub(_ipv4, text)
    return _IPV6.sub(_ipv6, text)


def truncate_tail(text: str, limit: int = MAX_FEEDBACK) -> str:
    """The last ``limit`` characters (starting at a line when one begins nearby), after
    a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = "[… {} earlier characters truncated …]\n"
    keep = limit - len(marker.format(len(text)))
    tail = text[len(text) - keep :]
    newline = tail.find("\n")
    if 0 <= newline < 200:
        tail = tail[newline + 1 :]
    return marker.format(len(text) - len(tail)) + tail


def sanitize(text: str, *, limit: int = MAX_FEEDBACK, secrets: Iterable[str] = ()) -> str:
    """Redact, then keep the tail: the one function repair feedback goes through."""
    return truncate_tail(redact(text, secrets), limit)


# ------------------------------------------------------------------------ categories

DOWNLOAD_404 = "download_404"
DOWNLOAD_FAILED = "download_failed"
TIMEOUT = "timeout"
EXEC_FORMAT = "exec_format_error"
SHARED_LIBRARY = "missing_shared_library"
PERMISSION = "permission_denied"
BINARY_NOT_FOUND = "binary_not_found"
VERSION_MISMATCH = "version_mismatch"
EXTRACTION = "extraction_failed"
CHECKSUM_MISMATCH = "checksum_mismatch"
UNKNOWN = "unknown"

_I = re.IGNORECASE | re.MULTILINE
# First match wins; specific causes come before the generic messages they also print
# (a missing loader says "No such file or directory" too).
_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        DOWNLOAD_404,
        re.compile(
            r"HTTP[^\n]{0,24}\b404\b|\b404\b[^\n]{0,24}not found|status(?:\s*code)?\s*[:=]?\s*404"
            r"|asset_not_found|no release asset (?:named|matches)",
            _I,
        ),
    ),
    (
        DOWNLOAD_FAILED,
        re.compile(
            r"connection refused|could not resolve host|name or service not known"
            r"|temporary failure in name resolution|tls handshake|certificate verify failed"
            r"|download failed|HTTP[^\n]{0,24}\b5\d\d\b",
            _I,
        ),
    ),
    (TIMEOUT, re.compile(r"\btimed? ?out\b|deadline exceeded", _I)),
    (
        EXEC_FORMAT,
        re.compile(
            r"exec format error|cannot execute binary file|bad CPU type|wrong ELF class"
            r"|Syntax error: [\"'(]?[^\n]{0,20}unexpected",
            _I,
        ),
    ),
    (
        SHARED_LIBRARY,
        re.compile(
            r"error while loading shared libraries|cannot open shared object file"
            r"|GLIBC(?:XX)?_\d|ld-linux[\w.-]*|Error relocating|symbol not found"
            r"|ld-musl|Library not loaded",
            _I,
        ),
    ),
    (PERMISSION, re.compile(r"permission denied|operation not permitted|EACCES", _I)),
    (
        BINARY_NOT_FOUND,
        re.compile(
            r"command not found|executable file not found|:\s*not found\s*$"
            r"|no such file or directory|cannot find\b",
            _I,
        ),
    ),
    (
        VERSION_MISMATCH,
        re.compile(r"pattern mismatch|^\s*Missing:|version mismatch|expected version", _I),
    ),
    (
        EXTRACTION,
        re.compile(
            r"tar:\s.*error|not in gzip format|invalid tar header|unexpected EOF"
            r"|zip:\s.*not a valid|archive.*corrupt|error opening archive",
            _I,
        ),
    ),
)

SUGGESTIONS: dict[str, tuple[str, ...]] = {
    DOWNLOAD_404: (
        "The rendered asset name does not exist in the release: compare it with the "
        "release's asset list character by character.",
        "Check os_mapping/arch_mapping values (Linux vs linux, x86_64 vs amd64) and that "
        "the version is written {version}, with or without a leading v as the names have it.",
    ),
    DOWNLOAD_FAILED: (
        "The download failed for a network reason; this is usually not a recipe problem.",
    ),
    CHECKSUM_MISMATCH: (
        "The file served at the URL does not have the sha256 the recipe's checksum pins: "
        "the checksum is wrong, or the URL names another file (another version, platform "
        "or build). Fix the checksum or the URL; never drop a checksum to make it pass.",
    ),
    TIMEOUT: (
        "The command did not finish: the verify command may wait for input or start a "
        "server. Use a command that prints the version and exits (tool --version).",
    ),
    EXEC_FORMAT: (
        "The installed file is for another CPU architecture or is not an executable: "
        "check arch_mapping (arm64 must not map to an amd64/x86_64 build).",
        "If the asset is an archive, check that binaries points at the executable, not a "
        "script or a data file.",
    ),
    SHARED_LIBRARY: (
        "The binary is dynamically linked against libraries the system lacks. If the "
        "error names GLIBC_ or ld-linux, it needs glibc: prefer a musl or static build "
        "(e.g. *-unknown-linux-musl) when the release has one.",
        "If it names ld-musl or 'Error relocating', it is a musl build: pick the gnu or "
        "static build instead.",
    ),
    PERMISSION: (
        "The file is not executable or a path is not writable: check that binaries "
        "names the executable itself and not a directory.",
    ),
    BINARY_NOT_FOUND: (
        "The command is not where the recipe installs it: list the archive "
        "(inspect_archive) and fix binaries and strip_dirs (e.g. 'tool-1.2.3/tool' with "
        "strip_dirs 0, or 'tool' with strip_dirs 1).",
        "Check that the verify command starts with one of the installed binary names.",
        "A file that exists but reports 'not found' on Linux is often a glibc binary on "
        "a musl system (missing loader).",
    ),
    VERSION_MISMATCH: (
        "The command ran but its output lacks the expected text: set verify_pattern to "
        "what the tool prints, e.g. 'v{version}' or '{version}'.",
    ),
    EXTRACTION: (
        "The archive could not be unpacked: check archive_format against the asset's "
        "real suffix, and asset_type 'binary' for bare executables.",
    ),
    UNKNOWN: ("Read the end of the output above for the failing command and its message.",),
}


class Diagnosis(msgspec.Struct, frozen=True, kw_only=True):
    category: str
    suggestions: tuple[str, ...]
    evidence: str | None = None  # the line that decided the category
    libc: str | None = None  # for missing_shared_library: "glibc" or "musl" when clear


def _line(text: str, start: int) -> str:
    begin = text.rfind("\n", 0, start) + 1
    end = text.find("\n", start)
    return text[begin : end if end >= 0 else len(text)].strip()[:200]


def categorize(output: str, exit_code: int | None = None) -> Diagnosis:
    """What kind of failure ``output`` (stdout and stderr together) shows.

    Exit codes decide only when the text does not: 124 is ``timeout``'s, 126 "found but
    cannot execute", 127 "command not found".
    """
    for category, pattern in _RULES:
        match = pattern.search(output)
        if match is None:
            continue
        libc = None
        if category == SHARED_LIBRARY:
            lowered = output.lower()
            if "glibc" in lowered or "ld-linux" in lowered:
                libc = "glibc"
            elif "musl" in lowered or "error relocating" in lowered:
                libc = "musl"
        return Diagnosis(
            category=category,
            suggestions=SUGGESTIONS[category],
            evidence=_line(output, match.start()),
            libc=libc,
        )
    by_exit = {124: TIMEOUT, 126: PERMISSION, 127: BINARY_NOT_FOUND}.get(exit_code or 0, UNKNOWN)
    return Diagnosis(category=by_exit, suggestions=SUGGESTIONS[by_exit])
