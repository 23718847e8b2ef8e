"""Downloading release assets: streamed to disk, sha256 computed on the way, checked.

The body is read by one task and written (and hashed) by another in a worker thread, so
network reads and disk writes overlap and the event loop never blocks on the disk.
Files are created exclusively (``O_EXCL``, 0600) inside the caller's private staging
directory. Progress is reported at most every ``progress_interval`` seconds. A body
that breaks part-way is tried again: resumed with a range request where the server
allows it, else started over (a file is truncated; a streamed consumer cannot start
over, so there only resuming helps), within the HTTP client's retry policy.

Checksums: :func:`check_sha256` compares a computed digest with an expected one and
raises :class:`ChecksumMismatch` naming the file, the source of the expectation
(GitHub's asset ``digest``, the recipe, a checksum file) and both hashes.
:func:`parse_checksum_file` reads ``sha256sum``-style files the way the reference does.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import random
import re
import select
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Generic, TypeVar

import msgspec
import trio

from tsukud import log
from tsukud.errors import TsukuError
from tsukud.groups import single_leaf
from tsukud.install.errors import no_space
from tsukud.net import notices
from tsukud.net.http import (
    MB,
    Http,
    HttpError,
    HttpStatusError,
    Stream,
    TransientHttpError,
    _display,
    gave_up,
)
from tsukud.net.resume import range_headers, resumed_at, validator
from tsukud.net.retry import next_delay
from tsukud.progress import ByteProgress

DEFAULT_MAX_BYTES = 2 * 1024 * MB
BATCH = 4 * MB  # bytes handed to the writer thread at a time
_HEX64 = re.compile(r"^[0-9a-fA-F]{64}$")

T = TypeVar("T")
_F_SETPIPE_SZ = 1031  # Linux fcntl: grow the pipe buffer (fewer wake-ups)
_RNG = random.Random()  # noqa: S311 - retry jitter, not secrets; tests pass their own


class DownloadError(TsukuError):
    code = "download_failed"


class AssetMissing(DownloadError):
    """The download URL answered 404: the release has no such file (any more)."""

    code = "asset_download_not_found"


class ChecksumMismatch(TsukuError):
    code = "checksum_mismatch"


class DownloadResult(msgspec.Struct, frozen=True, kw_only=True):
    path: str
    size: int
    sha256: str
    url: str
    final_url: str


def check_sha256(file: str, actual: str, expected: str, source: str) -> None:
    """Raise :class:`ChecksumMismatch` unless ``actual`` equals ``expected`` (hex)."""
    expected = expected.strip().lower().removeprefix("sha256:")
    if actual.lower() != expected:
        raise ChecksumMismatch(
            f"checksum mismatch for {file}: {source} says sha256 {expected}, "
            f"the download has sha256 {actual}",
            file=file,
            expected=expected,
            actual=actual,
            source=source,
        )


def parse_checksum_file(text: str, filename: str) -> str | None:
    """The sha256 for ``filename`` in a checksum file. One line: its first field; several:
    the line naming the file (``<hash>  name`` or ``<hash> *name``). None if absent."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    if len(lines) == 1:
        first = lines[0].split()[0]
        return first.lower() if _HEX64.match(first) else None
    for ln in lines:
        fields = ln.split()
        if len(fields) >= 2 and _HEX64.match(fields[0]):
            name = fields[-1].lstrip("*")
            if name == filename or name.endswith("/" + filename):
                return fields[0].lower()
    return None


