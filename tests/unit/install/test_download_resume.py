"""A download whose body breaks part-way is tried again: resumed with a range request
where the host serves ranges, started over where it does not, and given up on (saying
how often it was tried) when it keeps breaking. The host is the shipped fake download
host, which cuts a body once the way a flaky network does."""

from __future__ import annotations

import hashlib
import random
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import trio

from tests.fakes.http import FakeHTTPServer, Reply
from tsukud.install.download import DownloadError, download, download_streaming
from tsukud.net.http import Http, Settings
from tsukud.net.resume import range_headers, resumed_at, validator
from tsukud.net.retry import RetryPolicy
from tsukud.testing.download_host import FakeDownloadHost

DATA = bytes(range(256)) * 12_000  # ~3 MB
CUT = 1_000_003


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    quick = Settings(retry=RetryPolicy(max_tries=4, base_delay=0.01, max_delay=0.02))
    h = Http(settings=quick, allowed_hosts=lambda: {"127.0.0.1"})
    yield h
    await h.aclose()


@pytest.fixture
def host() -> Iterator[FakeDownloadHost]:
    with FakeDownloadHost() as h:
        h.add("/tool-1.0.tar.gz", DATA)
        yield h


def reader(seen: list[bytes]):  # type: ignore[no-untyped-def]
    def consume(link: Path, length: int | None) -> int | None:
        with link.open("rb") as f:
            seen.append(f.read())
        return length

    return consume


async def test_a_cut_body_is_resumed_with_a_range_request(
    http: Http, host: FakeDownloadHost, tmp_path: Path
) -> None:
    host.cut_once("/tool-1.0.tar.gz", CUT)
    reports: list[tuple[int, int | None]] = []

    async def progress(done: int, total: int | None) -> None:
        reports.append((done, total))

    res = await download(
        http,
        host.url + "/tool-1.0.tar.gz",
        tmp_path / "t",
        on_progress=progress,
        progress_interval=0,
    )
    assert (tmp_path / "t").read_bytes() == DATA
    assert res.size == len(DATA) and res.sha256 == hashlib.sha256(DATA).hexdigest()
    first, second = host.requests
    assert "range" not in first.headers
    assert second.headers["range"] == f"bytes={CUT}-"
    assert second.headers["if-range"].startswith('"')  # the first answer's ETag
    # Progress went on from where the cut left it, never back to zero.
    dones = [d for d, _t in reports]
    assert dones == sorted(dones) and reports[-1] == (len(DATA), len(DATA))
    assert all(t == len(DATA) for _d, t in reports)


@pytest.mark.parametrize("streamed", [False, True], ids=["to-file", "streamed-into-tar"])
async def test_a_body_that_stalls_is_given_up_on_by_the_read_timeout_and_resumed(
    host: FakeDownloadHost, tmp_path: Path, streamed: bool
) -> None:
    """The connection stays open and sends nothing more (a stuck CDN node): only the
    read timeout ends the wait, and the next try asks for the rest, whether the body
    goes to a file or straight into the extractor (a tar read as it arrives)."""
    stall_aware = Settings(
        read_timeout=0.3, retry=RetryPolicy(max_tries=3, base_delay=0.01, max_delay=0.02)
    )
    http = Http(settings=stall_aware, allowed_hosts=lambda: {"127.0.0.1"})
    host.stall_once("/tool-1.0.tar.gz", CUT)
    url, target, seen = host.url + "/tool-1.0.tar.gz", tmp_path / "tool-1.0.tar.gz", []
    try:
        with trio.fail_after(10):  # the stall itself is never waited out
            if streamed:
                res, _ = await download_streaming(http, url, target, reader(seen))
            else:
                res = await download(http, url, target)
                seen.append(target.read_bytes())
    finally:
        await http.aclose()
    assert seen == [DATA]  # one whole body, nothing spliced twice
    assert res.sha256 == hashlib.sha256(DATA).hexdigest()
    first, second = host.requests
    assert "range" not in first.headers
    assert second.headers["range"] == f"bytes={CUT}-"


async def test_a_cut_body_starts_over_when_the_host_serves_no_ranges(
    http: Http, tmp_path: Path
) -> None:
    with FakeDownloadHost(ranges=False) as host:
        host.add("/tool-1.0.tar.gz", DATA)
        host.cut_once("/tool-1.0.tar.gz", CUT)
        res = await download(http, host.url + "/tool-1.0.tar.gz", tmp_path / "t")
        assert [r.headers.get("range") for r in host.requests] == [None, None]
    # The file was truncated before the second body: no spliced or doubled bytes.
    assert (tmp_path / "t").read_bytes() == DATA
    assert res.size == len(DATA) and res.sha256 == hashlib.sha256(DATA).hexdigest()


async def test_a_streamed_download_is_resumed_too(
    http: Http, host: FakeDownloadHost, tmp_path: Path
) -> None:
    host.cut_once("/tool-1.0.tar.gz", CUT)
    seen: list[bytes] = []
    res, unpacked = await download_streaming(
        http, host.url + "/tool-1.0.tar.gz", tmp_path / "tool-1.0.tar.gz", reader(seen)
    )
    assert seen == [DATA] and unpacked.value == len(DATA)  # the consumer saw one whole body
    assert res.sha256 == hashlib.sha256(DATA).hexdigest()
    assert host.requests[1].headers["range"] == f"bytes={CUT}-"


async def test_a_streamed_download_cannot_start_over(http: Http, tmp_path: Path) -> None:
    with FakeDownloadHost(ranges=False) as host:
        host.add("/tool-1.0.tar.gz", DATA)
        host.cut_once("/tool-1.0.tar.gz", CUT)
        with pytest.raises(DownloadError) as err:
            await download_streaming(
                http, host.url + "/tool-1.0.tar.gz", tmp_path / "tool-1.0.tar.gz", reader([])
            )
    assert f"broke after {CUT} bytes and the server cannot resume" in err.value.message
    assert err.value.exit_code == 5


async def test_a_body_that_keeps_breaking_gives_up_saying_how_often(
    http: Http, tmp_path: Path
) -> None:
    with FakeHTTPServer() as server:
        server.push(*[Reply(body=DATA, cut_after=CUT)] * 4)
        with pytest.raises(DownloadError) as err:
            await download(http, server.url + "/t.tar.gz", tmp_path / "t", rng=random.Random(1))
        assert len(server.requests) == 4
    assert err.value.message.endswith("(gave up after 4 tries)")
    assert err.value.data["tries"] == 4


def test_range_rules() -> None:
    ranged = {"accept-ranges": "bytes", "etag": '"abc"', "last-modified": "Mon"}
    assert validator(ranged) == '"abc"'
    assert validator({**ranged, "etag": 'W/"weak"'}) == "Mon"  # a weak ETag cannot guard
    assert validator({"accept-ranges": "bytes"}) == ""  # ranges, nothing to guard with
    assert validator({"etag": '"abc"'}) is None  # no ranges offered
    assert range_headers(0, '"abc"') == {}
    assert range_headers(10, None) == {}
    assert range_headers(10, "") == {"range": "bytes=10-"}
    assert range_headers(10, '"abc"') == {"range": "bytes=10-", "if-range": '"abc"'}
    assert resumed_at(206, {"content-range": "bytes 10-99/100"}) == 10
    assert resumed_at(206, {"content-range": "bytes */100"}) is None
    assert resumed_at(200, {"content-range": "bytes 10-99/100"}) is None
