"""A page's visible text decided by real headless Chromium (Debian's ``chromium``, which
``scripts/dev setup`` installs; without it these tests skip, and a skip fails in CI).

The fourteen hiding tricks and the visible controls go through one browser per module
(run on its own trio loop in a thread, so each table row is a test of its own); the
promises of the shell (no page scripts, no network, nothing left running, the stripper
standing in with a warning) each start their own.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from tests.hiding_tricks import HIDDEN, INJECTION, SHOWN, STYLESHEET, VISIBLE, page, served
from tsukud.discover import chromium as chromium_module
from tsukud.discover.chromium import Browser, find_chromium, open_browser
from tsukud.discover.render_page import (
    ENGINE_CHROMIUM,
    ENGINE_STRIPPER,
    read_visible_text,
    visible_in,
)
from tsukud.instructions.page import named_origins
from tsukud.testing.download_host import FakeDownloadHost

CHROMIUM = find_chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (scripts/dev setup installs it)"
)


class BrowserThread:
    """One Chromium for a module's tests, on a trio loop of its own in a thread."""

    def __init__(self, executable: str) -> None:
        self._ready = threading.Event()
        self._browser: Browser | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._stop: trio.Event | None = None
        self._thread = threading.Thread(target=trio.run, args=(self._main, executable))
        self._thread.start()
        if not self._ready.wait(60) or self._browser is None:
            raise RuntimeError("chromium did not start")

    async def _main(self, executable: str) -> None:
        self._stop = trio.Event()
        self._token = trio.lowlevel.current_trio_token()
        try:
            async with open_browser(executable, time_limit=900) as browser:
                self._browser = browser
                self._ready.set()
                await self._stop.wait()
        finally:
            self._ready.set()

    def text(self, html: str) -> str:
        assert self._browser is not None
        browser = self._browser
        return trio.from_thread.run(visible_in, browser, html, trio_token=self._token)

    def close(self) -> None:
        if self._stop is not None:
            trio.from_thread.run_sync(self._stop.set, trio_token=self._token)
        self._thread.join(30)


@pytest.fixture(scope="module")
def browser() -> Iterator[BrowserThread]:
    assert CHROMIUM is not None
    b = BrowserThread(CHROMIUM)
    try:
        yield b
    finally:
        b.close()


@pytest.mark.parametrize("trick", sorted(HIDDEN))
def test_no_hiding_trick_reads_as_visible_to_chromium(browser: BrowserThread, trick: str) -> None:
    text = browser.text(served(*HIDDEN[trick]))
    assert "evil" not in text, text
    assert "Download https://dl.vendor.test/foo.tar.gz" in text
    assert text.endswith("Then run foo.")
    assert named_origins(text) == {"https://dl.vendor.test"}


@pytest.mark.parametrize("control", sorted(VISIBLE))
def test_what_a_reader_sees_stays_visible_to_chromium(browser: BrowserThread, control: str) -> None:
    text = browser.text(served(*VISIBLE[control]))
    assert SHOWN in text, text
    assert "https://mirror.vendor.test" in named_origins(text)


@pytest.mark.parametrize(
    "body",
    [
        # Only part of a paragraph is inside its clipped box: the words below it go.
        '<p style="width:300px;height:1.3em;line-height:1.3em;overflow:hidden">'
        f"Download foo here. {INJECTION} {INJECTION}</p>",
        # A colour that only -webkit-text-fill-color makes match the background.
        f'<p style="color:#000;-webkit-text-fill-color:#fff">{INJECTION}</p>',
        f'<h2 style="text-indent:-9999px">{INJECTION}</h2>',
        f'<span style="position:absolute;clip:rect(0,0,0,0)">{INJECTION}</span>',
        f'<div style="width:0;height:40px;overflow:hidden;white-space:nowrap">{INJECTION}</div>',
        f'<div style="position:fixed;top:-400px">{INJECTION}</div>',
        f"<details><summary>More</summary>{INJECTION}</details>",
    ],
)
def test_more_hiding_is_seen_through(browser: BrowserThread, body: str) -> None:
    text = browser.text(page("", body))
    assert "evil" not in text, text
    assert text.endswith("Then run foo.")


