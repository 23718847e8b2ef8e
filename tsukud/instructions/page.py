"""What an install page says, read by code before any model sees it (pure).

* :func:`render_visible_text`: the page as a person sees it, laid out by a browser engine
  when one is installed (:mod:`tsukud.discover.render_page`), else by discovery's HTML
  stripping with a warning, size-capped; :func:`visible_text` is the stripping alone.
* :func:`named_origins`: the origins (scheme, host in ASCII, port) of the URLs in that
  visible text, the only places a recipe built from the page may download from, so a
  host that only hidden text (or the model) names never qualifies;
  :func:`lookalike_warnings` flags the internationalised (punycode) ones.
* :func:`shown_commands`: the instructions tsuku never runs, found whatever the model
  says: a script run from the network in each common shape (:data:`SCRIPT_SHAPES`:
  piped into a shell or interpreter, through ``tee`` too, ``sh -c "$(curl …)"``,
  ``bash <(curl …)``, PowerShell's ``iwr … | iex``, saved then run) and a system
  package manager (``sudo apt-get install …``), to be shown to the user verbatim.
* :func:`context`: where on the page a host or package stands, for the preview.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import urlsplit

import msgspec

from tsukud.discover.render_page import DEFAULT_TIMEOUT_S, PageText, read_visible_text
from tsukud.discover.sanitize_html import clip, strip_html
from tsukud.discover.stylesheets import FetchText

# What a model reads of a page (the stripped text, not the HTML).
PAGE_TEXT_LIMIT = 48_000
# What the daemon downloads of a page before stripping it.
PAGE_MAX_BYTES = 2 * 1024 * 1024

_URL = re.compile(r"https?://[^\s\"'<>()\[\]`|]+", re.I)
# The pieces of a script run from the network, in every common shape (sh, PowerShell):
_FETCH = r"(?<![\w-])(?:curl|wget|fetch|iwr|irm|invoke-webrequest|invoke-restmethod)\b"
_SCRIPT_URL = r"(?P<url>https?://[^\s\"'|)]+)"
_SUDO = r"(?:sudo\s+(?:-\w+\s+)*)?"
# A program that runs a script it is given: the shells and the usual interpreters.
_RUNNER = r"(?:(?:ba|z|da|k|fi)?sh|python[23]?(?:\.\d+)?|perl|ruby|node|pwsh|powershell)"
_SCRIPT_NAME = r"[\w.-]+\.(?:sh|bash|zsh|ps1|py|pl|rb)\b"
# ``curl URL | sh``, ``wget -qO- URL | sudo bash -s --``, ``curl URL | python3 -``,
# ``curl URL | tee f | sh``, ``iwr URL | iex``.
_PIPED = re.compile(
    rf"{_FETCH}[^|]{{0,300}}?{_SCRIPT_URL}[^|]{{0,200}}?(?:\|\s*tee\b[^|]{{0,120}})*"
    rf"\|\s*(?:{_SUDO}{_RUNNER}|iex|invoke-expression)\b(?:[ \t]+-\S*)*",
    re.I,
)
# The same script run from a command or process substitution: ``sh -c "$(curl URL)"``,
# ``bash <(curl -s URL)``, ``python3 -c "$(wget -qO- URL)"``, ``eval "$(curl URL)"``.
_SUBSTITUTED = re.compile(
    rf"{_SUDO}(?<![\w-])(?:{_RUNNER}|eval|source|\.)\s+(?:-\w+\s+)*[\"']?(?:\$|<)\(\s*"
    rf"{_FETCH}[^)]{{0,300}}?{_SCRIPT_URL}[^)]{{0,200}}?\)[\"']?",
    re.I,
)
# PowerShell's own: ``iex (irm URL)``, ``iex ((New-Object Net.WebClient).DownloadString(
# 'URL'))``, ``& ([scriptblock]::Create((irm URL)))``.
_EXPRESSION = re.compile(
    r"(?:(?<![\w-])(?:iex|invoke-expression)\b|\[scriptblock\]::create)\s*[(\s]*"
    rf"(?:{_FETCH}|new-object\b).{{0,300}}?{_SCRIPT_URL}['\"]?(?:\s*\))*",
    re.I,
)
# Downloaded to a file, then run: ``curl -o i.sh URL && sh i.sh``, ``wget URL;
# chmod +x i.sh; ./i.sh``, ``iwr URL -OutFile i.ps1; .\\i.ps1``.
_SAVED_THEN_RUN = re.compile(
    rf"{_FETCH}[^|;&]{{0,300}}?{_SCRIPT_URL}[^|;&]{{0,200}}?(?:&&|;)\s*"
    r"(?:chmod\s+(?:\+x|[0-7]{3,4})\s+\S+\s*(?:&&|;)\s*)?"
    rf"(?:{_SUDO}{_RUNNER}\s+(?:-\w+\s+)*\S+|{_SUDO}(?:&\s*)?\.{{1,2}}[\\/]{_SCRIPT_NAME})",
    re.I,
)
SCRIPT_SHAPES: Final = (_PIPED, _SUBSTITUTED, _EXPRESSION, _SAVED_THEN_RUN)
# What a downloaded script's name ends with: never the binary of a recipe.
SCRIPT_SUFFIXES: Final = (
    ".sh",
    ".bash",
    ".zsh",
    ".ps1",
    ".psm1",
    ".py",
    ".pl",
    ".rb",
    ".bat",
    ".cmd",
)
_SYSTEM_PACKAGE = re.compile(
    r"(?:sudo\s+)?(?:apt-get|apt|dnf|yum|zypper|pacman|apk|brew)\s+"
    r"(?:-[\w-]+\s+)*(?:install|add|-S)\b[\w .+@=:/-]{1,200}",
    re.I,
)
_END = re.compile(r"\s(?:and|then|to|or|for|on|in|the)\s.*$", re.I)


class ShownCommand(msgspec.Struct, frozen=True, kw_only=True):
    """A command the page asks the reader to run that tsuku will not run for them."""

    kind: str  # script | system_package
    command: str
    url: str | None = None  # the script's URL (kind script)


def visible_text(html: str, *, limit: int = PAGE_TEXT_LIMIT) -> str:
    """The stripper's visible text (no browser engine), size-capped."""
    return clip(strip_html(html), limit)


