"""What the three HTTP adapters (Claude, Gemini, OpenAI-compatible) share.

Each is a :class:`~tsukud.llm.provider.Provider` with a name and a model, talks to one
URL through an ``httpx2.AsyncClient`` (its own, closed by :meth:`aclose`, or the
caller's, left open), and must never show its key: not in its ``repr``, not in an
error message (:meth:`_clean`). Imported only by the adapters, which load heavy SDKs
anyway.
"""

from __future__ import annotations

import httpx2

from tsukud.llm.provider import redact


class HttpAdapter:
    def __init__(
        self,
        *,
        name: str,
        model: str,
        url: str,
        api_key: str | None,
        timeout: float,
        connect_timeout: float,
        http_client: httpx2.AsyncClient | None,
    ) -> None:
        self._name = name
        self._model = model
        self._url = url
        self._timeout = timeout
        self._secrets = (api_key,)
        self._http_timeout = httpx2.Timeout(timeout, connect=connect_timeout)
        self._owns_http = http_client is None
        self._http = http_client or httpx2.AsyncClient(timeout=self._http_timeout)

    @property
    def name(self) -> str:
        return self._name

    @property
    def model(self) -> str:
        return self._model

    def __repr__(self) -> str:
        kind = type(self).__name__
        return f"{kind}(name={self._name!r}, model={self._model!r}, url={self._url!r})"

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    def _clean(self, exc: BaseException) -> str:
        """``exc`` as text for an error message, the key redacted."""
        return redact(f"{type(exc).__name__}: {exc}", self._secrets)