def test_page_scripts_never_run(browser: BrowserThread) -> None:
    """A script could write text after the load (or rewrite the page for the engine
    alone); with scripts disabled the page is what its HTML says."""
    html = page(
        "",
        f"<p id=t>static</p><script>document.getElementById('t').textContent = "
        f"{INJECTION!r}</script><img src=x onerror=\"document.body.append('{INJECTION}')\">",
    )
    text = browser.text(html)
    assert "static" in text and "evil" not in text, text


def _reaching_page(base: str) -> str:
    """A page that asks for everything a page can ask for, from ``base``."""
    return (
        f'<html><head><meta http-equiv="refresh" content="0;url={base}/r">'
        f'<link rel="stylesheet" href="{base}/s.css"><link rel="preload" href="{base}/p.js" '
        f'as="script"><script src="{base}/x.js"></script>'
        f"<style>@font-face{{font-family:f;src:url({base}/font.woff)}} "
        f"body{{font-family:f;background:url({base}/bg.png)}}</style></head>"
        f'<body><p>hello</p><img src="{base}/a.png"><iframe src="{base}/f.html"></iframe>'
        f'<object data="{base}/o.html"></object><video poster="{base}/v.png"></video>'
        "</body></html>"
    )


def test_the_page_reaches_no_network_and_stays_the_page(browser: BrowserThread) -> None:
    """Everything a page could load (images, styles, frames, fonts, refreshes, scripts) is
    answered inside the browser: the host it names, on loopback, sees nothing, and a
    refresh never replaces the page being read."""
    with FakeDownloadHost() as host:
        for base in (host.url, host.url.replace("127.0.0.1", "localhost")):
            for _ in range(3):
                assert "hello" in browser.text(_reaching_page(base))
        assert host.fetched() == [], host.fetched()


# Each way out is closed three times over; each layer alone must hold.
_LAYER_FLAGS = {"resolver": "--host-resolver-rules", "proxy": "--proxy-"}