async def render_visible_text(
    html: str,
    *,
    chromium: str = "",
    time_limit: float = DEFAULT_TIMEOUT_S,
    limit: int = PAGE_TEXT_LIMIT,
    page_url: str = "",
    fetch: FetchText | None = None,
) -> PageText:
    """The visible text a browser engine decides (the stripper's, with a warning, when
    there is none), size-capped; ``engine`` says which decided it. With the page's URL
    and ``fetch``, its external stylesheets count too."""
    page = await read_visible_text(
        html, chromium=chromium, time_limit=time_limit, page_url=page_url, fetch=fetch
    )
    return msgspec.structs.replace(page, text=clip(page.text, limit))


def ascii_host(host: str) -> str | None:
    """The host as DNS spells it (an internationalised name in punycode, ``xn--…``), so a
    look-alike of a familiar site is shown for what it is; None when it is no valid name."""
    host = host.lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def origin_of(url: str) -> str | None:
    """``scheme://host[:port]`` in lowercase ASCII (:func:`ascii_host`), the port only
    when the URL names one."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    host = ascii_host(parts.hostname or "")
    if parts.scheme.lower() not in ("http", "https") or not host:
        return None
    return f"{parts.scheme.lower()}://{host}" + (f":{port}" if port else "")


def lookalike_warnings(origins: Iterable[str]) -> list[str]:
    """A warning for each origin whose host is internationalised (punycode): letters of
    another alphabet can imitate a familiar name (``github.com`` with a Cyrillic ``i``)."""
    warnings = []
    for origin in sorted(origins):
        host = urlsplit(origin).hostname or ""
        if any(label.startswith("xn--") for label in host.split(".")):
            try:
                shown = host.encode("ascii").decode("idna")
            except UnicodeError:
                shown = "?"
            warnings.append(
                f"the page names {origin}, an internationalised name (written {shown!a} on "
                "the page): letters from another alphabet can imitate a familiar site"
            )
    return warnings


def urls_in(text: str) -> list[str]:
    return [m.group(0).rstrip(".,;:!?") for m in _URL.finditer(text)]


def named_origins(text: str) -> frozenset[str]:
    return frozenset(o for u in urls_in(text) if (o := origin_of(u)) is not None)


def _tidy(command: str) -> str:
    return " ".join(command.split()).rstrip(".,;:")


def shown_commands(text: str) -> tuple[ShownCommand, ...]:
    """Every script run from the network (:data:`SCRIPT_SHAPES`) and every system
    package install, in page order; a stretch of text two shapes both match is one
    command."""
    spans: list[tuple[int, int, ShownCommand]] = []
    for pattern in SCRIPT_SHAPES:
        for m in pattern.finditer(text):
            url = m.group("url").rstrip(".,;:!?'\"")
            spans.append(
                (
                    m.start(),
                    m.end(),
                    ShownCommand(kind="script", command=_tidy(m.group(0)), url=url),
                )
            )
    for m in _SYSTEM_PACKAGE.finditer(text):
        cmd = ShownCommand(kind="system_package", command=_tidy(_END.sub("", m.group(0))))
        spans.append((m.start(), m.end(), cmd))
    found: list[ShownCommand] = []
    taken: list[tuple[int, int]] = []
    for start, end, cmd in sorted(spans, key=lambda s: (s[0], -s[1])):
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        found.append(cmd)
    return tuple(dict.fromkeys(found))


def is_script_name(path: str) -> bool:
    """Whether a URL's path or a file's name says it is a script (``install.sh``)."""
    name = urlsplit(path).path if "://" in path else path
    return name.lower().rstrip("/").endswith(SCRIPT_SUFFIXES)


CONTEXT_CHARS: Final = 60


def context(text: str, needle: str, *, start: int | None = None) -> str | None:
    """Where ``needle`` stands in the page's visible text: it and up to
    :data:`CONTEXT_CHARS` characters either side, or None when the text does not have
    it (case-insensitive). ``start``: the match's offset when the caller found it."""
    at = text.lower().find(needle.lower()) if start is None else start
    if at < 0:
        return None
    lo, hi = max(0, at - CONTEXT_CHARS), min(len(text), at + len(needle) + CONTEXT_CHARS)
    return ("…" if lo else "") + text[lo:hi].strip() + ("…" if hi < len(text) else "")
