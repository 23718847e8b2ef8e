"""Claude through ``anthropic.AsyncAnthropic`` (Messages API).

Trio: the SDK's async client only needs anyio/sniffio plus the httpx2 client we hand
it (httpx2 runs on trio through httpcore2's trio backend). Its asyncio-only code paths
are the retry sleep and the ``__del__`` of clients it creates itself; we pass
``max_retries=0`` and our own ``http_client``, so neither runs.

We read the raw JSON body instead of the SDK's parsed models: blocks we do not
understand (server tool use, search results with encrypted content, thinking) must go
back to the API exactly as they came, and the raw dict is that.
"""

from __future__ import annotations

import contextlib
import re
import time
from typing import Any

import anthropic
import httpx2
import msgspec

from tsukud.llm import types as llm
from tsukud.llm.adapter import HttpAdapter, count, turns
from tsukud.llm.provider import (
    MalformedToolArguments,
    ProviderError,
    UnsupportedRequest,
    parse_retry_after,
)
from tsukud.llm.providers import BY_NAME

WIRE = "anthropic"

_STOP = {
    "end_turn": llm.StopReason.END_TURN,
    "stop_sequence": llm.StopReason.END_TURN,
    "tool_use": llm.StopReason.TOOL_USE,
    "max_tokens": llm.StopReason.MAX_TOKENS,
    "model_context_window_exceeded": llm.StopReason.MAX_TOKENS,
    "pause_turn": llm.StopReason.PAUSE_TURN,
    "refusal": llm.StopReason.REFUSAL,
}
_BASIC_KEYS = {"text": {"type", "text"}, "tool_use": {"type", "id", "name", "input"}}
_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


_SPEC = BY_NAME["claude"]


def deprecated_models() -> dict[str, str]:
    """Model → end-of-life date: the SDK's own list (it warns on every call with these),
    read by ``llm/pricing.deprecation`` since this provider's spec sets
    ``sdk_deprecations``."""
    from anthropic.resources.messages import messages as sdk_messages

    table: dict[str, str] = dict(getattr(sdk_messages, "DEPRECATED_MODELS", {}))
    try:
        from anthropic import _data

        table.update(getattr(_data, "DEPRECATED_MODELS", {}))
    except ImportError:
        pass
    return table


