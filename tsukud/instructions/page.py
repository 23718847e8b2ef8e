"""What an install page says, read by code before any model sees it (pure).

* :func:`render_visible_text`: the page as a person sees it, laid out by a browser engine
  when one is installed (:mod:`tsukud.discover.render_page`), else by discovery's HTML
  stripping with a warning, size-capped; :func:`visible_text` is the stripping alone.
* :func:`named_origins`: the origins (scheme, host in ASCII, port) of the URLs in that
  visible text, the only places a recipe built from the page may download from, so a
  host that only hidden text (or the model) names never qualifies;
  :func:`lookalike_warnings` flags the internationalised (punycode) ones.
* :func:`shown_commands`: the instructions tsuku never runs, found whatever the model
  says: a script piped into a shell (``curl … | sh``, ``sh -c "$(curl …)"``,
  ``bash <(curl …)``) and a system package manager
  (``sudo apt-get install …``), to be shown to the user verbatim.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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
_PIPE_TO_SHELL = re.compile(
    r"(?:curl|wget)\b[^|\n]{0,300}?(https?://[^\s\"'|]+)[^|\n]{0,200}?\|\s*"
    r"(?:sudo\s+(?:-\w+\s+)*)?(?:ba|z|da|k)?sh\b(?:\s+-s\b)?",
    re.I,
)
# The same script run by a shell from a command substitution or process substitution:
# ``sh -c "$(curl -fsSL URL)"``, ``bash <(curl -s URL)``.
_SUBSTITUTED_TO_SHELL = re.compile(
    r"(?:sudo\s+(?:-\w+\s+)*)?(?:ba|z|da|k)?sh\s+(?:-c\s+)?[\"']?(?:\$|<)\(\s*"
    r"(?:curl|wget)\b[^)\n]{0,300}?(https?://[^\s\"')]+)[^)\n]{0,200}?\)[\"']?",
    re.I,
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
    found: list[ShownCommand] = []
    for pattern in (_PIPE_TO_SHELL, _SUBSTITUTED_TO_SHELL):
        for m in pattern.finditer(text):
            found.append(ShownCommand(kind="script", command=_tidy(m.group(0)), url=m.group(1)))
    for m in _SYSTEM_PACKAGE.finditer(text):
        found.append(ShownCommand(kind="system_package", command=_tidy(_END.sub("", m.group(0)))))
    return tuple(dict.fromkeys(found))