class _Sink:
    """The file and the running hash, used from a worker thread one batch at a time."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        self.hash = hashlib.sha256()

    def write(self, parts: list[bytes]) -> None:
        try:
            for part in parts:
                self.hash.update(part)
                view = memoryview(part)
                while view:
                    n = os.write(self.fd, view)
                    view = view[n:]
        except OSError as exc:
            full = no_space(exc, self.path.parent, f"cannot save {self.path.name}")
            if full is not None:
                raise full from exc
            raise

    def reset(self) -> None:
        """Start the file and its hash over (the server sent the whole body again)."""
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        self.hash = hashlib.sha256()

    def close(self) -> None:
        os.close(self.fd)


def _as_download_error(exc: HttpError) -> TsukuError:
    """A 404 is :class:`AssetMissing` (the release has no such file), another status or
    a plain transport error (refused, reset, closed mid-body) :class:`DownloadError`;
    the more specific HTTP errors (blocked URL, too large, ...) stay as they are."""
    if isinstance(exc, HttpStatusError):
        if exc.status == 404:
            return AssetMissing(
                f"{exc.url}: not found (HTTP 404)",
                hint="The release does not (or no longer) provide this file.",
                url=exc.url,
            )
        tries = exc.data.get("tries")
        said = f" (gave up after {tries} tries)" if tries else ""
        return DownloadError(
            f"download of {exc.url} failed: HTTP {exc.status}{said}",
            url=exc.url,
            status=exc.status,
            **({"tries": tries} if tries else {}),
        )
    if type(exc) in (HttpError, TransientHttpError):
        return DownloadError(f"download failed: {exc.message}", **exc.data)
    return exc


@contextlib.contextmanager
def _download_errors() -> Iterator[None]:
    """Raise what failed a download as one plain error, also when it comes out of the
    download's nursery wrapped in an exception group."""
    try:
        yield
    except BaseException as exc:
        leaf = single_leaf(exc)
        if isinstance(leaf, HttpError):
            raise _as_download_error(leaf) from None
        if isinstance(leaf, Exception) and leaf is not exc:
            raise leaf from None
        raise


class _Transfer:
    """One download across its tries: how far it got, what the first answer said."""

    def __init__(self, url: str, headers: Mapping[str, str] | None = None) -> None:
        self.url = url
        self.headers = dict(headers or {})  # the caller's (a registry's bearer)
        self.final_url = url
        self.done = 0  # bytes handed to the consumer
        self.total: int | None = None  # the whole body's declared size
        self.guard: str | None = None  # If-Range validator; None: no resuming
        self.tries = 0
        self.last_report = -math.inf


async def _pump(
    resp: Stream,
    t: _Transfer,
    deliver: Callable[[list[bytes]], Awaitable[None]],
    on_progress: ByteProgress | None,
    progress_interval: float,
) -> None:
    """Read the body, hand it to ``deliver`` in batches of about :data:`BATCH` bytes and
    report progress. What arrived before the connection broke is delivered too, so
    ``t.done`` is where a resumed try starts."""
    batch: list[bytes] = []
    pending = 0

    async def flush() -> None:
        nonlocal batch, pending
        if batch:
            await deliver(batch)
            t.done += pending
            batch, pending = [], 0

    try:
        async for chunk in resp.chunks():
            batch.append(chunk)
            pending += len(chunk)
            if pending >= BATCH:
                await flush()
            if on_progress is not None:
                now = trio.current_time()
                if now - t.last_report >= progress_interval:
                    t.last_report = now
                    await on_progress(t.done + pending, t.total)
    except TransientHttpError:
        await flush()
        raise
    await flush()


