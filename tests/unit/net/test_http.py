"""The shared HTTP layer against real loopback servers: URL policy at every hop,
credentials per origin, size caps, cache with ETag revalidation, rate limits, timeouts, and
transient failures tried again (jittered, growing waits; bounded in tries and time)."""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio

from tests.fakes.http import FakeHTTPServer, Reply
from tsukud.clock import FixedClock, TrioClock
from tsukud.net.http import (
    BlockedURL,
    Http,
    HttpError,
    HttpRateLimited,
    HttpStatusError,
    ResponseTooLarge,
    Settings,
    TooManyRedirects,
    _TryAgain,
    is_loopback_host,
    origin,
    retry_after_seconds,
)
from tsukud.net.retry import RetryPolicy, may_retry, next_delay

TOKEN = "ghp_unitTestToken0123456789"


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as s:
        yield s


@pytest.fixture
def other() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as s:
        yield s


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(1_000_000.0)


@pytest.fixture
async def http(clock: FixedClock) -> AsyncIterator[Http]:
    h = Http(
        settings=Settings(
            read_timeout=2,
            total_timeout=5,
            max_wait=0.5,
            retry=RetryPolicy(base_delay=0.01, max_delay=0.02),
        ),
        allowed_hosts=lambda: {"127.0.0.1"},
        clock=clock,
    )
    yield h
    await h.aclose()


# ---- policy ---------------------------------------------------------------------------


def test_loopback_names() -> None:
    assert is_loopback_host("127.0.0.1")
    assert is_loopback_host("127.8.9.10")
    assert is_loopback_host("::1")
    assert is_loopback_host("localhost")
    assert not is_loopback_host("example.com")
    assert not is_loopback_host("10.0.0.1")


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com/x",  # plain http off loopback
        "ftp://127.0.0.1/x",
        "file:///etc/passwd",
        "https://10.0.0.8/x",  # private
        "https://169.254.169.254/latest/meta-data/",  # cloud metadata
        "https://[::1]/x",  # loopback, but not a configured endpoint
        "https://192.168.1.1/x",
        "https://user:pw@example.com/x",  # credentials in the URL
        "http://localhost:9/x",  # loopback by name, not configured
    ],
)
async def test_refused_urls(http: Http, url: str) -> None:
    with pytest.raises(BlockedURL):
        await http.get(url)
    assert http.stats["requests"] == 0


async def test_loopback_needs_to_be_configured(server: FakeHTTPServer) -> None:
    h = Http(allowed_hosts=frozenset)
    try:
        with pytest.raises(BlockedURL, match="private or local"):
            await h.get(server.url + "/x")
    finally:
        await h.aclose()
    assert server.requests == []


async def test_every_redirect_hop_is_checked(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(302, headers={"location": "http://169.254.169.254/latest/meta-data/"}))
    with pytest.raises(BlockedURL, match=r"169\.254\.169\.254"):
        await http.get(server.url + "/start")
    assert len(server.requests) == 1

    server.push(Reply(301, headers={"location": "https://10.1.2.3/internal"}))
    with pytest.raises(BlockedURL):
        await http.get(server.url + "/start")


async def test_redirects_followed_with_a_limit(http: Http, server: FakeHTTPServer) -> None:
    server.push(
        Reply(301, headers={"location": "/two"}),
        Reply(302, headers={"location": server.url + "/three"}),
        Reply(json={"ok": True}),
    )
    resp = await http.get(server.url + "/one")
    assert resp.json() == {"ok": True}
    assert resp.url == server.url + "/three"
    assert [r.path for r in server.requests] == ["/one", "/two", "/three"]

    h = Http(settings=Settings(max_redirects=2), allowed_hosts=lambda: {"127.0.0.1"})
    server.push(*[Reply(302, headers={"location": "/again"})] * 3)
    try:
        with pytest.raises(TooManyRedirects):
            await h.get(server.url + "/loop")
    finally:
        await h.aclose()


async def test_credentials_only_for_their_origin(
    clock: FixedClock, server: FakeHTTPServer, other: FakeHTTPServer
) -> None:
    h = Http(
        allowed_hosts=lambda: {"127.0.0.1"},
        credentials=lambda: {origin(server.url): f"Bearer {TOKEN}"},
        clock=clock,
    )
    try:
        server.push(Reply(302, headers={"location": other.url + "/cdn/file"}))
        other.push(Reply(body=b"payload"))
        resp = await h.get(server.url + "/api/asset")
        assert resp.body == b"payload"
        assert server.requests[0].headers["authorization"] == f"Bearer {TOKEN}"
        assert "authorization" not in other.requests[0].headers
        # An error message names the URL, never the header.
        server.push(Reply(500, body=b"boom"))
        with pytest.raises(HttpStatusError) as err:
            await h.get(server.url + "/api/fail")
        assert TOKEN not in str(err.value) and TOKEN not in repr(err.value.to_wire())
    finally:
        await h.aclose()