# A browser per layer: interception stays in the local run (and the test above, all layers
# at once); the other two layers are slow.
@pytest.mark.parametrize(
    "layer",
    [
        "interception",
        pytest.param("resolver", marks=pytest.mark.slow),
        pytest.param("proxy", marks=pytest.mark.slow),
    ],
)
async def test_each_network_layer_alone_keeps_the_page_off_the_network(
    layer: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    others = tuple(v for k, v in _LAYER_FLAGS.items() if k != layer)
    monkeypatch.setattr(
        chromium_module,
        "FLAGS",
        tuple(f for f in chromium_module.FLAGS if not f.startswith(others)),
    )
    if layer != "interception":
        send = chromium_module.Session.send

        async def without_interception(
            self: chromium_module.Session, method: str, *args: Any, **kw: Any
        ) -> dict[str, Any]:
            return {} if method == "Fetch.enable" else await send(self, method, *args, **kw)

        monkeypatch.setattr(chromium_module.Session, "send", without_interception)
    assert CHROMIUM is not None
    with FakeDownloadHost() as host:
        async with open_browser(CHROMIUM, time_limit=60) as b:
            for base in 3 * (host.url, host.url.replace("127.0.0.1", "localhost")):
                # Without interception a refresh may replace the page: not the point here.
                with contextlib.suppress(chromium_module.BrowserError):
                    await visible_in(b, _reaching_page(base))
            await trio.sleep(1)  # anything started has had time to arrive
        assert host.fetched() == [], host.fetched()


def _leftovers(root: Path) -> list[str]:
    """Chromium processes or profiles from this test's temporary directory."""
    left = [p.name for p in root.iterdir()]
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if str(root).encode() in cmdline:
            left.append(f"pid {proc.name}")
    return left


async def test_the_engine_decides_and_says_so_with_nothing_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = await read_visible_text(page(*HIDDEN["clip_path_inset"]))
    assert result.engine == ENGINE_CHROMIUM and result.warning is None
    assert "evil" not in result.text and result.ms > 0
    assert _leftovers(tmp_path) == []


async def test_a_cancelled_render_kills_the_browser_and_removes_its_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert CHROMIUM is not None
    with trio.move_on_after(30) as scope:
        async with open_browser(CHROMIUM, time_limit=60):
            assert any(name.startswith("tsuku-chromium-") for name in os.listdir(tmp_path))
            scope.cancel()
            await trio.sleep(5)
    assert scope.cancelled_caught
    assert _leftovers(tmp_path) == []


async def test_a_render_out_of_time_falls_back_to_the_stripper_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    result = await read_visible_text(page(*HIDDEN["clip_path_inset"]), time_limit=0.01)
    assert result.engine == ENGINE_STRIPPER
    assert result.warning is not None and "browser engine failed" in result.warning
    assert "evil" not in result.text  # the stripper knows this trick too
    assert _leftovers(tmp_path) == []


async def test_no_engine_means_the_stripper_with_a_warning() -> None:
    result = await read_visible_text(
        page(*HIDDEN["sr_only_clip_rect"]), chromium="/nonexistent/chromium"
    )
    assert result.engine == ENGINE_STRIPPER
    assert result.warning is not None
    assert "'/nonexistent/chromium' is not there" in result.warning
    assert "apt-get install chromium" in result.warning
    assert "evil" not in result.text


def test_the_engine_is_found_by_setting_or_on_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "my-chrome"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    assert find_chromium(str(fake)) == str(fake)
    assert find_chromium(str(tmp_path / "missing")) is None
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_chromium() is None
    (tmp_path / "chromium-browser").symlink_to(fake)
    assert find_chromium() == str(tmp_path / "chromium-browser")
    assert find_chromium("my-chrome") == str(fake)
    assert chromium_module.CANDIDATES == ("chromium", "chromium-browser", "google-chrome")
    assert os.access(fake, os.X_OK)


async def test_a_rule_in_an_external_stylesheet_hides_and_an_unread_sheet_is_warned_of() -> None:
    head, body = HIDDEN["class_hidden_by_external_stylesheet"]
    html = page(head, body)
    asked: list[str] = []

    async def fetch(url: str) -> str | None:
        asked.append(url)
        await trio.lowlevel.checkpoint()
        return STYLESHEET

    url = "https://www.vendor.test/foo/install"
    read = await read_visible_text(html, page_url=url, fetch=fetch)
    assert asked == ["https://www.vendor.test/assets/site.css"]
    assert read.engine == ENGINE_CHROMIUM and read.warning is None
    assert "evil" not in read.text and read.text.endswith("Then run foo.")

    async def unreadable(url: str) -> str | None:
        await trio.lowlevel.checkpoint()
        return None

    read = await read_visible_text(html, page_url=url, fetch=unreadable)
    assert read.warning is not None
    assert "1 of the page's stylesheets could not be read" in read.warning
    assert "https://www.vendor.test/assets/site.css" in read.warning


@pytest.mark.parametrize(
    "script",
    [
        "exit 3",  # dies before it listens
        # says it listens where nothing does
        "echo 'DevTools listening on ws://127.0.0.1:1/devtools/browser/x' >&2; sleep 30",
        # listens, then closes the connection at once (slow: ~10 s before the fallback; the
        # two above fall back in the local run)
        pytest.param(
            'python3 -c \'import socket,sys; s=socket.socket(); s.bind(("127.0.0.1",0)); '
            's.listen(); print("DevTools listening on ws://127.0.0.1:%d/devtools/browser/x" '
            "% s.getsockname()[1], file=sys.stderr, flush=True); c,_=s.accept(); c.close()'",
            marks=pytest.mark.slow,
        ),
    ],
)
async def test_a_browser_that_fails_falls_back_to_the_stripper(tmp_path: Path, script: str) -> None:
    broken = tmp_path / "chromium"
    broken.write_text(f"#!/bin/sh\n{script}\n")
    broken.chmod(0o755)
    result = await read_visible_text(
        page(*HIDDEN["clip_path_inset"]), chromium=str(broken), time_limit=10
    )
    assert result.engine == ENGINE_STRIPPER
    assert result.warning is not None and "browser engine failed" in result.warning
    assert "evil" not in result.text
