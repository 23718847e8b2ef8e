"""Which proxy a request takes (tsukud/net/proxy.py), and the HTTP client taking it:
a real forwarding proxy on loopback records what passed through it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes.proxy import ForwardingProxy
from tsukud import config
from tsukud.errors import ConfigError
from tsukud.net.http import BlockedURL, Http, HttpError, Settings
from tsukud.net.proxy import Proxies, bypassed, checked, proxies, proxy_for
from tsukud.net.retry import RetryPolicy
from tsukud.testing.http import FakeHTTPServer, Reply

P = "http://proxy.example:3128"


def test_the_targets_scheme_picks_the_variable_and_all_proxy_is_the_fallback() -> None:
    both = Proxies(https=P, http="http://plain.example:8080")
    assert proxy_for("https://api.github.com/x", both) == P
    assert proxy_for("http://127.0.0.1:9/x", both) == "http://plain.example:8080"
    assert proxy_for("https://api.github.com/x", Proxies(http=P)) is None
    assert proxy_for("https://api.github.com/x", Proxies(all=P)) == P
    assert proxy_for("http://127.0.0.1:9/x", Proxies(https="http://h:1", all=P)) == P
    assert proxy_for("https://api.github.com/x", Proxies()) is None


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "direct"),
    [
        ("github.com", 443, "*", True),
        ("api.github.com", 443, "github.com", True),  # subdomains too
        ("api.github.com", 443, ".github.com", True),
        ("api.github.com", 443, "*.github.com", True),
        ("github.com", 443, ".github.com", True),
        ("notgithub.com", 443, "github.com", False),
        ("github.com.evil", 443, "github.com", False),
        ("127.0.0.1", 80, "localhost, 127.0.0.1", True),  # spaces and commas
        ("127.0.0.1", 80, "localhost 127.0.0.1", True),
        ("127.0.0.1", 80, "localhost", False),  # names do not match addresses
        ("10.1.2.3", 443, "10.0.0.0/8", True),
        ("11.1.2.3", 443, "10.0.0.0/8", False),
        ("::1", 443, "::1", True),
        ("::1", 443, "[::1]:443", True),
        ("::1", 80, "[::1]:443", False),
        ("mirror.example", 8080, "mirror.example:8080", True),
        ("mirror.example", 443, "mirror.example:8080", False),
        ("example.com", 443, "", False),
        ("example.com", 443, ",,", False),
    ],
)
def test_no_proxy(host: str, port: int, no_proxy: str, direct: bool) -> None:
    assert bypassed(host, port, no_proxy) is direct
    expected = None if direct else P
    scheme = "https" if port == 443 else "http"
    shown = f"[{host}]" if ":" in host else host
    assert proxy_for(f"{scheme}://{shown}:{port}/", Proxies(all=P, no_proxy=no_proxy)) == expected


@pytest.mark.parametrize(
    "value",
    ["socks5://127.0.0.1:1080", "127.0.0.1:3128", "http://", "ftp://p:21", "http://p:port"],
)
def test_a_proxy_tsuku_cannot_use_is_an_error_naming_the_variable(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        checked(value, "HTTPS_PROXY")
    assert caught.value.message.startswith("HTTPS_PROXY: ")
    assert "unset it" in (caught.value.hint or "")


def test_a_proxys_password_is_not_repeated_in_the_error() -> None:
    with pytest.raises(ConfigError) as caught:
        checked("socks5://me:hunter2secret@127.0.0.1:1080", "ALL_PROXY")
    assert "hunter2secret" not in caught.value.message
    assert "127.0.0.1:1080" in caught.value.message


def test_the_callers_value_beats_the_daemons_which_beats_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[net]\nhttps_proxy = "http://file.example:1"\nno_proxy = "internal"\n')
    cfg.chmod(0o600)
    from_file = config.resolve(env={}, path=cfg)
    assert proxies(from_file) == Proxies(https="http://file.example:1", no_proxy="internal")
    daemon = config.resolve(env={"HTTPS_PROXY": "http://daemon.example:2"}, path=cfg)
    assert proxies(daemon).https == "http://daemon.example:2"
    # Lower case wins over upper case, as urllib and curl read them.
    both = {"HTTPS_PROXY": "http://upper.example:3", "https_proxy": "http://lower.example:4"}
    assert proxies(daemon.with_caller_env(both)).https == "http://lower.example:4"
    caller = daemon.with_caller_env({"HTTPS_PROXY": "http://caller.example:5", "NO_PROXY": "*"})
    assert proxies(caller) == Proxies(https="http://caller.example:5", no_proxy="*")
    assert caller.setting("net.https_proxy").source == "caller:HTTPS_PROXY"
    with pytest.raises(ConfigError, match=r"^HTTPS_PROXY: 'socks5://"):
        proxies(daemon.with_caller_env({"HTTPS_PROXY": "socks5://127.0.0.1:1"}))


# ---- the HTTP client through a real proxy --------------------------------------------


@pytest.fixture
def proxy() -> Iterator[ForwardingProxy]:
    with ForwardingProxy() as p:
        yield p


@pytest.fixture
def target() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer(fallback=Reply(json={"ok": True})) as s:
        yield s


class Settable:
    """The proxies in force, changed by the test between requests (as requests from
    different callers would)."""

    def __init__(self) -> None:
        self.now = Proxies()

    def __call__(self) -> Proxies:
        return self.now


@pytest.fixture
async def routed() -> AsyncIterator[tuple[Http, Settable]]:
    chosen = Settable()
    h = Http(
        settings=Settings(retry=RetryPolicy(max_tries=1)),
        allowed_hosts=lambda: {"127.0.0.1", "tools.example.test"},
        proxies=chosen,
    )
    yield h, chosen
    await h.aclose()


async def test_requests_go_through_the_proxy_in_force_for_each(
    routed: tuple[Http, Settable], proxy: ForwardingProxy, target: FakeHTTPServer
) -> None:
    http, chosen = routed
    assert (await http.get(f"{target.url}/direct")).json() == {"ok": True}
    assert proxy.requests == []

    chosen.now = Proxies(http=proxy.url)
    assert (await http.get(f"{target.url}/via?q=1")).json() == {"ok": True}
    assert proxy.urls() == [f"{target.url}/via?q=1"]
    assert [r.path for r in target.requests] == ["/direct", "/via?q=1"]  # forwarded
    assert target.requests[1].headers["user-agent"].startswith("tsuku/")

    chosen.now = Proxies(http=proxy.url, no_proxy="127.0.0.1")
    await http.get(f"{target.url}/listed")
    chosen.now = Proxies()
    await http.get(f"{target.url}/after")
    assert proxy.urls() == [f"{target.url}/via?q=1"]  # neither went through it
    assert len(target.requests) == 4


async def test_a_search_providers_post_goes_through_the_proxy_too(
    routed: tuple[Http, Settable], proxy: ForwardingProxy
) -> None:
    """Tavily, Brave and DuckDuckGo POST: a caller's HTTPS_PROXY carries its searches as it
    carries its GETs (they once had a client of their own that knew no proxy)."""
    from tsukud.discover.search import Tavily
    from tsukud.discover.web import Web

    found = {"results": [{"title": "stern", "url": "https://github.com/stern/stern"}]}
    http, chosen = routed
    with FakeHTTPServer(fallback=Reply(json=found)) as search:
        tavily = Tavily(Web(http), f"{search.url}/search", "tvly-test-key", max_retries=0)
        chosen.now = Proxies(http=proxy.url)
        results = await tavily.search("stern kubernetes logs")
        assert [r.url for r in results.results] == ["https://github.com/stern/stern"]
        assert proxy.urls() == [f"{search.url}/search"]
        assert [r.method for r in proxy.requests] == ["POST"]
        (arrived,) = search.requests  # forwarded with its body and key
        assert b"stern kubernetes logs" in arrived.body
        assert arrived.headers["authorization"] == "Bearer tvly-test-key"

        chosen.now = Proxies(http=proxy.url, no_proxy="127.0.0.1")
        await tavily.search("again")
        assert len(proxy.requests) == 1 and len(search.requests) == 2  # direct this time


async def test_an_https_target_asks_the_proxy_for_a_tunnel(
    routed: tuple[Http, Settable], proxy: ForwardingProxy
) -> None:
    http, chosen = routed
    chosen.now = Proxies(https=proxy.url)
    # The name is an allowed endpoint, so no DNS here; only the proxy is connected to.
    with pytest.raises(HttpError) as caught:
        await http.get("https://tools.example.test/releases")
    assert proxy.urls() == ["CONNECT tools.example.test:443"]
    assert f"through the proxy {proxy.url}" in caught.value.message
    assert "HTTPS_PROXY" in (caught.value.hint or "")


async def test_the_url_policy_still_holds_for_the_target(
    routed: tuple[Http, Settable], proxy: ForwardingProxy
) -> None:
    http, chosen = routed
    chosen.now = Proxies(all=proxy.url)
    for url in ("http://example.com/x", "https://169.254.169.254/latest", "https://10.0.0.1/"):
        with pytest.raises(BlockedURL):
            await http.get(url)
    assert proxy.requests == []


async def test_a_name_only_the_proxy_can_resolve_is_left_to_it(proxy: ForwardingProxy) -> None:
    async def no_dns(host: str, port: int) -> list[str]:
        raise OSError("no DNS outside the proxy")

    async def private(host: str, port: int) -> list[str]:
        return ["10.1.2.3"]

    chosen = Settable()
    quick = Settings(retry=RetryPolicy(max_tries=1))
    h = Http(settings=quick, resolve=no_dns, proxies=chosen)
    try:
        with pytest.raises(HttpError, match="cannot resolve"):
            await h.get("https://unresolvable.example/x")  # direct: refused here
        chosen.now = Proxies(https=proxy.url)
        with pytest.raises(HttpError, match="through the proxy"):
            await h.get("https://unresolvable.example/x")
        assert proxy.urls() == ["CONNECT unresolvable.example:443"]
    finally:
        await h.aclose()
    h = Http(settings=quick, resolve=private, proxies=lambda: Proxies(https=proxy.url))
    try:
        with pytest.raises(BlockedURL, match="private or local"):
            await h.get("https://intranet.example/x")
    finally:
        await h.aclose()
    assert len(proxy.requests) == 1


async def test_pools_are_kept_per_proxy_and_bounded(
    routed: tuple[Http, Settable], target: FakeHTTPServer
) -> None:
    from tsukud.net import http as http_module

    http, chosen = routed
    proxies_ = [ForwardingProxy().start() for _ in range(http_module.MAX_PROXIES + 1)]
    try:
        for p in proxies_:
            chosen.now = Proxies(http=p.url)
            await http.get(f"{target.url}/x")
            await http.get(f"{target.url}/y")
        assert all(p.urls() == [f"{target.url}/x", f"{target.url}/y"] for p in proxies_)
        assert len(http._proxied) == http_module.MAX_PROXIES
        assert proxies_[0].url not in http._proxied
    finally:
        for p in proxies_:
            p.close()
