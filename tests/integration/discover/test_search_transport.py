"""The web search providers (DuckDuckGo, Tavily, Brave) when the transport fails: a
refused connection, an answer that never comes, and a 200 whose body is garbage.

Real ``Web``/``Http`` clients against a closed loopback port and the fake search server.
Failures are typed (``DiscoverySearchFailed``, retryable) after the configured retries
(a refused loopback port at once: no retry fixes it); garbage is no results, never a crash.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.conftest import CLOSED_PORT
from tests.fakes.http import Reply
from tests.fakes.search import FakeSearch
from tsukud.discover.errors import DiscoverySearchFailed
from tsukud.discover.search import Brave, DuckDuckGo, Tavily
from tsukud.discover.web import Web
from tsukud.net.http import Http, Settings
from tsukud.net.retry import RetryPolicy

PROVIDERS = ("ddg", "tavily", "brave")
PATHS = {"ddg": "/html/", "tavily": "/tavily/search", "brave": "/brave/res/v1/web/search"}
LABELS = {"ddg": "DuckDuckGo", "tavily": "Tavily", "brave": "Brave"}
# Brave GETs through the shared Http layer, the others POST through Web's own client,
# and the two name a refused connection differently.
REFUSED = {"ddg": "cannot connect", "tavily": "cannot connect", "brave": "cannot connect"}


@pytest.fixture
def search() -> Iterator[FakeSearch]:
    with FakeSearch() as s:
        yield s


@pytest.fixture
async def web() -> AsyncIterator[Web]:
    fast = Settings(
        connect_timeout=0.5,
        read_timeout=0.5,
        total_timeout=1.0,
        retry=RetryPolicy(max_tries=1),  # the timeout itself is under test
    )
    http = Http(settings=fast, allowed_hosts=lambda: ["127.0.0.1"])
    w = Web(http, timeout=0.5)
    try:
        yield w
    finally:
        await w.aclose()
        await http.aclose()


class Sleeps:
    """The backoff waits, recorded instead of slept."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def provider(name: str, web: Web, base: str, sleep: Sleeps) -> DuckDuckGo | Tavily | Brave:
    url = base + PATHS[name]
    kw = {"max_retries": 2, "backoff_base": 0.01, "sleep": sleep}
    if name == "ddg":
        return DuckDuckGo(web, url, **kw)  # type: ignore[arg-type]
    cls = Tavily if name == "tavily" else Brave
    return cls(web, url, "test-search-key", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", PROVIDERS)
async def test_refused_connection_is_a_retryable_search_error_tried_once(
    web: Web, name: str
) -> None:
    """Nothing listens on a loopback port: no wait would change that (tsukud.net.retry),
    so the search fails at once, with the offline hint; a later search may succeed."""
    sleep = Sleeps()
    with pytest.raises(DiscoverySearchFailed) as info:
        await provider(name, web, CLOSED_PORT, sleep).search("stripe-cli github")
    err = info.value
    assert err.message.startswith(f"{LABELS[name]} search failed: ")
    assert REFUSED[name] in err.message and "connection refused" in err.message
    assert err.retryable and err.data["provider"] == name
    assert err.hint.startswith("Offline? 127.0.0.1 cannot be reached")
    assert sleep.waits == []  # tried once: was three tries, backing off between


@pytest.mark.parametrize("name", PROVIDERS)
async def test_an_answer_that_never_comes_times_out(
    web: Web, search: FakeSearch, name: str
) -> None:
    sleep = Sleeps()
    search.push(*[Reply(json={"results": []}, delay=5) for _ in range(3)])
    with pytest.raises(DiscoverySearchFailed) as info:
        await provider(name, web, search.url, sleep).search("stripe-cli github")
    assert "timed out" in info.value.message and info.value.retryable
    assert len(search.searches(name)) == 3 and len(sleep.waits) == 2


@pytest.mark.parametrize(
    "body",
    [
        b"\x00\xff\xfegarbage{{{",
        b'{"results": "not a list", "web": 7}',
        b"<html><body><div class='result'><a class='result__a'>no href</a></div>",
        b"",
    ],
)
@pytest.mark.parametrize("name", PROVIDERS)
async def test_garbage_is_no_results(web: Web, search: FakeSearch, name: str, body: bytes) -> None:
    sleep = Sleeps()
    search.push(Reply(body=body, headers={"content-type": "application/json"}))
    response = await provider(name, web, search.url, sleep).search("stripe-cli github")
    assert response.results == ()
    assert response.attempts == 1 and sleep.waits == []


@pytest.mark.parametrize("name", PROVIDERS)
async def test_a_dropped_connection_then_an_answer_recovers(
    web: Web, search: FakeSearch, name: str
) -> None:
    sleep = Sleeps()
    search.push(Reply(disconnect=True))
    response = await provider(name, web, search.url, sleep).search("stripe-cli github")
    assert response.attempts == 2 and len(sleep.waits) == 1
    assert any("stripe" in r.url for r in response.results), response.results
