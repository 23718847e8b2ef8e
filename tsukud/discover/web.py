"""Discovery's outbound HTTP, all through the shared :class:`~tsukud.net.http.Http`
layer: GETs (cached, retried) and the search providers' POSTs (DuckDuckGo, Tavily), which
get the same URL policy (https only, http only to loopback, private addresses only for
configured endpoints) and the request's proxy, follow no redirects and are retried only
by the providers' own policy.

Every answer, whatever its status, comes back as :class:`WebResponse`: callers decide
what 404 or 202 means. Connection problems, timeouts and rate limits raise
:class:`~tsukud.net.http.HttpError` subclasses.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tsukud.net.http import Http

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

    async def aclose(self) -> None:
        """Nothing of its own to close: every request goes through ``http``."""

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

    async def post(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        content: bytes | None = None,
        json: Any = None,
    ) -> WebResponse:
        send = {k.lower(): v for k, v in (headers or {}).items()}
        body = content
        if json is not None:
            body = jsonlib.dumps(json).encode()
            send.setdefault("content-type", "application/json")
        resp = await self.http.post(
            url,
            headers=send,
            content=body or b"",
            max_bytes=self.max_bytes,
            time_limit=self._timeout,
        )
        return WebResponse(resp.status, resp.headers, resp.body, url)
