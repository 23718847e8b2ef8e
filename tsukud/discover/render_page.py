"""A page's visible text, decided by a browser engine when one is installed.

What a page *shows* decides which hosts a recipe may download from and which packages it
may install, so "visible" must mean what a person sees, not what a list of hiding tricks
misses. :func:`read_visible_text` writes the page's external stylesheets into it
(:mod:`.stylesheets`), lays it out in headless Chromium (:mod:`.chromium`: no scripts,
no network) and keeps the text of boxes that pass the rules of ``visible.js`` (on screen,
unclipped, readable size, real opacity, a colour distinct from the background, not in a
closed ``<details>``, ``<noscript>`` or ``aria-hidden``). Without an engine, or when it
fails, it falls back to :func:`.sanitize_html.strip_html` and says so in
:attr:`PageText.warning`, which callers show to the person and record.
"""

from __future__ import annotations

import functools
import time
from importlib.resources import files

import msgspec
import trio

from tsukud.discover.chromium import Browser, BrowserError, find_chromium, open_browser
from tsukud.discover.sanitize_html import remove_invisible, strip_html
from tsukud.discover.stylesheets import FetchText, with_stylesheets

ENGINE_CHROMIUM = "chromium"
ENGINE_STRIPPER = "stripper"
DEFAULT_TIMEOUT_S = 20.0
NO_ENGINE = (
    "no browser engine is installed (apt-get install chromium, or set render.chromium / "
    "TSUKU_CHROMIUM): the page's visible text was guessed by stripping its HTML, which "
    "cannot see everything a stylesheet hides"
)


class PageText(msgspec.Struct, frozen=True, kw_only=True):
    """The text a person sees on a page, and how that was decided."""

    text: str
    engine: str  # chromium | stripper
    ms: int = 0  # time to decide it
    warning: str | None = None  # the stripper stood in, or a stylesheet could not be read


@functools.cache
def _script() -> str:
    return files("tsukud.discover").joinpath("visible.js").read_text(encoding="utf-8")


def tidy(text: str) -> str:
    """Invisible characters removed and whitespace collapsed, as :func:`strip_html` does."""
    return " ".join(remove_invisible(text).split())


async def visible_in(browser: Browser, html: str) -> str:
    """The visible text of ``html`` laid out in a running browser."""
    value = await browser.evaluate_page(html, _script())
    if not isinstance(value, str):
        raise BrowserError(f"the visibility script answered {type(value).__name__}")
    return tidy(value)


async def render_with(executable: str, html: str, *, time_limit: float = DEFAULT_TIMEOUT_S) -> str:
    """The visible text of ``html`` laid out by the Chromium at ``executable``, started for
    this page alone (raises what went wrong, :class:`trio.TooSlowError` after
    ``time_limit``, possibly inside exception groups)."""
    async with open_browser(executable, time_limit=time_limit) as browser:
        return await visible_in(browser, html)


def stripped(html: str, started: float, warning: str) -> PageText:
    text = strip_html(html)
    return PageText(
        text=text,
        engine=ENGINE_STRIPPER,
        ms=int((time.monotonic() - started) * 1000),
        warning=warning,
    )


def _reason(exc: BaseException) -> str:
    """What went wrong, from the first failure inside nested exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, trio.TooSlowError):
        return "it ran out of time"
    return str(exc) or type(exc).__name__


async def read_visible_text(
    html: str,
    *,
    chromium: str = "",
    time_limit: float = DEFAULT_TIMEOUT_S,
    page_url: str = "",
    fetch: FetchText | None = None,
) -> PageText:
    """The page as a person sees it: Chromium's rendering when ``chromium`` (a path or a
    name on ``PATH``; empty: the usual names) finds one, else the stripper with a warning
    (also when the engine fails or runs out of time). Given the page's URL and a way to
    ``fetch`` text, its external stylesheets are read and applied first."""
    started = time.monotonic()
    notes: list[str] = []
    if fetch is not None and page_url:
        html, unread = await with_stylesheets(html, page_url, fetch)
        if unread:
            notes.append(
                f"{len(unread)} of the page's stylesheets could not be read ({unread[0]}"
                + (", …" if len(unread) > 1 else "")
                + "): text only they hide counts as visible"
            )
    executable = find_chromium(chromium)
    if executable is None:
        why = f"the configured browser {chromium!r} is not there; " if chromium else ""
        return stripped(html, started, "; ".join([why + NO_ENGINE, *notes]))
    try:
        text = await render_with(executable, html, time_limit=time_limit)
    except Exception as exc:
        # Any failure of the optional engine falls back to the stripper (a cancellation
        # is not an Exception: it still ends the read).
        reason = _reason(exc)
        failed = (
            f"the browser engine failed ({reason[:200]}): the page's visible text was "
            "guessed by stripping its HTML instead"
        )
        return stripped(html, started, "; ".join([failed, *notes]))
    ms = int((time.monotonic() - started) * 1000)
    return PageText(text=text, engine=ENGINE_CHROMIUM, ms=ms, warning="; ".join(notes) or None)
