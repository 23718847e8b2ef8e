"""Failures to connect that retrying cannot fix fail at once, with the typed error and
a hint; those retrying fixes (a reset, a timeout, a 5xx) are still tried again.

The offline case is measured against a real loopback port with nothing listening, under
the production retry policy (five tries, about 7 s of waits when it was retried)."""

from __future__ import annotations

import errno
import socket
from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from tests.fakes.http import FakeHTTPServer, Reply
from tsukud.errors import CATALOGUE
from tsukud.net.http import Http, HttpUnreachable, Settings, TransientHttpError
from tsukud.net.proxy import Proxies
from tsukud.net.retry import RetryPolicy, unreachable

QUICK = RetryPolicy(max_tries=5, base_delay=0.02, max_delay=0.05)


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as s:
        yield s


async def _dead_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with trio.socket.socket() as s:
        await s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def production() -> AsyncIterator[Http]:
    """The daemon's own retry policy (``Settings()``'s), on loopback."""
    h = Http(allowed_hosts=lambda: {"127.0.0.1"})
    assert h.settings.retry == RetryPolicy()  # five tries, waits of seconds
    yield h
    await h.aclose()


async def test_nothing_listening_on_loopback_fails_at_once(production: Http) -> None:
    url = f"http://127.0.0.1:{await _dead_port()}/repos/o/r/releases"
    started = trio.current_time()
    with pytest.raises(HttpUnreachable) as err:
        await production.get(url)
    assert trio.current_time() - started < 2.0  # retried, it took about 7 s
    e = err.value
    assert e.code == "network_unreachable" and e.never_sent
    assert "connection refused" in e.message and "tries" not in e.message
    assert e.hint.startswith("Offline? 127.0.0.1 cannot be reached")
    assert "github.api_url" in e.hint
    assert e.retryable  # a later request may succeed: the network comes back
    assert CATALOGUE["network_unreachable"].exit_code == 5


async def test_a_download_from_nothing_listening_fails_at_once(production: Http) -> None:
    url = f"http://127.0.0.1:{await _dead_port()}/tool-1.0.tar.gz"
    started = trio.current_time()
    with pytest.raises(HttpUnreachable):
        async with production.stream(url, max_bytes=1024):
            pass
    assert trio.current_time() - started < 2.0


async def test_a_loopback_proxy_nothing_listens_on_fails_at_once(server: FakeHTTPServer) -> None:
    """A local proxy (127.0.0.1:3128, say) that is not running stays so for seconds."""
    dead = f"http://127.0.0.1:{await _dead_port()}"
    h = Http(allowed_hosts=lambda: {"127.0.0.1"}, proxies=lambda: Proxies(http=dead))
    started = trio.current_time()
    try:
        with pytest.raises(HttpUnreachable) as err:
            await h.get(server.url + "/api")
    finally:
        await h.aclose()
    assert trio.current_time() - started < 2.0
    assert f"through the proxy {dead}" in err.value.message
    assert err.value.hint.startswith("Check the proxy settings")
    assert server.requests == []


async def test_a_server_that_resets_twice_then_answers_succeeds(server: FakeHTTPServer) -> None:
    h = Http(settings=Settings(retry=QUICK), allowed_hosts=lambda: {"127.0.0.1"})
    try:
        server.push(Reply(disconnect=True), Reply(disconnect=True), Reply(json={"ok": 1}))
        assert (await h.get(server.url + "/api")).json() == {"ok": 1}
        assert len(server.requests) == 3
    finally:
        await h.aclose()


# ---- the rule, over the operating system's errors ---------------------------------------


def _connect_error(*per_address: OSError) -> BaseException:
    """What httpx2 raises over trio: ConnectError ← OSError ← a group of one error per
    address tried (a name that does not resolve: the gaierror alone)."""
    if len(per_address) == 1 and isinstance(per_address[0], socket.gaierror):
        inner: BaseException = per_address[0]
    else:
        inner = OSError("all attempts to connect failed")
        inner.__cause__ = ExceptionGroup("all attempts", list(per_address))
    outer = RuntimeError("ConnectError")
    outer.__cause__ = inner
    return outer


def _os(code: int) -> OSError:
    return OSError(code, errno.errorcode.get(code, "?"))


@pytest.mark.parametrize(
    ("failure", "loopback", "why"),
    [
        (socket.gaierror(socket.EAI_NONAME, "Name or service not known"), False, "resolve"),
        (socket.gaierror(socket.EAI_AGAIN, "Temporary failure"), False, "resolve"),
        (_os(errno.ENETUNREACH), False, "no route"),
        (_os(errno.ECONNREFUSED), True, "connection refused"),
    ],
)
def test_what_retrying_cannot_fix(failure: OSError, loopback: bool, why: str) -> None:
    assert why in (unreachable(_connect_error(failure), loopback=loopback) or "")


@pytest.mark.parametrize(
    ("failures", "loopback"),
    [
        ((_os(errno.ECONNREFUSED),), False),  # a remote server restarting
        ((_os(errno.ECONNRESET),), True),
        ((_os(errno.ETIMEDOUT),), False),
        ((_os(errno.EHOSTUNREACH),), False),
        # One address had no route (no IPv6), the other timed out: worth another try.
        ((_os(errno.ENETUNREACH), _os(errno.ETIMEDOUT)), False),
        ((socket.gaierror(socket.EAI_MEMORY, "out of memory"),), False),
    ],
)
def test_what_retrying_may_fix(failures: tuple[OSError, ...], loopback: bool) -> None:
    assert unreachable(_connect_error(*failures), loopback=loopback) is None


def test_no_os_error_is_not_called_unreachable() -> None:
    assert unreachable(TransientHttpError("reset"), loopback=True) is None