# ---- bodies ---------------------------------------------------------------------------


async def test_size_caps(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(body=b"x" * 2000))
    with pytest.raises(ResponseTooLarge):
        await http.get(server.url + "/big", max_bytes=1000)
    server.push(Reply(body=b"x" * 1000))
    assert len((await http.get(server.url + "/ok", max_bytes=1000)).body) == 1000

    server.push(Reply(body=b"y" * 5000))
    with pytest.raises(ResponseTooLarge):
        async with http.stream(server.url + "/dl", max_bytes=4096) as s:
            async for _chunk in s.chunks():
                pass


async def test_stream_reads_the_body(http: Http, server: FakeHTTPServer) -> None:
    data = bytes(range(256)) * 4096
    server.push(Reply(302, headers={"location": "/cdn"}), Reply(body=data))
    got = bytearray()
    async with http.stream(server.url + "/dl", max_bytes=len(data)) as s:
        assert s.content_length == len(data)
        async for chunk in s.chunks(65536):
            got += chunk
    assert bytes(got) == data
    assert server.requests[1].headers.get("accept-encoding") == "identity"


async def test_status_errors(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(404, json={"message": "Not Found"}))
    with pytest.raises(HttpStatusError) as err:
        await http.get(server.url + "/missing")
    assert err.value.status == 404
    server.push(Reply(404, body=b"nope"))
    resp = await http.get(server.url + "/missing", accept_status=(404,))
    assert resp.status == 404 and resp.body == b"nope"
    server.push(Reply(404))
    with pytest.raises(HttpStatusError):
        async with http.stream(server.url + "/gone", max_bytes=10):
            pass


async def test_read_timeout(server: FakeHTTPServer) -> None:
    once = RetryPolicy(max_tries=1)  # retries have their own tests
    h = Http(settings=Settings(read_timeout=0.2, retry=once), allowed_hosts=lambda: {"127.0.0.1"})
    server.push(Reply(json={}, delay=2))
    try:
        with pytest.raises(HttpError, match=r"read timed out$"):
            await h.get(server.url + "/slow")
    finally:
        await h.aclose()


async def test_connection_refused_is_a_network_error(http: Http) -> None:
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(HttpError, match="cannot connect"):
        await http.get(f"http://127.0.0.1:{port}/x")


# ---- cache ----------------------------------------------------------------------------


async def test_cache_then_etag_revalidation(
    http: Http, server: FakeHTTPServer, clock: FixedClock
) -> None:
    server.push(Reply(json={"v": 1}, headers={"etag": '"abc"'}))
    first = await http.get(server.url + "/r", cache=True)
    again = await http.get(server.url + "/r", cache=True)
    assert again.json() == {"v": 1} and again.from_cache
    assert len(server.requests) == 1  # fresh: no request at all

    clock.advance(301)
    server.push(Reply(304, headers={"etag": '"abc"'}))
    revalidated = await http.get(server.url + "/r", cache=True)
    assert revalidated.revalidated and revalidated.body == first.body
    assert server.requests[-1].headers["if-none-match"] == '"abc"'

    clock.advance(301)
    server.push(Reply(json={"v": 2}, headers={"etag": '"def"'}))
    changed = await http.get(server.url + "/r", cache=True)
    assert changed.json() == {"v": 2} and not changed.from_cache
    assert http.stats["revalidated"] == 1 and http.stats["cache_hits"] == 1


async def test_uncached_requests_always_go_out(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(json=1), Reply(json=2))
    assert (await http.get(server.url + "/n")).json() == 1
    assert (await http.get(server.url + "/n")).json() == 2


# ---- rate limits ----------------------------------------------------------------------


def test_retry_after_parsing() -> None:
    now = 1_700_000_000.0
    assert retry_after_seconds({"retry-after": "7"}, now) == 7
    assert (
        retry_after_seconds(
            {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 90)}, now
        )
        == 90
    )
    assert retry_after_seconds({"x-ratelimit-remaining": "12"}, now) is None
    date = "Tue, 14 Nov 2023 22:13:50 GMT"  # 30 s after `now`
    assert retry_after_seconds({"retry-after": date}, now) == pytest.approx(30, abs=1)