class ClaudeProvider(HttpAdapter):
    """``pause_turn`` is continued here (at most ``max_continuations`` extra requests),
    so callers only see it when the bound is reached."""

    key_hint = "ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL if you set one)"
    overloaded_statuses = frozenset({529})

    def __init__(
        self,
        api_key: str,
        *,
        model: str = _SPEC.default_model,
        base_url: str = _SPEC.default_url,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        max_continuations: int = 3,
        web_search_tool_type: str = "web_search_20250305",
        name: str = "claude",
        http_client: httpx2.AsyncClient | None = None,
        proxy: str | None = None,
    ) -> None:
        super().__init__(
            name, model, base_url, api_key, timeout, connect_timeout, http_client, proxy
        )
        self._max_continuations = max_continuations
        self._web_search_type = web_search_tool_type
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            http_client=self._http,
            max_retries=0,  # retries and failover belong to the caller's breaker
            timeout=self._http_timeout,
        )

    async def complete(self, request: llm.Request) -> llm.Response:
        started = time.monotonic()
        model = request.model or self._model
        parts: list[llm.AssistantPart] = []
        usage = llm.Usage()
        current = request
        for _ in range(self._max_continuations + 1):
            body, request_id = await self._send(build_params(current, model, self._web_search_type))
            try:
                new_parts, raw_stop, new_usage = parse_message(body, self._name, request_id)
            except MalformedToolArguments as exc:
                exc.usage = usage + (exc.usage or llm.Usage())
                raise
            parts.extend(new_parts)
            usage = usage + new_usage
            if raw_stop != "pause_turn":
                break
            # Resend the paused turn so far; the API continues the same assistant turn.
            current = msgspec.structs.replace(
                request, messages=(*request.messages, llm.AssistantMessage(tuple(parts)))
            )
        stop = _STOP.get(raw_stop, llm.StopReason.OTHER)
        answered_by = str(body.get("model") or model)
        sources = citations(parts)
        return self._response(
            parts, stop, raw_stop, usage, answered_by, request_id, started, sources
        )

    async def _send(self, params: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
        async def call() -> tuple[bytes, str | None]:
            raw = await self._client.messages.with_raw_response.create(**params)
            return await raw.read(), raw.request_id

        try:
            content, request_id = await self._within(call)
        except anthropic.APIStatusError as exc:
            raise self._status_error(exc) from None
        except anthropic.APITimeoutError as exc:
            raise self._transport_error(exc, timeout=True) from None
        except anthropic.APIConnectionError as exc:
            raise self._transport_error(exc) from None
        except httpx2.TransportError as exc:
            # Raised while reading the body, after the SDK handed the response over.
            raise self._transport_error(exc) from None
        return self._json_object(content, request_id), request_id

    def _status_error(self, exc: anthropic.APIStatusError) -> ProviderError:
        body = exc.body if isinstance(exc.body, dict) else {}
        err = body.get("error") if isinstance(body.get("error"), dict) else {}
        assert isinstance(err, dict)
        kind = str(err.get("type") or "")
        detail = f"{kind}: {err.get('message') or ''}" if kind else str(exc.message)
        status = exc.status_code
        if kind == "overloaded_error":
            status = 529
        return self._http_error(
            status,
            detail,
            request_id=exc.request_id or body.get("request_id"),
            retry_after=parse_retry_after(exc.response.headers),
        )


# ------------------------------------------------------------------- request side


def build_params(request: llm.Request, model: str, web_search_type: str) -> dict[str, Any]:
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": build_messages(request.messages),
    }
    if request.system:
        params["system"] = request.system
    if request.temperature is not None:
        # The Messages API (anthropic 2.x request types) has no sampling parameters;
        # refused here rather than as an untyped TypeError from the SDK.
        raise UnsupportedRequest(
            f"{model} takes no temperature", provider=WIRE, hint="Leave temperature unset."
        )
    tools: list[dict[str, Any]] = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in request.tools
    ]
    for server_tool in request.server_tools:
        if isinstance(server_tool, llm.WebSearch):
            tools.append(_web_search(server_tool, web_search_type))
    if tools:
        params["tools"] = tools
        choice: dict[str, Any] = {"type": request.tool_choice.mode}
        if request.tool_choice.mode == "tool":
            choice["name"] = request.tool_choice.name
        if not request.parallel_tool_calls and request.tool_choice.mode != "none":
            choice["disable_parallel_tool_use"] = True
        params["tool_choice"] = choice
    return params