async def _transfer(
    http: Http,
    t: _Transfer,
    *,
    max_bytes: int,
    deliver: Callable[[list[bytes]], Awaitable[None]],
    on_open: Callable[[Stream], Awaitable[None]],
    restart: Callable[[], Awaitable[None]] | None,
    on_progress: ByteProgress | None,
    progress_interval: float,
    rng: random.Random,
) -> None:
    """Download ``t.url`` through ``deliver``. A body that breaks part-way (reset,
    closed early, stalled) is tried again under the client's retry policy: resumed
    with a range request when the server offers ranges (``tsukud.net.resume``),
    otherwise from its first byte after ``restart`` (None: the consumer cannot start
    over, and the break is final). Opening each try is retried by ``Http`` itself."""
    policy = http.settings.retry
    started = trio.current_time()
    while True:
        t.tries += 1
        in_body = False
        try:
            async with http.stream(
                t.url, max_bytes=max_bytes, headers={**t.headers, **range_headers(t.done, t.guard)}
            ) as resp:
                if t.tries == 1:
                    t.total, t.final_url = resp.content_length, resp.url
                    t.guard = validator(resp.headers)
                    await on_open(resp)
                    if on_progress is not None:
                        await on_progress(0, t.total)
                elif resumed_at(resp.status, resp.headers) != t.done:
                    if restart is None:
                        raise TransientHttpError(
                            f"{_display(t.url)}: the connection broke after {t.done} bytes "
                            "and the server cannot resume the download",
                            url=_display(t.url),
                        )
                    await restart()
                    t.done = 0
                in_body = True
                await _pump(resp, t, deliver, on_progress, progress_interval)
                return
        except TransientHttpError as exc:
            if not in_body:
                raise
            delay = next_delay(policy, t.tries, trio.current_time() - started, rng)
            if delay is None:
                raise gave_up(exc, t.tries) from None
            log.get().info(
                "download.resume",
                url=_display(t.url),
                tries=t.tries,
                at=t.done,
                ranged=t.guard is not None,
                wait=round(delay, 3),
                error=exc.message,
            )
            await notices.retrying(_display(t.url), exc.message, t.tries, policy.max_tries, delay)
            await trio.sleep(delay)


T_ = TypeVar("T_")


async def from_mirrors(
    urls: tuple[str, ...],
    fetch: Callable[[str], Awaitable[T_]],
    failed_over: Callable[[str, str, DownloadError], Awaitable[None]],
) -> tuple[str, T_]:
    """``fetch`` the first URL, then each mirror in order when the one before failed
    with a ``DownloadError`` (download's ``fallback_urls``): the URL that served and what
    ``fetch`` gave. ``failed_over(url, next_url, error)`` runs between tries (say so,
    clean up); the last URL's error is raised. Install and validation both go through
    here, so a recipe validates from the mirror its install would use."""
    for n, url in enumerate(urls):
        try:
            return url, await fetch(url)
        except DownloadError as exc:
            if n + 1 == len(urls):
                raise
            await failed_over(url, urls[n + 1], exc)
    raise ValueError("from_mirrors needs at least one URL")


async def download(
    http: Http,
    url: str,
    dest: Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_progress: ByteProgress | None = None,
    progress_interval: float = 0.1,
    rng: random.Random | None = None,
    headers: Mapping[str, str] | None = None,
) -> DownloadResult:
    """Stream ``url`` into the new file ``dest``, resuming a body that breaks part-way.
    On error ``dest`` may hold partial data; the caller owns the (staging) directory
    and removes it."""
    sink = _Sink(dest)
    t = _Transfer(url, headers)
    try:
        with _download_errors():
            send, recv = trio.open_memory_channel[list[bytes] | None](4)

            async def writer() -> None:
                async with recv:
                    async for batch in recv:
                        if batch is None:  # start over: earlier batches are written by now
                            await trio.to_thread.run_sync(sink.reset)
                        else:
                            await trio.to_thread.run_sync(sink.write, batch)

            async def opened(_resp: Stream) -> None:
                return None

            async with trio.open_nursery() as nursery:
                nursery.start_soon(writer)
                async with send:
                    await _transfer(
                        http,
                        t,
                        max_bytes=max_bytes,
                        deliver=send.send,
                        on_open=opened,
                        restart=lambda: send.send(None),
                        on_progress=on_progress,
                        progress_interval=progress_interval,
                        rng=rng or _RNG,
                    )
    finally:
        sink.close()
    if on_progress is not None:
        await on_progress(t.done, t.done)
    return DownloadResult(
        path=str(dest), size=t.done, sha256=sink.hash.hexdigest(), url=url, final_url=t.final_url
    )


