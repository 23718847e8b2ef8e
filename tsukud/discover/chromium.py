"""A headless Chromium, driven over its DevTools protocol (the imperative shell).

Web pages decide what tsuku may download and install only through the text a person
sees on them, and only a browser engine knows what a person sees (stylesheets, layout,
clipping, colour). :class:`Browser` starts Debian's ``chromium`` with a fresh profile in
a temporary directory, a DevTools port chosen by the kernel on loopback (read from the
``DevTools listening on ws://…`` line it prints), and everything that could reach the
network or run page code turned off:

* pages are written into ``about:blank`` with ``Page.setDocumentContent`` (never
  navigated to), with page scripts disabled (``Emulation.setScriptExecutionDisabled``);
  every request they would make (images, stylesheets, fonts, frames, refreshes) is
  intercepted (``Fetch.enable``) and answered ``204`` from here, and the process is
  started with every host name unresolvable and a proxy that is not there, so nothing
  that escapes interception (a frame in another process) leaves either;
* the process is killed when the ``async with`` ends, on error, on cancellation and when
  its lifetime (``time_limit``) runs out; its profile directory is removed.

:func:`find_chromium` says which executable to use: the ``render.chromium`` setting
(``TSUKU_CHROMIUM``), else ``chromium``, ``chromium-browser`` or ``google-chrome`` on
``PATH``.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio

if TYPE_CHECKING:
    from trio_websocket import WebSocketConnection

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--mute-audio",
    # No request leaves the browser, whatever asks (a frame, a refresh, a preload):
    # every name fails to resolve and everything, loopback too, goes to a proxy that is
    # not there. Fetch interception answers them earlier still, per page.
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:1",
    "--proxy-bypass-list=<-loopback>",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)
_LISTENING = re.compile(rb"DevTools listening on (ws://127\.0\.0\.1:\d+/devtools/browser/[\w-]+)")
# A rendered page's answer (its visible text) is at most a few MB.
MAX_MESSAGE = 32 * 1024 * 1024
VIEWPORT = {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}


class BrowserError(Exception):
    """The browser could not be started or did not answer as the protocol says."""


def find_chromium(configured: str = "") -> str | None:
    """The Chromium to run: the configured path (or name on ``PATH``), else the first of
    :data:`CANDIDATES` on ``PATH``; None when there is none."""
    if configured:
        if os.sep in configured:
            return configured if os.access(configured, os.X_OK) else None
        return shutil.which(configured)
    for name in CANDIDATES:
        if found := shutil.which(name):
            return found
    return None


class Session:
    """One DevTools connection to the browser; commands to a page carry its session id
    (flattened target sessions), events are ignored."""

    def __init__(self, ws: WebSocketConnection) -> None:
        self._ws = ws
        self._ids = itertools.count(1)
        self._waiting: dict[int, trio.MemorySendChannel[dict[str, Any]]] = {}

    async def pump(self) -> None:
        """Route answers to the commands waiting for them, and answer every request a
        page makes (run in the browser's nursery)."""
        from trio_websocket import ConnectionClosed

        while True:
            try:
                raw = await self._ws.get_message()
            except ConnectionClosed as exc:
                raise BrowserError(f"chromium closed its DevTools connection ({exc})") from None
            message = json.loads(raw)
            if message.get("method") == "Fetch.requestPaused":
                await self._refuse(message)
                continue
            waiter = self._waiting.pop(message.get("id", -1), None)
            if waiter is not None:
                waiter.send_nowait(message)

    async def _refuse(self, paused: dict[str, Any]) -> None:
        """Answer a page's request with an empty ``204 No Content`` from here: nothing is
        sent, and a navigation (a refresh, a frame) answered so never commits, not even
        as an error page, so the page read stays the page written. The answer to this
        command is not waited for (the pump that would route it is the caller)."""
        frame = {
            "id": next(self._ids),
            "method": "Fetch.fulfillRequest",
            "params": {"requestId": paused["params"]["requestId"], "responseCode": 204},
            "sessionId": paused.get("sessionId"),
        }
        await self._ws.send_message(json.dumps(frame))

    async def send(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        ident = next(self._ids)
        frame: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            frame["sessionId"] = session
        send, receive = trio.open_memory_channel[dict[str, Any]](1)
        self._waiting[ident] = send
        try:
            await self._ws.send_message(json.dumps(frame))
            answer = await receive.receive()
        finally:
            self._waiting.pop(ident, None)
        if "error" in answer:
            raise BrowserError(f"{method}: {answer['error'].get('message', answer['error'])}")
        result: dict[str, Any] = answer.get("result", {})
        return result


class Browser:
    """A running Chromium; :meth:`evaluate_page` writes a page into a fresh tab with no
    scripts and no network and evaluates a DevTools expression over it."""

    def __init__(self, session: Session, executable: str) -> None:
        self.session = session
        self.executable = executable

    async def evaluate_page(self, html: str, expression: str) -> Any:
        """The value of ``expression`` (evaluated in an isolated world, so page scripts
        could not have changed what it calls) over ``html`` as Chromium lays it out."""
        s = self.session
        target = (await s.send("Target.createTarget", {"url": "about:blank"}))["targetId"]
        sid: str | None = None
        try:
            sid = (await s.send("Target.attachToTarget", {"targetId": target, "flatten": True}))[
                "sessionId"
            ]
            await s.send("Emulation.setScriptExecutionDisabled", {"value": True}, session=sid)
            # Every request the page makes is answered by :meth:`Session._refuse`.
            await s.send("Fetch.enable", {"patterns": [{"urlPattern": "*"}]}, session=sid)
            await s.send("Emulation.setDeviceMetricsOverride", VIEWPORT, session=sid)
            await s.send("Page.enable", {}, session=sid)
            frame = (await s.send("Page.getFrameTree", {}, session=sid))["frameTree"]["frame"]["id"]
            await s.send("Page.setDocumentContent", {"frameId": frame, "html": html}, session=sid)
            world = await s.send(
                "Page.createIsolatedWorld", {"frameId": frame, "worldName": "tsuku"}, session=sid
            )
            answer = await s.send(
                "Runtime.evaluate",
                {
                    "expression": expression,
                    "contextId": world["executionContextId"],
                    "returnByValue": True,
                },
                session=sid,
            )
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(2):
                # The page goes first, with anything it scheduled (a refresh): closing
                # the tab ends the interception, and a request made then would be sent.
                if sid is not None:
                    with trio.move_on_after(1):
                        await s.send("Page.navigate", {"url": "about:blank"}, session=sid)
                await s.send("Target.closeTarget", {"targetId": target})
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            raise BrowserError(f"the page script failed: {details.get('text', details)}")
        return answer.get("result", {}).get("value")


async def _listening_url(stderr: trio.abc.ReceiveStream) -> str:
    buffered = b""
    while True:
        chunk = await stderr.receive_some(4096)
        if not chunk:
            raise BrowserError(
                "chromium exited before it listened: " + buffered[-500:].decode("utf-8", "replace")
            )
        buffered += chunk
        if m := _LISTENING.search(buffered):
            return m.group(1).decode()


async def _drain(stream: trio.abc.ReceiveStream) -> None:
    while await stream.receive_some(65536):
        pass


def _kill(process: trio.Process) -> None:
    """The whole process group: Chromium's renderer and zygote children too."""
    if process.returncode is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()


async def _group_gone(pgid: int) -> None:
    """Until the killed group's last member is gone: the renderer and zygote die a
    moment after the browser, and a read that returned must leave no process behind
    (they are reparented, so only the group can be asked)."""
    while True:
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        await trio.sleep(0.01)


@asynccontextmanager
async def open_browser(executable: str, *, time_limit: float) -> AsyncIterator[Browser]:
    """A Chromium for at most ``time_limit`` seconds: started here, killed (with its
    children) and its profile removed when the block ends, fails or is cancelled;
    :class:`trio.TooSlowError` when the time runs out."""
    profile = tempfile.mkdtemp(prefix="tsuku-chromium-")
    process: trio.Process | None = None
    try:
        with trio.fail_after(time_limit):
            async with trio.open_nursery() as nursery:
                process = await trio.lowlevel.open_process(
                    [executable, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    start_new_session=True,
                )
                assert process.stderr is not None
                url = await _listening_url(process.stderr)
                nursery.start_soon(_drain, process.stderr)
                # Imported here: the WebSocket stack (trio_websocket, wsproto, h11) is a
                # tenth of the daemon's start-up imports, and most daemons never render.
                from trio_websocket import open_websocket_url

                try:
                    async with open_websocket_url(url, max_message_size=MAX_MESSAGE) as ws:
                        session = Session(ws)
                        async with trio.open_nursery() as pumping:
                            pumping.start_soon(session.pump)
                            try:
                                yield Browser(session, executable)
                            finally:
                                pumping.cancel_scope.cancel()
                finally:
                    nursery.cancel_scope.cancel()
    finally:
        if process is not None:
            _kill(process)
            with trio.CancelScope(shield=True), trio.move_on_after(5):
                await process.wait()
                await _group_gone(process.pid)
        shutil.rmtree(profile, ignore_errors=True)