def _web_search(tool: llm.WebSearch, tool_type: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": tool_type, "name": "web_search"}
    if tool.max_uses is not None:
        out["max_uses"] = tool.max_uses
    if tool.allowed_domains:
        out["allowed_domains"] = list(tool.allowed_domains)
    elif tool.blocked_domains:
        out["blocked_domains"] = list(tool.blocked_domains)
    return out


def _tool_id(call_id: str) -> str:
    """Claude wants ``^[a-zA-Z0-9_-]+$``; ids from another provider may not be."""
    return _BAD_ID_CHARS.sub("_", call_id) or "_"


def _assistant_blocks(message: llm.AssistantMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, llm.ProviderBlock):
            if part.provider == WIRE:
                blocks.append(part.data)
        elif part.raw is not None and part.raw.provider == WIRE:
            blocks.append(part.raw.data)
        elif isinstance(part, llm.TextPart):
            if part.text:  # the API rejects empty text blocks
                blocks.append({"type": "text", "text": part.text})
        else:
            blocks.append(
                {
                    "type": "tool_use",
                    "id": _tool_id(part.id),
                    "name": part.name,
                    "input": part.arguments,
                }
            )
    return blocks


def _user_blocks(message: llm.UserMessage | llm.ToolResultsMessage) -> list[dict[str, Any]]:
    if isinstance(message, llm.UserMessage):
        return [{"type": "text", "text": message.text}]
    return [
        {
            "type": "tool_result",
            "tool_use_id": _tool_id(r.call_id),
            "content": r.content,
            "is_error": r.is_error,
        }
        for r in message.results
    ]


def build_messages(messages: tuple[llm.Message, ...]) -> list[dict[str, Any]]:
    """One message per turn, ``tool_result`` blocks first in a user turn."""
    laid_out = turns(
        messages, _assistant_blocks, _user_blocks, lambda b: b.get("type") == "tool_result"
    )
    return [{"role": role, "content": blocks} for role, blocks in laid_out]


# ------------------------------------------------------------------ response side


def _extra(block: dict[str, Any]) -> llm.ProviderBlock | None:
    basic = _BASIC_KEYS[str(block.get("type"))]
    if any(v is not None for k, v in block.items() if k not in basic):
        return llm.ProviderBlock(WIRE, block)
    return None


def _arguments(
    block: dict[str, Any], provider: str, request_id: str | None, usage: llm.Usage, model: str
) -> dict[str, Any]:
    value = block.get("input")
    if isinstance(value, str):
        with contextlib.suppress(msgspec.DecodeError):
            value = msgspec.json.decode(value)
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raw = value if isinstance(value, str) else msgspec.json.encode(value).decode()
        raise MalformedToolArguments(
            f"{provider}: tool call {block.get('name')!r} has arguments that are not a JSON object",
            provider=provider,
            tool_name=str(block.get("name")),
            call_id=str(block.get("id")),
            raw_arguments=raw,
            request_id=request_id,
            usage=usage,
            model=model,
        )
    return value


def parse_message(
    body: dict[str, Any], provider: str, request_id: str | None
) -> tuple[list[llm.AssistantPart], str, llm.Usage]:
    usage = _usage(body.get("usage"))
    model = str(body.get("model") or "")
    parts: list[llm.AssistantPart] = []
    for block in body.get("content") or []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(llm.TextPart(str(block.get("text") or ""), raw=_extra(block)))
        elif kind == "tool_use":
            parts.append(
                llm.ToolCall(
                    id=str(block.get("id")),
                    name=str(block.get("name")),
                    arguments=_arguments(block, provider, request_id, usage, model),
                    raw=_extra(block),
                )
            )
        else:
            parts.append(llm.ProviderBlock(WIRE, block))
    return parts, str(body.get("stop_reason") or ""), usage


def citations(parts: list[llm.AssistantPart]) -> tuple[llm.Citation, ...]:
    """The pages of ``web_search_tool_result`` blocks and the passages text blocks cite
    (``web_search_result_location``), in order, each page once (a cited passage adds
    its text to a page already listed)."""
    found: dict[str, llm.Citation] = {}

    def add(item: Any, text: str = "") -> None:
        if not isinstance(item, dict) or not isinstance(item.get("url"), str):
            return
        url, title = item["url"], str(item.get("title") or "")
        known = found.get(url)
        if known is None:
            found[url] = llm.Citation(url, title, text)
        elif text and text not in known.text:
            joined = f"{known.text}\n{text}" if known.text else text
            found[url] = llm.Citation(url, known.title or title, joined)

    for part in parts:
        block = part if isinstance(part, llm.ProviderBlock) else part.raw
        if block is None or block.provider != WIRE:
            continue
        data = block.data
        if data.get("type") == "web_search_tool_result":
            content = data.get("content")
            for item in content if isinstance(content, list) else []:
                add(item)
        for cite in data.get("citations") or []:
            if isinstance(cite, dict):
                add(cite, str(cite.get("cited_text") or ""))
    return tuple(found.values())


def _usage(raw: Any) -> llm.Usage:
    if not isinstance(raw, dict):
        return llm.Usage()
    creation = raw.get("cache_creation") if isinstance(raw.get("cache_creation"), dict) else {}
    server = raw.get("server_tool_use") if isinstance(raw.get("server_tool_use"), dict) else {}
    assert isinstance(creation, dict) and isinstance(server, dict)
    return llm.Usage(
        input_tokens=count(raw.get("input_tokens")),
        output_tokens=count(raw.get("output_tokens")),
        cache_read_tokens=count(raw.get("cache_read_input_tokens")),
        cache_write_tokens=count(raw.get("cache_creation_input_tokens")),
        cache_write_1h_tokens=count(creation.get("ephemeral_1h_input_tokens")),
        web_search_requests=count(server.get("web_search_requests")),
        web_fetch_requests=count(server.get("web_fetch_requests")),
    )
