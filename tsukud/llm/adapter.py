"""What the HTTP adapters (one per provider spec, ``provider_specs.LLM_PROVIDERS``) share.

Each is a :class:`~tsukud.llm.provider.Provider` with a name and a model, talks to one
URL through an ``httpx2.AsyncClient`` (its own, closed by :meth:`aclose`, or the
caller's, left open), and must never show its key: not in its ``repr``, not in an
error message (:meth:`_clean`). A broken transport and a reply that is not a JSON
object mean the same to all of them (:meth:`_transport_error`, :meth:`_json_object`),
and the adapters whose APIs take a history as alternating turns lay it out the same
way (:func:`turns`).
Imported only by the adapters, which load heavy SDKs anyway.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

import httpx2
import msgspec

from tsukud.llm.provider import (
    ProviderConnectionError,
    ProviderError,
    ProviderServerError,
    ProviderTimeout,
    ProviderTransientError,
    error_for_status,
    within,
)
from tsukud.llm.types import (
    AssistantMessage,
    AssistantPart,
    Citation,
    Message,
    Response,
    StopReason,
    ToolResultsMessage,
    Usage,
    UserMessage,
)
from tsukud.net.http import is_loopback_host
from tsukud.net.retry import unreachable
from tsukud.secrets import redact

Block = dict[str, Any]
T = TypeVar("T")


#: Every URL direct: overrides any proxy httpx would read from the environment.
_DIRECT: dict[str, httpx2.AsyncBaseTransport | None] = {
    "http://": None,
    "https://": None,
    "all://": None,
}


class HttpAdapter:
    key_hint: ClassVar[str]
    """Where the user sets this adapter's key, for the hint of an auth error."""
    overloaded_statuses: ClassVar[frozenset[int]] = frozenset({503})
    """The statuses this API answers when it is overloaded (a reason to fail over):
    HTTP's own 503 unless the API has its own (e.g. a 529)."""

    def __init__(
        self,
        name: str,
        model: str,
        url: str,
        api_key: str | None,
        timeout: float,
        connect_timeout: float,
        http_client: httpx2.AsyncClient | None,
        proxy: str | None = None,
    ) -> None:
        self._name = name
        self._model = model
        self._url = url
        self._timeout = timeout
        self._secrets = (api_key,)
        self._http_timeout = httpx2.Timeout(timeout, connect=connect_timeout)
        self._owns_http = http_client is None
        # The proxy the settings chose for this provider's URL (``tsukud.net.proxy``),
        # or explicitly none: the environment's proxy variables must not pick another
        # behind the settings' back (a caller's NO_PROXY); its CA settings still count.
        self._http = http_client or httpx2.AsyncClient(
            timeout=self._http_timeout, proxy=proxy, mounts=None if proxy else _DIRECT
        )

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

    def _response(
        self,
        parts: list[AssistantPart],
        stop: StopReason,
        raw_stop: str,
        usage: Usage,
        model: str,
        request_id: str | None,
        started: float,
        citations: tuple[Citation, ...] = (),
    ) -> Response:
        """The neutral answer. ``model`` is the model the provider says answered;
        ``started`` is the ``time.monotonic()`` of the call."""
        return Response(
            message=AssistantMessage(tuple(parts)),
            stop_reason=stop,
            raw_stop_reason=raw_stop,
            usage=usage,
            provider=self._name,
            model=model,
            request_id=request_id,
            duration_ms=round((time.monotonic() - started) * 1000),
            citations=citations,
        )

    async def _within(self, call: Callable[[], Awaitable[T]]) -> T:
        """``call()`` under the adapter's total deadline."""
        return await within(self._timeout, self._name, call)

    def _http_error(
        self,
        status: int,
        detail: str,
        *,
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> ProviderError:
        """An HTTP error answer as the typed error, the key redacted from ``detail``."""
        return error_for_status(
            self._name,
            status,
            detail,
            secrets=self._secrets,
            request_id=request_id,
            retry_after=retry_after,
            key_hint=self.key_hint,
            overloaded_statuses=self.overloaded_statuses,
        )

    def _transport_error(
        self, exc: BaseException, *, timeout: bool = False
    ) -> ProviderTransientError:
        """No complete answer: a timeout, or a connection refused or broken (also
        half-way through the body). Retryable either way. Only a failure to connect
        proves the request was never sent; anything later may have been billed, so
        the error keeps its ``unanswered`` reason for the ledger."""
        err: ProviderTransientError
        if timeout or isinstance(exc, httpx2.TimeoutException):
            err = ProviderTimeout(f"{self._name}: request timed out", provider=self._name)
        else:
            why = unreachable(exc, loopback=is_loopback_host(urlsplit(self._url).hostname or ""))
            err = ProviderConnectionError(
                f"{self._name}: connection to {self._url} failed: {why or self._clean(exc)}",
                provider=self._name,
                url=self._url,
                unreachable=why,
            )
            err.unreachable = why
        if never_sent(exc):
            err.unanswered = None
        return err

    def _json_object(self, content: bytes | str | None, request_id: str | None) -> dict[str, Any]:
        """The reply's JSON object. A 200 that is not one (a proxy's page, a truncated
        body) tells us nothing was answered: a server-side failure, retryable."""
        try:
            body = msgspec.json.decode(content or b"")
        except msgspec.DecodeError:
            body = None
        if not isinstance(body, dict):
            err = ProviderServerError(
                f"{self._name}: response is not a JSON object",
                provider=self._name,
                request_id=request_id,
            )
            err.unanswered = "unreadable_answer"  # processed, maybe billed, usage unknown
            raise err
        return body


#: Transport failures that happen before a byte of the request is written.
_BEFORE_SENDING = (httpx2.ConnectError, httpx2.ConnectTimeout, httpx2.PoolTimeout)


def never_sent(exc: BaseException) -> bool:
    """Whether ``exc`` (or what an SDK wrapped in it) proves the request never left:
    the connection was never made."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, _BEFORE_SENDING):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def count(value: Any) -> int:
    """A token count from a usage block; absent or not a number counts as 0."""
    return value if isinstance(value, int) else 0


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def turns(
    messages: tuple[Message, ...],
    assistant: Callable[[AssistantMessage], list[Block]],
    user: Callable[[UserMessage | ToolResultsMessage], list[Block]],
    is_result: Callable[[Block], bool],
) -> list[tuple[str, list[Block]]]:
    """The history as ``(role, blocks)`` turns, ``"assistant"`` or ``"user"``.

    Consecutive messages of one role become one turn (tool results, then the user's
    next words); in a user turn the tool results come first, as both APIs require.
    Messages that translate to nothing are left out.
    """
    out: list[tuple[str, list[Block]]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            role, blocks = "assistant", assistant(message)
        else:
            role, blocks = "user", user(message)
        if not blocks:
            continue
        if out and out[-1][0] == role:
            out[-1][1].extend(blocks)
        else:
            out.append((role, blocks))
    for role, blocks in out:
        if role == "user":
            blocks.sort(key=lambda b: not is_result(b))
    return out
