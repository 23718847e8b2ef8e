"""Per-host limits of the HTTP layer against a real loopback server that counts the
requests it is serving at once: the concurrency cap holds (downloads included), the
minimum interval spaces starts out, a short ``retry-after`` is waited out by every
request to that host, and the defaults do not slow a handful of requests."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from tests.fakes.http import FakeHTTPServer, RecordedRequest, Reply
from tsukud import config
from tsukud.net.hosts import HostLimits
from tsukud.net.http import Http, HttpRateLimited, Settings
from tsukud.net.retry import RetryPolicy

SERVE_S = 0.3


class CountingServer(FakeHTTPServer):
    """Holds each request for ``serve_s`` and remembers how many it held at once."""

    def __init__(self, serve_s: float = SERVE_S) -> None:
        super().__init__(fallback=Reply(json={"ok": True}))
        self.serve_s = serve_s
        self._count_lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0
        self.starts: list[float] = []

    def handle(self, request: RecordedRequest) -> Reply:
        with self._count_lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.starts.append(time.monotonic())
        try:
            self.closing.wait(self.serve_s)
            return super().handle(request)
        finally:
            with self._count_lock:
                self.in_flight -= 1


@pytest.fixture
def server() -> Iterator[CountingServer]:
    with CountingServer() as s:
        yield s


def client(limits: HostLimits | None = None) -> Http:
    return Http(
        settings=Settings(max_wait=2.0, retry=RetryPolicy(base_delay=0.01, max_delay=0.02)),
        allowed_hosts=lambda: {"127.0.0.1"},
        host_limits=(lambda: limits) if limits is not None else HostLimits,
    )


@pytest.fixture
async def capped() -> AsyncIterator[Http]:
    h = client(HostLimits(concurrency=2))
    yield h
    await h.aclose()


async def fire(http: Http, url: str, n: int) -> None:
    async with trio.open_nursery() as nursery:
        for i in range(n):
            nursery.start_soon(http.get, f"{url}/{i}")


async def test_the_cap_holds_for_one_host(capped: Http, server: CountingServer) -> None:
    started = time.monotonic()
    await fire(capped, server.url, 8)
    assert server.peak == 2 and len(server.requests) == 8
    assert time.monotonic() - started >= 4 * SERVE_S * 0.9  # four rounds of two
    assert capped.hosts.in_flight(server.url) == 0


async def test_each_host_has_its_own_cap(capped: Http, server: CountingServer) -> None:
    with CountingServer() as other:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(fire, capped, server.url, 4)
            nursery.start_soon(fire, capped, other.url, 4)
        assert server.peak == 2 and other.peak == 2


async def test_the_defaults_do_not_slow_a_handful() -> None:
    http = client()
    try:
        with CountingServer(serve_s=1.5) as server:
            await fire(http, server.url, 6)
            assert server.peak == 6  # all six were served at once: none waited for a slot
    finally:
        await http.aclose()
    resolved = config.resolve(env={})
    assert resolved["net.per_host_concurrency"] == HostLimits().concurrency == 8
    assert resolved["net.per_host_interval_ms"] == 0


async def test_a_download_holds_its_slot(server: CountingServer) -> None:
    http = client(HostLimits(concurrency=1))
    try:
        async with http.stream(f"{server.url}/big", max_bytes=1000) as stream:
            with trio.move_on_after(2 * SERVE_S) as waited:
                await http.get(f"{server.url}/small")  # must wait for the download
            assert waited.cancelled_caught
            async for _chunk in stream.chunks():
                pass
        await http.get(f"{server.url}/small")
        assert server.peak == 1
    finally:
        await http.aclose()


async def test_the_interval_spaces_the_starts(server: CountingServer) -> None:
    http = client(HostLimits(concurrency=8, interval=0.2))
    try:
        await fire(http, server.url, 4)
    finally:
        await http.aclose()
    # Four starts 0.2 s apart span 0.6 s (without the interval: a few ms); the margin
    # is for a request that reaches the server late on a loaded machine.
    assert len(server.starts) == 4
    assert server.starts[-1] - server.starts[0] >= 0.45, server.starts


async def test_a_short_retry_after_is_waited_out_by_every_request() -> None:
    with FakeHTTPServer(fallback=Reply(json={"ok": True})) as s:
        http = client(HostLimits(concurrency=8))
        try:
            s.push(Reply(429, body=b"slow down", headers={"retry-after": "1"}))
            await http.get(f"{s.url}/first")  # told to wait 1 s: waits, then succeeds
            told = time.monotonic()
            s.push(Reply(429, body=b"slow down", headers={"retry-after": "1"}))
            async with trio.open_nursery() as nursery:
                nursery.start_soon(http.get, f"{s.url}/a")
                await trio.sleep(0.1)  # /a was told; these come while the host is paused
                for i in range(3):
                    nursery.start_soon(http.get, f"{s.url}/b{i}")
            assert time.monotonic() - told >= 0.9
            assert [r.route for r in s.requests].count("/a") == 2  # the 429 and the retry
            # a long one is not slept through: the caller learns when to come back
            s.push(Reply(429, body=b"slow down", headers={"retry-after": "3600"}))
            with pytest.raises(HttpRateLimited):
                await http.get(f"{s.url}/c")
            with pytest.raises(HttpRateLimited):  # and the host stays marked
                await http.get(f"{s.url}/d")
        finally:
            await http.aclose()
