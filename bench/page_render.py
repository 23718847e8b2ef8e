"""page_render: what deciding a page's visible text costs (issue 33, item 4).

An install page's visible text decides which hosts a page-derived recipe may download
from and which packages it may install, so it is read by headless Chromium over its
DevTools protocol (``tsukud/discover/render_page.py``), one browser per page, with the
HTML stripper standing in when no engine is installed. This measures, in one run on a
typical install page of about 48 KB (headings, prose, code blocks, a table of downloads,
a few hidden-text tricks):

* the floor: the same Chromium started and stopped with nothing to render
  (``open_browser`` alone: launch, DevTools handshake, kill, profile removed);
* ``cold``: ``read_visible_text`` as the builder calls it (start, render, kill);
* ``warm``: the render alone in a browser already running (what a kept-warm browser
  would cost per page);
* ``stripper``: the fallback on the same page.

Each figure is a median over its rounds and is printed as a ratio to the floor measured
in the same run. Goal: the render adds <= 1,000 ms to the browser's own start (the page
is read once per install, next to an LLM call of several seconds). No network: the page
is written into the browser, its requests answered inside it.
"""

from __future__ import annotations

import sys
import time

import trio
from _common import fmt, goal, header, line, median, not_measured, note, parse_args

from tsukud.discover.chromium import find_chromium, open_browser
from tsukud.discover.render_page import read_visible_text, visible_in
from tsukud.discover.sanitize_html import strip_html

NAME = "page_render"
GOAL_MS = 1000.0
TIME_LIMIT_S = 60.0


def typical_page() -> str:
    """About 48 KB of an ordinary vendor install page, with three hidden injections."""
    section = (
        "<section><h2>Install on {os}</h2><p>Download the archive for your platform, "
        "check its checksum, and put the binary on your PATH. The archive holds one "
        "binary and a licence file; nothing else is needed at run time.</p>"
        "<pre><code>curl -LO https://downloads.vendor.test/foo/1.2.3/foo-{os}-amd64.tar.gz\n"
        "tar -xzf foo-{os}-amd64.tar.gz\nsudo install foo /usr/local/bin/</code></pre>"
        "<table><tr><th>Platform</th><th>File</th><th>SHA-256</th></tr>"
        "<tr><td>{os}/amd64</td><td>foo-{os}-amd64.tar.gz</td><td>{digest}</td></tr>"
        "<tr><td>{os}/arm64</td><td>foo-{os}-arm64.tar.gz</td><td>{digest}</td></tr>"
        "</table></section>"
    )
    hidden = (
        '<div style="display:none">npm install -g evil-helper</div>'
        '<p style="position:absolute;left:-9999px">https://evil.example.test/x</p>'
        '<span style="clip-path:inset(50%)">pip install evil-helper</span>'
    )
    body = "".join(
        section.format(os=os_, digest=f"{i:064x}")
        for i, os_ in enumerate(("linux", "darwin", "freebsd", "windows") * 20)
    )
    return (
        "<!doctype html><html><head><title>Install foo</title>"
        "<style>body{font:16px sans-serif} pre{background:#eee}</style></head>"
        f"<body><h1>Install foo</h1>{hidden}{body}</body></html>"
    )


async def floor_ms(executable: str) -> float:
    started = time.perf_counter()
    async with open_browser(executable, time_limit=TIME_LIMIT_S):
        pass
    return (time.perf_counter() - started) * 1000


async def cold_ms(executable: str, html: str) -> float:
    started = time.perf_counter()
    page = await read_visible_text(html, chromium=executable, time_limit=TIME_LIMIT_S)
    took = (time.perf_counter() - started) * 1000
    if page.engine != "chromium" or "evil" in page.text:
        raise SystemExit(f"{NAME}: the engine did not read the page as expected: {page}")
    return took


async def warm_ms(executable: str, html: str, rounds: int) -> list[float]:
    out: list[float] = []
    async with open_browser(executable, time_limit=TIME_LIMIT_S * rounds) as browser:
        await visible_in(browser, html)  # the first page also warms the renderer
        for _ in range(rounds):
            started = time.perf_counter()
            text = await visible_in(browser, html)
            out.append((time.perf_counter() - started) * 1000)
            assert "evil" not in text
    return out


async def main() -> None:
    args = parse_args(__doc__ or NAME)
    header(NAME, args.quick)
    executable = find_chromium()
    if executable is None:
        not_measured(
            NAME, f"<= {GOAL_MS:.0f} ms", "no Chromium installed (apt-get install chromium)"
        )
        return
    rounds = 3 if args.quick else 7
    html = typical_page()
    note(
        NAME,
        f"{len(html) // 1024} KB page; {rounds} rounds each, medians; floor: {executable} "
        "started and stopped with nothing rendered, in the same run",
    )
    floors = [await floor_ms(executable) for _ in range(rounds)]
    colds = [await cold_ms(executable, html) for _ in range(rounds)]
    warms = await warm_ms(executable, html, rounds)
    strips: list[float] = []
    for _ in range(rounds):
        started = time.perf_counter()
        strip_html(html)
        strips.append((time.perf_counter() - started) * 1000)
    floor = median(floors)
    cold, warm, strip = median(colds), median(warms), median(strips)
    line(f"{NAME}.floor", floor, "ms", None, "Chromium start and stop, nothing rendered")
    line(f"{NAME}.cold", cold, "ms", cold / floor, "the floor", f"+{fmt(cold - floor)} ms")
    line(f"{NAME}.warm", warm, "ms", warm / floor, "the floor", "a browser already running")
    line(f"{NAME}.stripper", strip, "ms", strip / floor, "the floor", "the fallback")
    goal(
        NAME,
        cold - floor <= GOAL_MS,
        f"+{fmt(cold - floor)} ms beyond the browser's start <= {GOAL_MS:.0f} ms",
    )


if __name__ == "__main__":
    try:
        trio.run(main)
    except KeyboardInterrupt:
        sys.exit(130)
