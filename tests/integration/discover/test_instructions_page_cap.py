"""The page size caps, through the builder's own run with the real HTTP layer and a
loopback vendor host: a page whose text is longer than a model reads is clipped (and
what was clipped away names no site), and a page larger than the daemon downloads is
refused with a message that says so, before any model or money is involved."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tsukud.errors import ProviderUnavailable
from tsukud.github.client import GitHub
from tsukud.install.versions import VersionResolver
from tsukud.instructions.builder import Deps, InstructionsRequest, InstructionsUnavailable, build
from tsukud.instructions.page import PAGE_MAX_BYTES, PAGE_TEXT_LIMIT
from tsukud.net.http import Http
from tsukud.testing.download_host import FakeDownloadHost


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = Http(allowed_hosts=lambda: {"127.0.0.1"})  # the loopback vendor, as tests configure
    try:
        yield h
    finally:
        await h.aclose()


def deps(http: Http, events: list[tuple[str, dict[str, Any]]]) -> Deps:
    async def emit(type_: str, payload: dict[str, Any]) -> None:
        events.append((type_, payload))

    async def progress(_body: dict[str, Any]) -> None:
        return None

    return Deps(
        http=http,
        resolver=VersionResolver(GitHub(http, "http://127.0.0.1:9")),
        emit=emit,
        progress=progress,
        open_llm=None,  # the run stops right after reading the page
        validator=None,
    )


def request(url: str) -> InstructionsRequest:
    return InstructionsRequest(tool="foo", url=url, came_from="discovery")


async def test_a_long_page_is_clipped_to_what_a_model_reads(
    vendor: FakeDownloadHost, http: Http
) -> None:
    head = f"<p>Download {vendor.url}/foo/{{version}}/foo-linux-amd64.tar.gz</p>"
    filler = "<p>" + "Release notes. " * (PAGE_TEXT_LIMIT // 10) + "</p>"
    tail = "<p>Mirror: https://mirror.example.test/foo.tar.gz</p>"
    html = (head + filler + tail).encode()
    assert PAGE_TEXT_LIMIT < len(html) < PAGE_MAX_BYTES
    page = vendor.add("/foo/install", html, sha256_file=False)
    events: list[tuple[str, dict[str, Any]]] = []
    with pytest.raises(ProviderUnavailable):  # read, then no model configured
        await build(request(page), deps(http, events))
    (fetched,) = [p for t, p in events if t == "instructions.fetched"]
    assert fetched["bytes"] == len(html)
    assert fetched["chars"] == PAGE_TEXT_LIMIT  # clipped, an ellipsis at the end
    # The head is read; a site only the clipped-away tail names is not a site the page
    # names, so no recipe may download from it.
    assert fetched["origins"] == [vendor.url]
    assert events[-1][0] == "generation.failed"


async def test_a_page_larger_than_the_download_cap_is_refused_clearly(
    vendor: FakeDownloadHost, http: Http
) -> None:
    page = vendor.add("/foo/huge", b"<p>" + b"x" * PAGE_MAX_BYTES + b"</p>", sha256_file=False)
    events: list[tuple[str, dict[str, Any]]] = []
    with pytest.raises(InstructionsUnavailable) as caught:
        await build(request(page), deps(http, events))
    message = caught.value.message
    assert message.startswith(f"cannot read the install page {page}:")
    assert f"{PAGE_MAX_BYTES}-byte limit" in message
    assert caught.value.code == "instructions_unavailable"
    failed = [p for t, p in events if t == "generation.failed"]
    assert len(failed) == 1 and failed[0]["error_code"] == "instructions_unavailable"
    assert not [t for t, _ in events if t == "instructions.fetched"]
