"""Downloads stream to disk with their sha256; checksum files and mismatches."""

from __future__ import annotations

import hashlib
import os
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

from tests.fakes.http import FakeHTTPServer, Reply, breaking_server
from tsukud.install.download import (
    AssetMissing,
    ChecksumMismatch,
    DownloadError,
    check_sha256,
    download,
    download_streaming,
    parse_checksum_file,
)
from tsukud.net.http import Http, ResponseTooLarge, Settings
from tsukud.net.retry import RetryPolicy


@pytest.fixture
def server() -> Iterator[FakeHTTPServer]:
    with FakeHTTPServer() as s:
        yield s


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = Http(allowed_hosts=lambda: {"127.0.0.1"})
    yield h
    await h.aclose()


async def test_download_hashes_while_streaming(
    http: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    data = b"0123456789abcdef" * 700_000  # ~11 MB: several batches
    server.push(Reply(302, headers={"location": "/cdn/x"}), Reply(body=data))
    seen: list[tuple[int, int | None]] = []

    async def progress(done: int, total: int | None) -> None:
        seen.append((done, total))

    res = await download(
        http, server.url + "/x", tmp_path / "x.bin", on_progress=progress, progress_interval=0
    )
    assert res.sha256 == hashlib.sha256(data).hexdigest() and res.size == len(data)
    assert (tmp_path / "x.bin").read_bytes() == data
    assert (tmp_path / "x.bin").stat().st_mode & 0o777 == 0o600
    assert res.final_url.endswith("/cdn/x")
    assert seen[0] == (0, len(data)) and seen[-1] == (len(data), len(data))


async def test_download_errors(http: Http, server: FakeHTTPServer, tmp_path: Path) -> None:
    server.push(Reply(404, body=b"Not Found"))
    with pytest.raises(AssetMissing) as err:
        await download(http, server.url + "/gone.tar.gz", tmp_path / "a")
    assert "gone.tar.gz" in err.value.message and err.value.exit_code == 5
    server.push(Reply(501))  # not a transient status: no second try
    with pytest.raises(DownloadError, match=r"HTTP 501$"):
        await download(http, server.url + "/err", tmp_path / "b")
    server.push(Reply(body=b"x" * 5000))
    with pytest.raises(ResponseTooLarge):
        await download(http, server.url + "/big", tmp_path / "c", max_bytes=1000)
    (tmp_path / "d").write_bytes(b"")
    with pytest.raises(FileExistsError):  # never overwrite: staging files are fresh
        await download(http, server.url + "/x", tmp_path / "d")


def test_check_sha256_names_file_and_hashes() -> None:
    good = hashlib.sha256(b"a").hexdigest()
    bad = hashlib.sha256(b"b").hexdigest()
    check_sha256("tool.tar.gz", good, "sha256:" + good.upper(), "GitHub's asset digest")
    with pytest.raises(ChecksumMismatch) as err:
        check_sha256("tool.tar.gz", bad, good, "GitHub's asset digest")
    msg = err.value.message
    assert "tool.tar.gz" in msg and good in msg and bad in msg and "GitHub" in msg
    assert err.value.exit_code == 6


def test_parse_checksum_file() -> None:
    a, b = "a" * 64, "B" * 64
    text = f"{a}  tool_linux_amd64.tar.gz\n{b} *tool_darwin_arm64.tar.gz\n"
    assert parse_checksum_file(text, "tool_linux_amd64.tar.gz") == a
    assert parse_checksum_file(text, "tool_darwin_arm64.tar.gz") == b.lower()
    assert parse_checksum_file(text, "other.zip") is None
    assert parse_checksum_file(f"{a}\n", "anything") == a
    assert parse_checksum_file("not a hash\n", "anything") is None


# ---- streaming to a consumer ------------------------------------------------------------


async def test_streaming_feeds_the_consumer_and_hashes_everything(
    http: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    data = bytes(range(256)) * 40_000  # ~10 MB: more than the pipe holds
    server.push(Reply(302, headers={"location": "/cdn"}), Reply(body=data))

    def consume(link: Path, length: int | None) -> tuple[str, int | None, str]:
        with link.open("rb") as f:
            got = f.read()
        return link.name, length, hashlib.sha256(got).hexdigest()

    res, unpacked = await download_streaming(
        http, server.url + "/x", tmp_path / "tool.tar.gz", consume
    )
    assert unpacked.error is None and unpacked.value is not None
    name, length, digest = unpacked.value
    assert name == "tool.tar.gz" and length == len(data)
    assert digest == res.sha256 == hashlib.sha256(data).hexdigest()
    assert not (tmp_path / "tool.tar.gz").exists() and res.size == len(data)


async def test_streaming_consumer_that_stops_early(
    http: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    data = b"z" * 5_000_000
    server.push(Reply(body=data))

    def consume(link: Path, length: int | None) -> bytes:
        with link.open("rb") as f:
            head = f.read(10)
        raise ValueError(f"bad header {head!r}")

    res, unpacked = await download_streaming(http, server.url + "/x", tmp_path / "a", consume)
    # The consumer's failure is reported to the caller, after a complete download.
    assert isinstance(unpacked.error, ValueError)
    assert res.sha256 == hashlib.sha256(data).hexdigest()


def reader(seen: list[int]) -> Callable[[Path, int | None], None]:
    """A consumer that reads the stream to its end (the download closing its end of the
    pipe) and notes how many bytes it got."""

    def consume(link: Path, length: int | None) -> None:
        with link.open("rb") as f:
            seen.append(len(f.read()))

    return consume


async def test_streaming_download_failure_ends_the_consumer(
    http: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    seen: list[int] = []
    consume = reader(seen)
    server.push(Reply(404, body=b"Not Found"))
    with pytest.raises(AssetMissing):
        await download_streaming(http, server.url + "/gone", tmp_path / "b", consume)
    assert seen == []  # never started
    server.push(Reply(body=b"x" * 5000))
    with pytest.raises(ResponseTooLarge):
        await download_streaming(http, server.url + "/big", tmp_path / "c", consume, max_bytes=100)
    assert not os.listdir(tmp_path)


# ---- a connection that breaks in the middle of the body ------------------------------------


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture
async def once() -> AsyncIterator[Http]:
    """A client that tries everything once: the break itself is what these tests see."""
    h = Http(settings=Settings(retry=RetryPolicy(max_tries=1)), allowed_hosts=lambda: {"127.0.0.1"})
    yield h
    await h.aclose()


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
async def test_download_that_breaks_mid_body(once: Http, tmp_path: Path, reset: bool) -> None:
    body = b"y" * 300_000
    with (
        breaking_server(body, declared=1_000_000, reset=reset) as url,
        pytest.raises(DownloadError) as err,
    ):
        await download(once, url, tmp_path / "tool.tar.gz")
    exc = err.value
    assert exc.code == "download_failed" and exc.exit_code == 5 and exc.retryable
    assert exc.message.startswith("download failed: http://127.0.0.1:")
    if not reset:
        assert "(received 300000 bytes, expected 1000000)" in exc.message


@pytest.mark.parametrize("reset", [False, True], ids=["closed", "reset"])
async def test_streaming_download_that_breaks_mid_body(
    once: Http, tmp_path: Path, reset: bool
) -> None:
    consumed: list[int] = []
    consume = reader(consumed)
    fds = open_fds()
    body = bytes(range(256)) * 2_000
    with (
        breaking_server(body, declared=len(body) * 4, reset=reset) as url,
        pytest.raises(DownloadError) as err,
    ):
        await download_streaming(once, url, tmp_path / "tool-1.0.tar.gz", consume)
    assert err.value.code == "download_failed" and err.value.exit_code == 5
    assert "tool-1.0.tar.gz" in err.value.message
    assert consumed and consumed[0] <= len(body)  # the consumer finished, not hung
    assert os.listdir(tmp_path) == []  # no link, no partial file
    assert open_fds() == fds  # both ends of the pipe are closed


# ---- transient failures: tried again until the body starts -----------------------------


@pytest.fixture
async def retrying() -> AsyncIterator[Http]:
    quick = Settings(retry=RetryPolicy(base_delay=0.01, max_delay=0.02))
    h = Http(settings=quick, allowed_hosts=lambda: {"127.0.0.1"})
    yield h
    await h.aclose()


async def test_a_download_is_retried_until_its_body_starts(
    retrying: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    server.push(Reply(502), Reply(disconnect=True), Reply(body=b"tool" * 1000))
    result = await download(retrying, server.url + "/t.tar.gz", tmp_path / "t")
    assert result.size == 4000 and (tmp_path / "t").read_bytes() == b"tool" * 1000
    assert len(server.requests) == 3


async def test_a_download_that_keeps_failing_says_how_often_it_tried(
    retrying: Http, server: FakeHTTPServer, tmp_path: Path
) -> None:
    server.push(*[Reply(500)] * 5)
    with pytest.raises(DownloadError) as err:
        await download(retrying, server.url + "/t.tar.gz", tmp_path / "t")
    assert err.value.message.endswith("HTTP 500 (gave up after 5 tries)")
    assert len(server.requests) == 5