async def test_primary_rate_limit_blocks_the_host(
    http: Http, server: FakeHTTPServer, clock: FixedClock
) -> None:
    reset = int(clock.now()) + 1800
    server.push(
        Reply(
            403,
            json={"message": "API rate limit exceeded"},
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
        )
    )
    with pytest.raises(HttpRateLimited) as err:
        await http.get(server.url + "/repos/a/b")
    assert err.value.retry_at == reset
    assert err.value.data["retry_at"].endswith("Z")
    # Later requests to the host fail fast, without spending quota.
    with pytest.raises(HttpRateLimited):
        await http.get(server.url + "/repos/c/d")
    assert len(server.requests) == 1
    clock.t = reset + 1
    server.push(Reply(json={"ok": 1}))
    assert (await http.get(server.url + "/repos/c/d")).json() == {"ok": 1}


async def test_short_retry_after_is_waited_out(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(429, headers={"retry-after": "0"}), Reply(json={"ok": True}))
    assert (await http.get(server.url + "/x")).json() == {"ok": True}
    assert len(server.requests) == 2


async def test_long_retry_after_raises(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(429, headers={"retry-after": "120"}))
    with pytest.raises(HttpRateLimited):
        await http.get(server.url + "/x")
    assert len(server.requests) == 1


async def test_a_rate_limit_blocks_its_origin_only(
    http: Http, server: FakeHTTPServer, clock: FixedClock
) -> None:
    """api.github.com's limit must not stop downloads from its asset host (here: the
    same loopback address on another port, a different origin)."""
    server.push(Reply(403, headers={"retry-after": "600"}))
    with pytest.raises(HttpRateLimited):
        await http.get(server.url + "/repos/a/b")
    with FakeHTTPServer(fallback=Reply(body=b"bytes")) as assets:
        async with http.stream(assets.url + "/asset", max_bytes=100) as s:
            assert b"".join([c async for c in s.chunks()]) == b"bytes"
    with pytest.raises(HttpRateLimited):
        await http.get(server.url + "/repos/c/d")
    assert len(server.requests) == 1


async def test_cache_refreshes_exactly_when_the_ttl_passes(
    server: FakeHTTPServer, mock_clock: trio.testing.MockClock
) -> None:
    """The cache reads the injected clock: a MockClock jump is all it takes."""
    h = Http(
        settings=Settings(cache_ttl=300), allowed_hosts=lambda: {"127.0.0.1"}, clock=TrioClock()
    )
    try:
        server.push(Reply(json={"v": 1}, headers={"etag": '"a"'}))
        await h.get(server.url + "/ttl", cache=True)
        mock_clock.jump(299)
        assert (await h.get(server.url + "/ttl", cache=True)).from_cache
        assert len(server.requests) == 1
        mock_clock.jump(1)
        server.push(Reply(json={"v": 2}, headers={"etag": '"b"'}))
        assert (await h.get(server.url + "/ttl", cache=True)).json() == {"v": 2}
        assert len(server.requests) == 2
        assert server.requests[-1].headers["if-none-match"] == '"a"'
    finally:
        await h.aclose()


# ---- DNS half of the URL policy -------------------------------------------------------


