"""The fake HTTP server base, spoken to by a real client (urllib): scripted replies,
failure injection, and refusals recorded as violations that fail the test unless
claimed."""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.waiting import wait_until
from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply, take_violations


def get(url: str, *, timeout: float = 5.0, headers: dict[str, str] | None = None) -> bytes:
    request = urllib.request.Request(url, headers=headers or {})
    with urllib.request.urlopen(request, timeout=timeout) as resp:
        return bytes(resp.read())


def test_requests_are_recorded_as_received_and_scripts_run_in_order() -> None:
    with FakeHTTPServer(fallback=Reply(404, body=b"no")) as server:
        server.push(Reply(json={"n": 1}), lambda r: Reply(body=r.route.encode()))
        assert get(f"{server.url}/a?x=1", headers={"X-Thing": "v"}) == b'{"n": 1}'
        assert get(f"{server.url}/b/c?y=2") == b"/b/c"
        with pytest.raises(urllib.error.HTTPError) as err:
            get(f"{server.url}/d")
        assert err.value.code == 404 and server.pending == 0
    first = server.requests[0]
    assert (first.method, first.path, first.route) == ("GET", "/a?x=1", "/a")
    assert first.query == {"x": ["1"]} and first.headers["x-thing"] == "v"


def test_an_unscripted_request_fails_loudly() -> None:
    with FakeHTTPServer() as server, pytest.raises(urllib.error.HTTPError) as err:
        get(server.url + "/anything")
    assert err.value.code == 599 and b"no reply scripted for /anything" in err.value.read()


def test_failures_injected_mid_body(tmp_path: Path) -> None:
    data = bytes(range(256)) * 400  # 100 KiB
    big = tmp_path / "big.bin"
    big.write_bytes(data)
    with FakeHTTPServer() as server:
        server.push(Reply(file=big), Reply(body=data, rate=1_000_000.0))
        assert get(server.url) == data  # from the file, by sendfile
        assert get(server.url) == data  # trickled, same bytes
        server.push(Reply(disconnect=True))
        with pytest.raises((http.client.RemoteDisconnected, urllib.error.URLError)):
            get(server.url)
        server.push(Reply(body=data, stall_after=1000))
        with urllib.request.urlopen(server.url, timeout=0.5) as resp:
            assert resp.headers["content-length"] == str(len(data))
            assert resp.read(1000) == data[:1000]
            with pytest.raises((TimeoutError, socket.timeout)):
                resp.read(1)  # the rest never comes


def test_hurry_sends_the_answers_waiting_out_a_delay_and_later_ones_still_wait() -> None:
    """``hurry()`` ends the delays begun before it (a test lets a busy worker go), not the
    ones asked for afterwards; closing still drops a waiting request."""
    with FakeHTTPServer(fallback=Reply(body=b"late", delay=60.0)) as server:
        got: list[bytes] = []
        waiting = threading.Thread(target=lambda: got.append(get(server.url + "/a", timeout=30)))
        waiting.start()
        wait_until(lambda: server.requests, "the request asked")
        assert not got  # waiting out its delay
        hurried = time.monotonic()
        server.hurry()
        waiting.join(timeout=10)
        assert got == [b"late"] and time.monotonic() - hurried < 5
        server.fallback = Reply(body=b"later", delay=0.4)
        asked = time.monotonic()
        assert get(server.url + "/b") == b"later"
        assert time.monotonic() - asked >= 0.35  # a hurry before it did not shorten it


def test_a_refusal_is_answered_and_recorded_until_claimed() -> None:
    def strict(request: RecordedRequest) -> Reply:
        if "authorization" not in request.headers:
            return server.reject(request, "needs a key", Reply(401, json={"error": "no key"}))
        return Reply(json={"ok": True})

    server = FakeHTTPServer(fallback=strict, role="strict").start()
    try:
        with pytest.raises(urllib.error.HTTPError) as err:
            get(server.url + "/x")
        assert err.value.code == 401
        assert get(server.url + "/x", headers={"Authorization": "k"}) == b'{"ok": true}'
        (seen,) = take_violations()  # what the tests' autouse fixture checks
        assert str(seen) == "strict: GET /x: needs a key"
        assert server.take_violations() == [] and take_violations() == []
    finally:
        server.close()


def test_leaving_the_block_with_an_unclaimed_refusal_fails() -> None:
    with (
        pytest.raises(AssertionError, match="needs a key"),
        FakeHTTPServer(fallback=Reply()) as server,
    ):
        server.reject(RecordedRequest("GET", "/x", {}), "needs a key", Reply(401))
    assert take_violations() == []  # closed fakes are no longer watched


def test_an_unclaimed_refusal_fails_the_test_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("from tests.conftest import fakes_saw_no_refused_request  # noqa")
    pytester.makepyfile(
        """
        import pytest
        from tsukud.testing.http import FakeHTTPServer, RecordedRequest, Reply

        @pytest.fixture(scope="module")
        def server():
            with FakeHTTPServer(fallback=Reply()) as s:
                yield s

        def test_ignores_the_complaint(server):
            server.reject(RecordedRequest("GET", "/x", {}, role="gh"), "bad token", Reply(401))

        def test_claims_it(server):
            server.reject(RecordedRequest("GET", "/y", {}), "bad token", Reply(401))
            assert len(server.take_violations()) == 1
        """
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*gh: GET /x: bad token*"])
