"""The Provider protocol, its typed errors, and what every adapter shares.

Adapters are thin and single-call: no retries and no failover here. The caller (the
breaker/failover layer) decides what to do with a failure, so each error says whether
trying again could help (``retryable``) and, for rate limits, how long to wait.

API keys must never leak into messages, reprs, logs or recordings: every message that
may contain provider text goes through :func:`tsukud.secrets.redact` before it becomes
an error.
"""

from __future__ import annotations

import email.utils
import hashlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar, runtime_checkable

import trio

from tsukud.errors import ProviderUnavailable, TsukuError
from tsukud.llm.types import Request, Response, Usage
from tsukud.secrets import redact


@runtime_checkable
class Provider(Protocol):
    """One LLM backend. ``complete`` makes exactly one logical call (an adapter may send
    a few bounded continuation requests for ``pause_turn``) and raises a
    :class:`ProviderError` subclass on failure."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def complete(self, request: Request) -> Response: ...

    async def aclose(self) -> None: ...


# --------------------------------------------------------------------------- errors


class ProviderError(TsukuError):
    """Base of every error an LLM provider adapter raises."""

    code = "provider_error"
    #: Why the request may have reached the provider although no usage came back
    #: (``timeout``, ``connection_broken``, ``unreadable_answer``), or ``None`` when it
    #: certainly did not (never connected) or the provider answered. The caller
    #: charges a call with a reason at its worst case: a provider may bill it.
    unanswered: str | None = None

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        request_id: str | None = None,
        hint: str | None = None,
        **data: Any,
    ) -> None:
        extra = {k: v for k, v in data.items() if v is not None}
        super().__init__(
            message, hint=hint, provider=provider, status=status, request_id=request_id, **extra
        )
        self.provider = provider
        self.status = status
        self.request_id = request_id

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.message!r}, provider={self.provider!r}, "
            f"status={self.status!r})"
        )


class ProviderTransientError(ProviderError, ProviderUnavailable):
    """The same request may succeed later: the breaker counts it, failover may try another."""

    code = ProviderUnavailable.code


class ProviderRateLimited(ProviderTransientError):
    """HTTP 429. ``retry_after`` (seconds) comes from the response when it said."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kw: Any) -> None:
        super().__init__(message, retry_after=retry_after, **kw)
        self.retry_after = retry_after


class ProviderOverloaded(ProviderTransientError):
    """The provider says it is overloaded (a 529 or a 503 ``UNAVAILABLE``)."""


class ProviderServerError(ProviderTransientError):
    """5xx (and 408/409, which the providers document as retryable)."""


class ProviderTimeout(ProviderTransientError):
    """No (complete) answer within the client's timeout."""

    unanswered: str | None = "timeout"


class ProviderConnectionError(ProviderTransientError):
    """Could not connect, or the connection broke before an answer.

    ``unreachable`` says why, when it is a failure another try would not change (the
    name does not resolve, no route, nothing listening on a loopback port:
    ``tsukud.net.retry.unreachable``): failover still moves on to the next provider,
    but the same one is not tried again at once."""

    unanswered: str | None = "connection_broken"
    unreachable: str | None = None


class ProvidersUnreachable(ProviderUnavailable):
    """Every provider a call tried was out of reach (:class:`ProviderConnectionError`
    with ``unreachable``): ``network_unreachable``, the code of every service out of
    reach, its hint naming each provider's URL setting. Still a
    :class:`ProviderUnavailable`, so a caller that moves on to another provider or
    falls back without a model does so unchanged."""

    code = "network_unreachable"


class ProviderAuthError(ProviderError):
    """401/403 (and billing problems): nothing changes until the user fixes the key."""

    code = "provider_auth"


class ProviderRequestError(ProviderError):
    """400/404/413/422: the request itself was refused; resending it cannot help."""

    code = "provider_bad_request"


class UnsupportedRequest(ProviderError):
    """The request asks for something this provider or model cannot do (checked locally)."""

    code = "provider_unsupported"


class MalformedToolArguments(ProviderError):
    """The model produced a tool call whose arguments are not a JSON object.

    Retryable: the model may well get it right on the next try. The conversation loop
    can also answer the call with an error result built from ``tool_name``/``call_id``.
    The call was still billed: ``usage`` and ``model`` say how much, for the ledger.
    """

    code = "provider_malformed_output"

    def __init__(
        self,
        message: str,
        *,
        tool_name: str | None,
        call_id: str | None,
        raw_arguments: str,
        usage: Usage | None = None,
        model: str | None = None,
        **kw: Any,
    ) -> None:
        raw_arguments = raw_arguments[:500]
        super().__init__(
            message, tool_name=tool_name, call_id=call_id, raw_arguments=raw_arguments, **kw
        )
        self.tool_name = tool_name
        self.call_id = call_id
        self.raw_arguments = raw_arguments
        self.usage = usage
        self.model = model


class ReplayMiss(ProviderError):
    """Replay mode got a request that was never recorded."""

    code = "llm_replay_miss"

    def __init__(self, message: str, *, key: str, closest: str | None, **kw: Any) -> None:
        super().__init__(message, key=key, closest=closest, **kw)
        self.key = key
        self.closest = closest


# ------------------------------------------------------------------ error mapping


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``retry-after`` (seconds or HTTP date)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_for_status(
    provider: str,
    status: int,
    detail: str,
    *,
    secrets: Iterable[str | None],
    request_id: str | None = None,
    retry_after: float | None = None,
    key_hint: str,
    overloaded_statuses: frozenset[int] = frozenset({529}),
) -> ProviderError:
    """Map an HTTP error status to the typed error the breaker and the CLI understand."""
    detail = redact(detail, secrets)[:1000]
    message = f"{provider}: HTTP {status}: {detail}" if detail else f"{provider}: HTTP {status}"
    common: dict[str, Any] = {"provider": provider, "status": status, "request_id": request_id}
    if status == 429:
        wait = f" (retry after {retry_after:g} s)" if retry_after is not None else ""
        return ProviderRateLimited(message + wait, retry_after=retry_after, **common)
    if status in overloaded_statuses:
        return ProviderOverloaded(message, retry_after=retry_after, **common)
    if status >= 500 or status in (408, 409):
        return ProviderServerError(message, retry_after=retry_after, **common)
    if status in (401, 402, 403):
        what = {401: "the API key was rejected", 402: "billing problem", 403: "permission denied"}
        return ProviderAuthError(f"{message} ({what[status]})", hint=f"Check {key_hint}.", **common)
    return ProviderRequestError(message, **common)


T = TypeVar("T")


async def within(seconds: float | None, provider: str, call: Callable[[], Awaitable[T]]) -> T:
    """Run ``call`` under a total deadline; a trickling response cannot dodge a read timeout."""
    if seconds is None:
        return await call()
    with trio.move_on_after(seconds):
        return await call()
    raise ProviderTimeout(f"{provider}: no answer within {seconds:g} s", provider=provider)


def synthetic_call_id(provider: str, seed: bytes, index: int) -> str:
    """A stable id for a tool call the provider sent without one.

    Derived from the response content so the same response always yields the same id
    (record/replay stays byte-for-byte) while calls in different turns differ.
    """
    digest = hashlib.sha256(seed).hexdigest()[:16]
    return f"{provider}_call_{digest}_{index}"