class Resolver:
    """Answers from a table instead of DNS, and counts the questions."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table
        self.asked: list[str] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append(host)
        if host not in self.table:
            raise OSError(f"[Errno -2] Name or service not known: {host}")
        return self.table[host]


_DNS = {
    "internal.example": ["10.0.0.5"],
    "metadata.example": ["169.254.169.254"],
    "metadata6.example": ["fd00:ec2::254"],
    "linklocal.example": ["fe80::1%eth0"],
    "loopback.example": ["127.0.0.1"],
    "mapped.example": ["::ffff:192.168.0.1"],
    "mixed.example": ["93.184.216.34", "10.1.2.3"],  # one private answer is enough
    "empty.example": [],
    "public.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "configured.example": ["10.9.9.9"],
}


@pytest.mark.parametrize(
    "host",
    [
        "internal.example",
        "metadata.example",
        "metadata6.example",
        "linklocal.example",
        "loopback.example",
        "mapped.example",
        "mixed.example",
        "empty.example",
    ],
)
async def test_a_name_resolving_to_a_private_address_is_refused(host: str) -> None:
    resolver = Resolver(_DNS)
    h = Http(allowed_hosts=frozenset, resolve=resolver)
    try:
        with pytest.raises(BlockedURL, match="resolves to a private or local address"):
            await h.get(f"https://{host}/x")
        assert resolver.asked == [host] and h.stats["requests"] == 0
    finally:
        await h.aclose()


async def test_public_names_pass_and_configured_endpoints_skip_the_check() -> None:
    resolver = Resolver(_DNS)
    h = Http(allowed_hosts=lambda: {"configured.example"}, resolve=resolver)
    try:
        await h.check_url("https://public.example/x")
        await h.check_url("https://configured.example/x")  # a private mirror, configured
        assert resolver.asked == ["public.example"]
        with pytest.raises(HttpError, match=r"cannot resolve nowhere\.example"):
            await h.check_url("https://nowhere.example/x")
        with pytest.raises(BlockedURL):  # loopback by name: not even asked
            await h.check_url("https://localhost/x")
        assert "localhost" not in resolver.asked
    finally:
        await h.aclose()


async def test_answers_are_kept_for_the_dns_ttl_on_the_injected_clock() -> None:
    resolver = Resolver(_DNS)
    clock = FixedClock(1_000_000.0)
    h = Http(settings=Settings(dns_ttl=60), allowed_hosts=frozenset, resolve=resolver, clock=clock)
    try:
        await h.check_url("https://public.example/a")
        clock.advance(59)
        await h.check_url("https://public.example/b")
        assert resolver.asked == ["public.example"]
        # The name now points inside: refused as soon as the cached answer expires.
        resolver.table = {**_DNS, "public.example": ["10.0.0.7"]}
        clock.advance(1)
        with pytest.raises(BlockedURL):
            await h.check_url("https://public.example/c")
        assert resolver.asked == ["public.example", "public.example"]
    finally:
        await h.aclose()


# ---- transient failures: tried again ---------------------------------------------------

QUICK = RetryPolicy(max_tries=5, base_delay=0.02, max_delay=0.05)


@pytest.fixture
async def retrying() -> AsyncIterator[Http]:
    h = Http(
        settings=Settings(read_timeout=0.3, total_timeout=2, retry=QUICK),
        allowed_hosts=lambda: {"127.0.0.1"},
        rng=random.Random(12),
    )
    yield h
    await h.aclose()


async def test_a_502_then_200_succeeds(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(502, body=b"bad gateway"), Reply(json={"ok": True}))
    resp = await retrying.get(server.url + "/api")
    assert resp.json() == {"ok": True}
    assert len(server.requests) == 2


async def test_a_reset_then_200_succeeds(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(disconnect=True), Reply(json={"ok": 1}))
    assert (await retrying.get(server.url + "/api")).json() == {"ok": 1}
    assert len(server.requests) == 2


async def test_a_timeout_then_200_succeeds(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(json={}, delay=1.5), Reply(json={"late": False}))
    assert (await retrying.get(server.url + "/api")).json() == {"late": False}


async def test_a_503_with_retry_after_waits_as_told(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(503, headers={"retry-after": "1"}), Reply(json={"up": True}))
    started = trio.current_time()
    assert (await retrying.get(server.url + "/api")).json() == {"up": True}
    # The policy alone would have waited at most 0.05 s.
    assert trio.current_time() - started >= 1.0
    assert len(server.requests) == 2


async def test_five_failures_say_five_tries(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(*[Reply(503, body=b"down")] * 5, Reply(json={"never": "asked"}))
    with pytest.raises(HttpStatusError) as err:
        await retrying.get(server.url + "/api")
    assert err.value.status == 503
    assert err.value.message.endswith("HTTP 503 (gave up after 5 tries)")
    assert err.value.data["tries"] == 5
    assert len(server.requests) == 5


async def test_five_resets_say_five_tries(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(*[Reply(disconnect=True)] * 5)
    with pytest.raises(HttpError, match=r"\(gave up after 5 tries\)$"):
        await retrying.get(server.url + "/api")
    assert len(server.requests) == 5


async def test_a_refusal_is_not_retried(retrying: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(404, body=b"no"), Reply(json={}))
    with pytest.raises(HttpStatusError) as err:
        await retrying.get(server.url + "/missing")
    assert err.value.status == 404 and "tries" not in err.value.message
    assert len(server.requests) == 1


async def test_an_accepted_5xx_is_returned_not_retried(
    retrying: Http, server: FakeHTTPServer
) -> None:
    server.push(Reply(502), Reply(json={}))
    assert (await retrying.get(server.url + "/x", accept_status=(502,))).status == 502
    assert len(server.requests) == 1


async def test_a_non_idempotent_request_is_tried_once(
    retrying: Http, server: FakeHTTPServer
) -> None:
    tries = 0

    async def post() -> None:
        nonlocal tries
        tries += 1
        raise _TryAgain(HttpError("reset", url=server.url))

    with pytest.raises(HttpError, match=r"^reset$"):
        await retrying._retrying(server.url, post, retrying._policy("POST"))
    assert tries == 1
    assert not may_retry("POST") and not may_retry("PATCH") and may_retry("get")


def test_waits_grow_with_jitter_and_repeat_under_a_seed() -> None:
    policy = RetryPolicy(max_tries=6, base_delay=1.0, max_delay=4.0, max_elapsed=1000)

    def waits(seed: int) -> list[float | None]:
        rng = random.Random(seed)
        return [next_delay(policy, n, 0.0, rng) for n in range(1, 6)]

    first = waits(3)
    assert first == waits(3) and first != waits(4)
    for n, wait in enumerate(first, start=1):
        ceiling = min(4.0, 2.0 ** (n - 1))
        assert wait is not None and ceiling / 2 <= wait <= ceiling


def test_tries_and_time_are_bounded_and_retry_after_is_honoured() -> None:
    policy = RetryPolicy(max_tries=3, max_elapsed=10.0)
    rng = random.Random(0)
    assert next_delay(policy, 3, 0.0, rng) is None  # three tries made: no fourth
    assert next_delay(policy, 1, 0.0, rng, retry_after=7.0) == 7.0
    assert next_delay(policy, 1, 4.0, rng, retry_after=7.0) is None  # would end past 10 s
    assert next_delay(policy, 1, 9.9, rng) is None


async def test_a_caller_with_its_own_retries_still_waits_out_one_short_rate_limit(
    retrying: Http, server: FakeHTTPServer
) -> None:
    server.push(Reply(502))
    with pytest.raises(HttpStatusError, match=r"HTTP 502$"):  # one try, no "tries" note
        await retrying.get(server.url + "/search", retry=False)
    server.push(Reply(429, headers={"retry-after": "0"}), Reply(json={"ok": 1}))
    assert (await retrying.get(server.url + "/search", retry=False)).json() == {"ok": 1}
    assert len(server.requests) == 3


async def test_an_oversized_response_head_is_refused_once_not_retried(http: Http) -> None:
    # Issue 31: an 8 MiB header was retried five times (5.9 s) before h11's "Receive
    # buffer too long"; the same server sends the same head every time.
    connections = 0

    async def serve(stream: trio.SocketStream) -> None:
        nonlocal connections
        connections += 1
        with trio.move_on_after(5):
            await stream.receive_some(65536)
            await stream.send_all(b"HTTP/1.1 200 OK\r\nX-Big: ")
            try:
                for _ in range(8 * 64):  # 8 MiB in 16 KiB pieces, until the client goes
                    await stream.send_all(b"a" * 16384)
            except trio.BrokenResourceError:
                pass
        await stream.aclose()

    async with trio.open_nursery() as nursery:
        (listener,) = await nursery.start(
            functools.partial(trio.serve_tcp, serve, 0, host="127.0.0.1")
        )
        port = listener.socket.getsockname()[1]
        started = trio.current_time()
        with pytest.raises(HttpError) as err:
            await http.get(f"http://127.0.0.1:{port}/big-head")
        nursery.cancel_scope.cancel()
    assert "larger than 16 KiB" in err.value.message and "without trying again" in err.value.message
    assert err.value.hint and "hostile" in err.value.hint
    assert connections == 1
    assert trio.current_time() - started < 2


def test_a_configured_package_registry_may_be_private(tmp_path: Path) -> None:
    """A company's npm mirror on a private address (discover.npm_url): create reads a
    package's metadata through the shared client, so its host is an endpoint there too,
    not only in discovery's client (it was refused: 'resolves to a private address')."""
    from tsukud import config as configmod
    from tsukud.daemon import Daemon

    env = {
        "TSUKU_HOME": str(tmp_path),
        "HOME": str(tmp_path),
        "TSUKU_NPM_URL": "https://npm.corp.example",
    }
    d = Daemon(config=configmod.resolve(env=env), env=env)  # not opened: no ledger read
    allowed = d.services.http._allowed_hosts()
    assert "npm.corp.example" in allowed and "api.github.com" in allowed
