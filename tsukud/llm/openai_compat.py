"""Local OpenAI-compatible servers (Ollama, llama.cpp server, vLLM) over httpx2.

``POST {base}/v1/chat/completions`` with ``tools``; tool results go back as ``tool``
role messages. No SDK: the protocol is small and every such server speaks a slightly
different dialect, so we keep the parsing forgiving (missing ids, ``arguments`` given
as an object instead of a JSON string, error bodies that are plain strings).
"""

from __future__ import annotations

import time
from typing import Any

import httpx2
import msgspec

from tsukud.llm import types as llm
from tsukud.llm.adapter import HttpAdapter, count, text_or_none
from tsukud.llm.provider import (
    MalformedToolArguments,
    UnsupportedRequest,
    parse_retry_after,
    synthetic_call_id,
)

WIRE = "openai"

_MALFORMED = object()
_STOP = {
    "stop": llm.StopReason.END_TURN,
    "tool_calls": llm.StopReason.TOOL_USE,
    "function_call": llm.StopReason.TOOL_USE,
    "length": llm.StopReason.MAX_TOKENS,
    "content_filter": llm.StopReason.REFUSAL,
}


class OpenAICompatProvider(HttpAdapter):
    """Speaks ``/v1/chat/completions`` with plain httpx2; no server-side tools."""

    key_hint = "the API key configured for the local OpenAI-compatible server"

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str | None = None,
        timeout: float = 600.0,
        connect_timeout: float = 5.0,
        name: str = "local",
        http_client: httpx2.AsyncClient | None = None,
        proxy: str | None = None,
    ) -> None:
        super().__init__(
            name,
            model,
            base_url.rstrip("/") + "/v1/chat/completions",
            api_key,
            timeout,
            connect_timeout,
            http_client,
            proxy,
        )
        self._headers = {"authorization": f"Bearer {api_key}"} if api_key else {}

    async def complete(self, request: llm.Request) -> llm.Response:
        if request.server_tools:
            raise UnsupportedRequest(
                f"{self._name}: OpenAI-compatible servers have no server-side web search",
                provider=self._name,
            )
        started = time.monotonic()
        model = request.model or self._model
        payload = build_payload(request, model)

        async def call() -> httpx2.Response:
            return await self._http.post(self._url, json=payload, headers=self._headers)

        try:
            http = await self._within(call)
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from None
        request_id = http.headers.get("x-request-id")
        if http.status_code >= 400:
            raise self._http_error(
                http.status_code,
                _error_detail(http),
                request_id=request_id,
                retry_after=parse_retry_after(http.headers),
            )
        body = self._json_object(http.content, request_id)
        parts, raw_stop, usage = parse_completion(body, self._name, model)
        stop = _STOP.get(raw_stop, llm.StopReason.OTHER)
        if stop == llm.StopReason.END_TURN and any(isinstance(p, llm.ToolCall) for p in parts):
            stop = llm.StopReason.TOOL_USE  # some servers say "stop" even when calling tools
        answered_by = str(body.get("model") or model)
        request_id = request_id or text_or_none(body.get("id"))
        return self._response(parts, stop, raw_stop, usage, answered_by, request_id, started)


def _error_detail(http: httpx2.Response) -> str:
    """The error's message, from ``{"error": {"message": ...}}``, ``{"error": "..."}``
    (Ollama) or the body as text."""
    try:
        body = msgspec.json.decode(http.content)
    except msgspec.DecodeError:
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err)
        if isinstance(err, str):
            return err
    return http.text[:500]


# ------------------------------------------------------------------- request side


def _tool_choice(request: llm.Request) -> Any:
    choice = request.tool_choice
    if choice.mode == "tool":
        return {"type": "function", "function": {"name": choice.name}}
    return {"auto": "auto", "any": "required", "none": "none"}[choice.mode]


def build_messages(system: str, messages: tuple[llm.Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for message in messages:
        if isinstance(message, llm.UserMessage):
            out.append({"role": "user", "content": message.text})
        elif isinstance(message, llm.ToolResultsMessage):
            for result in message.results:
                content = result.content
                if result.is_error:  # the format has no error flag; say it in the content
                    content = f"ERROR: {content}"
                out.append({"role": "tool", "tool_call_id": result.call_id, "content": content})
        else:
            out.append(_assistant(message))
    return out


def _assistant(message: llm.AssistantMessage) -> dict[str, Any]:
    text = "".join(p.text for p in message.parts if isinstance(p, llm.TextPart))
    calls = [
        {
            "id": p.id,
            "type": "function",
            "function": {"name": p.name, "arguments": msgspec.json.encode(p.arguments).decode()},
        }
        for p in message.parts
        if isinstance(p, llm.ToolCall)
    ]
    turn: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        turn["tool_calls"] = calls
    return turn


def build_payload(request: llm.Request, model: str) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "model": model,
        "messages": build_messages(request.system, request.messages),
        "max_tokens": request.max_tokens,
        "stream": False,
    }
    if request.temperature is not None:
        payload["temperature"] = request.temperature
    if request.tools:
        payload["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
        payload["tool_choice"] = _tool_choice(request)
        if not request.parallel_tool_calls:
            payload["parallel_tool_calls"] = False
    return payload


# ------------------------------------------------------------------ response side


def _usage(raw: Any) -> llm.Usage:
    if not isinstance(raw, dict):
        return llm.Usage()
    prompt_details = raw.get("prompt_tokens_details")
    completion_details = raw.get("completion_tokens_details")
    cached = count(prompt_details.get("cached_tokens")) if isinstance(prompt_details, dict) else 0
    reasoning = (
        count(completion_details.get("reasoning_tokens"))
        if isinstance(completion_details, dict)
        else 0
    )
    return llm.Usage(
        input_tokens=max(0, count(raw.get("prompt_tokens")) - cached),
        output_tokens=max(0, count(raw.get("completion_tokens")) - reasoning),
        cache_read_tokens=cached,
        thoughts_tokens=reasoning,
    )


def parse_completion(
    body: dict[str, Any], provider: str, model: str
) -> tuple[list[llm.AssistantPart], str, llm.Usage]:
    usage = _usage(body.get("usage"))
    choices = body.get("choices") or []
    choice = choices[0] if choices and isinstance(choices[0], dict) else {}
    message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
    assert isinstance(message, dict)
    parts: list[llm.AssistantPart] = []
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(llm.ProviderBlock(WIRE, {"reasoning_content": reasoning}))
    content = message.get("content")
    if isinstance(content, str) and content:
        parts.append(llm.TextPart(content))
    raw_calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    seed = msgspec.json.encode(raw_calls)
    for index, call in enumerate(raw_calls):
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        assert isinstance(function, dict)
        name = str(function.get("name") or "")
        call_id = text_or_none(call.get("id")) or synthetic_call_id(WIRE, seed, index)
        arguments: Any = function.get("arguments")
        raw_text = (
            arguments if isinstance(arguments, str) else msgspec.json.encode(arguments).decode()
        )
        if isinstance(arguments, str):  # the standard form: a JSON document in a string
            try:
                arguments = msgspec.json.decode(arguments) if arguments.strip() else {}
            except msgspec.DecodeError:
                arguments = _MALFORMED
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise MalformedToolArguments(
                f"{provider}: tool call {name!r} has arguments that are not a JSON object",
                provider=provider,
                tool_name=name,
                call_id=call_id,
                raw_arguments=raw_text,
                usage=usage,
                model=model,
            )
        parts.append(llm.ToolCall(call_id, name, arguments))
    return parts, str(choice.get("finish_reason") or ""), usage