# ------------------------------------------------------------------------- streaming


class Unpacked(Generic[T]):
    """What the consumer of a streamed download produced, or the error it raised."""

    def __init__(self) -> None:
        self.value: T | None = None
        self.error: BaseException | None = None


class _Pipe:
    """Feeds the download to a consumer thread through an OS pipe.

    The consumer opens ``link`` (a symlink to ``/dev/fd/<read end>``), so code that
    wants a path, like the extractor, reads the bytes as they arrive. We keep our read
    end open until the end, so a consumer that stops early (finished, or failed) never
    makes us block or fail: once it is done, we only hash.
    """

    def __init__(self, link: Path) -> None:
        self.r, self.w = os.pipe()
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError):
                import fcntl

                fcntl.fcntl(self.w, _F_SETPIPE_SZ, 1024 * 1024)
        os.set_blocking(self.w, False)
        self.hash = hashlib.sha256()
        self.consumer_done = threading.Event()
        self.link = link
        os.symlink(f"/dev/fd/{self.r}", link)

    def feed(self, parts: list[bytes]) -> None:
        for part in parts:
            self.hash.update(part)
        for part in parts:
            view = memoryview(part)
            while view:
                if self.consumer_done.is_set():
                    return
                try:
                    n = os.write(self.w, view)
                except BlockingIOError:
                    select.select([], [self.w], [], 0.05)
                    continue
                view = view[n:]

    def close_writer(self) -> None:
        if self.w >= 0:
            os.close(self.w)
            self.w = -1

    def close(self) -> None:
        self.close_writer()
        if self.r >= 0:
            os.close(self.r)
            self.r = -1
        self.link.unlink(missing_ok=True)


async def download_streaming(
    http: Http,
    url: str,
    link: Path,
    consume: Callable[[Path, int | None], T],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    on_progress: ByteProgress | None = None,
    progress_interval: float = 0.1,
    rng: random.Random | None = None,
    headers: Mapping[str, str] | None = None,
) -> tuple[DownloadResult, Unpacked[T]]:
    """Download ``url`` while ``consume(link, content_length)`` reads it, in a worker
    thread, from the path ``link`` (named like the asset, for messages). Nothing is
    written to disk by the download itself.

    The download always runs to its end, so the sha256 covers the whole file even when
    the consumer stopped early or failed; the caller checks the checksum first and only
    then looks at what the consumer produced (or raised). Download errors are raised;
    consumer errors are returned in :class:`Unpacked`.
    """
    pipe = _Pipe(link)
    unpacked: Unpacked[T] = Unpacked()
    t = _Transfer(url, headers)
    try:
        with _download_errors():

            async def feed(batch: list[bytes]) -> None:
                await trio.to_thread.run_sync(pipe.feed, batch)

            async with trio.open_nursery() as nursery:

                async def opened(resp: Stream) -> None:
                    length = resp.content_length

                    def run_consumer() -> None:
                        try:
                            unpacked.value = consume(link, length)
                        except BaseException as exc:
                            unpacked.error = exc
                        finally:
                            pipe.consumer_done.set()

                    nursery.start_soon(trio.to_thread.run_sync, run_consumer)

                try:
                    await _transfer(
                        http,
                        t,
                        max_bytes=max_bytes,
                        deliver=feed,
                        on_open=opened,
                        restart=None,  # the consumer has read the bytes: resume or fail
                        on_progress=on_progress,
                        progress_interval=progress_interval,
                        rng=rng or _RNG,
                    )
                finally:
                    pipe.close_writer()  # end of data: the consumer finishes either way
    finally:
        pipe.close()
    if on_progress is not None:
        await on_progress(t.done, t.done)
    result = DownloadResult(
        path="", size=t.done, sha256=pipe.hash.hexdigest(), url=url, final_url=t.final_url
    )
    return result, unpacked
