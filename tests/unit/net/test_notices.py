"""Retry lines reach the request's client, and never change the retry itself."""

from __future__ import annotations

from typing import Any

import trio

from tsukud.net import notices


async def test_a_retry_is_told_to_the_request_and_to_no_one_outside_one() -> None:
    said: list[Any] = []

    async def send(frame: Any) -> None:
        said.append(frame)

    await notices.retrying("GET https://x.test/a", "HTTP 502", 1, 5, 0.75)  # no request
    with notices.to(send):
        await notices.retrying("GET https://x.test/a", "HTTP 502", 1, 5, 0.75)
    await notices.retrying("GET https://x.test/a", "HTTP 502", 2, 5, 1.5)  # after it
    assert said == [
        {
            "stage": "retry",
            "message": "GET https://x.test/a: HTTP 502; trying again in 0.8 s (try 2 of at most 5)",
        }
    ]


async def test_a_client_gone_does_not_stop_the_retry() -> None:
    async def broken(frame: Any) -> None:
        raise trio.BrokenResourceError("client gone")

    with notices.to(broken):
        await notices.retrying("u", "e", 1, 5, 0.1)  # returns: nothing raised


def test_an_error_naming_its_url_is_not_prefixed_again() -> None:
    line = notices.retry_line("https://x.test/a", "https://x.test/a: HTTP 503", 1, 5, 0.4)
    assert line == "https://x.test/a: HTTP 503; trying again in 0.4 s (try 2 of at most 5)"
