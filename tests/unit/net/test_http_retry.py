"""Transient failures retried: idempotent requests that meet a 5xx, a reset connection
or a timeout are tried again with jittered, growing waits (honouring ``retry-after``),
bounded in count and time, against real loopback servers; the last error says how many
tries were made."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio

from tests.fakes.http import FakeHTTPServer, Reply
from tsukud.install.download import DownloadError, download
from tsukud.net.http import Http, HttpError, HttpStatusError, Settings, _TryAgain
from tsukud.net.retry import RetryPolicy, may_retry, next_delay

QUICK = RetryPolicy(max_tries=5, base_delay=0.02, max_delay=0.05)


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as s:
        yield s


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = Http(
        settings=Settings(read_timeout=0.3, total_timeout=2, retry=QUICK),
        allowed_hosts=lambda: {"127.0.0.1"},
        rng=random.Random(12),
    )
    yield h
    await h.aclose()


async def test_a_502_then_200_succeeds(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(502, body=b"bad gateway"), Reply(json={"ok": True}))
    resp = await http.get(server.url + "/api")
    assert resp.json() == {"ok": True}
    assert len(server.requests) == 2


async def test_a_reset_then_200_succeeds(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(disconnect=True), Reply(json={"ok": 1}))
    assert (await http.get(server.url + "/api")).json() == {"ok": 1}
    assert len(server.requests) == 2


async def test_a_timeout_then_200_succeeds(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(json={}, delay=1.5), Reply(json={"late": False}))
    assert (await http.get(server.url + "/api")).json() == {"late": False}


async def test_a_503_with_retry_after_waits_as_told(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(503, headers={"retry-after": "1"}), Reply(json={"up": True}))
    started = trio.current_time()
    assert (await http.get(server.url + "/api")).json() == {"up": True}
    # The policy alone would have waited at most 0.05 s.
    assert trio.current_time() - started >= 1.0
    assert len(server.requests) == 2


async def test_five_failures_say_five_tries(http: Http, server: FakeHTTPServer) -> None:
    server.push(*[Reply(503, body=b"down")] * 5, Reply(json={"never": "asked"}))
    with pytest.raises(HttpStatusError) as err:
        await http.get(server.url + "/api")
    assert err.value.status == 503
    assert err.value.message.endswith("HTTP 503 (gave up after 5 tries)")
    assert err.value.data["tries"] == 5
    assert len(server.requests) == 5


async def test_five_resets_say_five_tries(http: Http, server: FakeHTTPServer) -> None:
    server.push(*[Reply(disconnect=True)] * 5)
    with pytest.raises(HttpError, match=r"\(gave up after 5 tries\)$"):
        await http.get(server.url + "/api")
    assert len(server.requests) == 5


async def test_a_refusal_is_not_retried(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(404, body=b"no"), Reply(json={}))
    with pytest.raises(HttpStatusError) as err:
        await http.get(server.url + "/missing")
    assert err.value.status == 404 and "tries" not in err.value.message
    assert len(server.requests) == 1


async def test_an_accepted_5xx_is_returned_not_retried(http: Http, server: FakeHTTPServer) -> None:
    server.push(Reply(502), Reply(json={}))
    assert (await http.get(server.url + "/x", accept_status=(502,))).status == 502
    assert len(server.requests) == 1


async def test_a_non_idempotent_request_is_tried_once(http: Http, server: FakeHTTPServer) -> None:
    tries = 0

    async def post() -> None:
        nonlocal tries
        tries += 1
        raise _TryAgain(HttpError("reset", url=server.url))

    with pytest.raises(HttpError, match=r"^reset$"):
        await http._retrying(server.url, post, http._policy("POST"))
    assert tries == 1
    assert not may_retry("POST") and not may_retry("PATCH") and may_retry("get")


async def test_a_download_is_retried_until_its_body_starts(
    http: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    server.push(Reply(502), Reply(disconnect=True), Reply(body=b"tool" * 1000))
    result = await download(http, server.url + "/t.tar.gz", tmp_path / "t")
    assert result.size == 4000 and (tmp_path / "t").read_bytes() == b"tool" * 1000
    assert len(server.requests) == 3


async def test_a_download_that_keeps_failing_says_how_often_it_tried(
    http: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    server.push(*[Reply(500)] * 5)
    with pytest.raises(DownloadError) as err:
        await download(http, server.url + "/t.tar.gz", tmp_path / "t")
    assert err.value.message.endswith("HTTP 500 (gave up after 5 tries)")
    assert len(server.requests) == 5


# ---- the policy -----------------------------------------------------------------------


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
