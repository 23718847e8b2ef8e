"""Discovery's outbound HTTP: GETs through the shared :class:`~tsukud.net.http.Http` layer,
POSTs (DuckDuckGo, Tavily) through a small client that applies the same URL policy.

The shared layer only GETs; search providers need POST. Rather than reach into its
private client, POSTs get their own pooled ``httpx2`` client here, and every POST is
first checked with :meth:`Http.check_url` (https only, http only to loopback, private
addresses only for configured endpoints). POSTs follow no redirects.

Every answer, whatever its status, comes back as :class:`WebResponse`: callers decide
what 404 or 202 means. Connection problems, timeouts and rate limits raise
:class:`~tsukud.net.http.HttpError` subclasses.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx2

from tsukud.net.http import Http, HttpError, ResponseTooLarge

MAX_BYTES = 4 * 1024 * 1024
_ALL_ERRORS = range(400, 600)


@dataclass(frozen=True)
class WebResponse:
    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str

    def json(self) -> Any:
        try:
            return jsonlib.loads(self.body)
        except ValueError:
            return None

    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class Web:
    def __init__(
        self,
        http: Http,
        *,
        timeout: float = 10.0,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.http = http
        self.max_bytes = max_bytes
        self._timeout = timeout
        self._post: httpx2.AsyncClient | None = None

    async def aclose(self) -> None:
        if self._post is not None:
            await self._post.aclose()
            self._post = None

    async def get(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        cache: bool = True,
        retry: bool = True,
    ) -> WebResponse:
        """``retry=False`` for callers that retry by their own policy (search)."""
        resp = await self.http.get(
            url,
            headers=headers,
            max_bytes=self.max_bytes,
            cache=cache,
            accept_status=_ALL_ERRORS,
            retry=retry,
        )
        return WebResponse(resp.status, resp.headers, resp.body, resp.url)

    def _client(self) -> httpx2.AsyncClient:
        if self._post is None:
            self._post = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self._timeout, connect=min(5.0, self._timeout)),
                follow_redirects=False,
                trust_env=False,
                limits=httpx2.Limits(max_connections=8, max_keepalive_connections=4),
            )
        return self._post

    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json: Any = None,
    ) -> WebResponse:
        await self.http.check_url(url)
        send = {k.lower(): v for k, v in (headers or {}).items()}
        body = content
        if json is not None:
            body = jsonlib.dumps(json).encode()
            send.setdefault("content-type", "application/json")
        client = self._client()
        request = client.build_request("POST", url, headers=send, content=body or b"")
        shown = url.split("?", 1)[0]
        try:
            resp = await client.send(request, stream=True)
            try:
                data = bytearray()
                async for chunk in resp.aiter_bytes():
                    data += chunk
                    if len(data) > self.max_bytes:
                        raise ResponseTooLarge(
                            f"{shown}: larger than {self.max_bytes} bytes", url=shown
                        )
            finally:
                await resp.aclose()
        except httpx2.TimeoutException:
            raise HttpError(f"{shown}: timed out", url=shown) from None
        except httpx2.HTTPError as exc:
            raise HttpError(f"{shown}: {type(exc).__name__}", url=shown) from None
        return WebResponse(
            resp.status_code, {k.lower(): v for k, v in resp.headers.items()}, bytes(data), url
        )
