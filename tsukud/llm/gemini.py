"""Gemini through google-genai's async client (``client.aio``), Gemini API (v1beta).

Trio: google-genai's default async transport is aiohttp (asyncio only) when aiohttp is
importable, and its fallback httpx client keeps one pool per *asyncio* loop
(``asyncio.get_running_loop()``), which fails under trio. Passing our own
``httpx2.AsyncClient`` as ``HttpOptions.httpx_async_client`` selects its plain httpx
path, which only awaits ``client.request(...)``; httpx2 runs on trio. Its retry
wrapper (tenacity) is left at one attempt, so it never sleeps.

We ask the SDK for the raw HTTP body (``should_return_http_response``) and parse it
ourselves: parts go back to the API as the API sent them (thought signatures, ids).
History is rebuilt with the SDK's JSON-mode validation because its Python-mode
validation would treat a base64 ``thoughtSignature`` string as raw bytes.
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx2
import msgspec
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as gt
from google.genai.client import DebugConfig

from tsukud.llm import types as llm
from tsukud.llm.adapter import HttpAdapter, count, text_or_none, turns
from tsukud.llm.provider import (
    MalformedToolArguments,
    ProviderError,
    UnsupportedRequest,
    parse_retry_after,
    synthetic_call_id,
)
from tsukud.llm.providers import BY_NAME

WIRE = "gemini"

_REFUSALS = {
    "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
    "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION",
}  # fmt: skip
_MODES = {"auto": "AUTO", "any": "ANY", "tool": "ANY", "none": "NONE"}
FOREIGN_SIGNATURE = "skip_thought_signature_validator"
"""What Google documents for function calls Gemini did not produce (another provider's
turns after a failover, or an unsigned call of an older Gemini): Gemini 3 refuses a
call of the current turn without a thought signature, and this value skips the check.
Sent as this literal string on the wire (the SDK turns it into bytes and back
unchanged: it is canonical base64). https://ai.google.dev/gemini-api/docs/thought-signatures#faqs
"""
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]*)?)s\s*$")


_SPEC = BY_NAME["gemini"]


class GeminiProvider(HttpAdapter):
    """Gemini's own parts (thought signatures, call ids) go back as Gemini sent them;
    another provider's calls in the current turn get Google's documented stand-in
    signature (:func:`_sign_current_turn`)."""

    key_hint = "GOOGLE_API_KEY / GEMINI_API_KEY (and TSUKU_GEMINI_BASE_URL if you set one)"

    def __init__(
        self,
        api_key: str,
        *,
        model: str = _SPEC.default_model,
        api_version: str = "v1beta",
        base_url: str = _SPEC.default_url,
        timeout: float = 300.0,
        connect_timeout: float = 10.0,
        name: str = "gemini",
        http_client: httpx2.AsyncClient | None = None,
        proxy: str | None = None,
    ) -> None:
        super().__init__(
            name, model, base_url, api_key, timeout, connect_timeout, http_client, proxy
        )
        self._client = genai.Client(
            api_key=api_key,
            # Explicit, so GOOGLE_GENAI_USE_VERTEXAI / GOOGLE_GENAI_CLIENT_MODE in the
            # environment cannot switch us to Vertex or to the SDK's own replay client.
            enterprise=False,
            debug_config=DebugConfig(client_mode=None, replays_directory=None, replay_id=None),
            http_options=gt.HttpOptions(
                base_url=base_url,
                api_version=api_version,
                # Per request, in ms; without it the SDK sends timeout=None, disabling ours.
                timeout=int(timeout * 1000),
                httpx_async_client=self._http,
            ),
        )

    async def complete(self, request: llm.Request) -> llm.Response:
        started = time.monotonic()
        model = request.model or self._model
        contents = sdk_contents(build_contents(request.messages))
        config = build_config(request, model)

        async def call() -> gt.GenerateContentResponse:
            return await self._client.aio.models.generate_content(
                model=model, contents=contents, config=config
            )

        try:
            result = await self._within(call)
        except genai_errors.APIError as exc:
            raise self._status_error(exc) from None
        except httpx2.TransportError as exc:
            raise self._transport_error(exc) from None
        http = result.sdk_http_response
        body = self._json_object(http.body if http else None, None)
        parts, raw_stop, stop, usage = parse_response(body, self._name, model)
        answered_by = str(body.get("modelVersion") or model)
        request_id = text_or_none(body.get("responseId"))
        sources = citations(body)
        return self._response(
            parts, stop, raw_stop, usage, answered_by, request_id, started, sources
        )

    def _status_error(self, exc: genai_errors.APIError) -> ProviderError:
        details = exc.details if isinstance(exc.details, dict) else {}
        err = details.get("error", details)
        detail = f"{exc.status or ''}: {exc.message or ''}".strip(": ")
        retry_after = _retry_delay(err) if isinstance(err, dict) else None
        status = int(exc.code)
        if status == 400 and isinstance(err, dict) and _reason(err) == "API_KEY_INVALID":
            status = 401  # Gemini reports a bad key as 400 INVALID_ARGUMENT
        if retry_after is None and exc.response is not None:
            headers = getattr(exc.response, "headers", None)
            if headers is not None:
                retry_after = parse_retry_after(headers)
        return self._http_error(status, detail, retry_after=retry_after)


def _reason(error: dict[str, Any]) -> str | None:
    """``google.rpc.ErrorInfo.reason``, e.g. ``API_KEY_INVALID``."""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith(
            "google.rpc.ErrorInfo"
        ):
            return str(detail.get("reason"))
    return None


def _retry_delay(error: dict[str, Any]) -> float | None:
    """``google.rpc.RetryInfo.retryDelay`` (a proto Duration such as ``"37s"``)."""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith(
            "google.rpc.RetryInfo"
        ):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


# ------------------------------------------------------------------- request side


def build_config(request: llm.Request, model: str) -> gt.GenerateContentConfig:
    tools: list[gt.Tool] = []
    if request.tools:
        tools.append(
            gt.Tool(
                function_declarations=[
                    gt.FunctionDeclaration(
                        name=t.name,
                        description=t.description,
                        parameters_json_schema=t.input_schema,
                    )
                    for t in request.tools
                ]
            )
        )
    searches = [s for s in request.server_tools if isinstance(s, llm.WebSearch)]
    if searches:
        excluded = [d for s in searches for d in s.blocked_domains]
        tools.append(gt.Tool(google_search=gt.GoogleSearch(exclude_domains=excluded or None)))
    tool_config: gt.ToolConfig | None = None
    if request.tools:
        choice = request.tool_choice
        tool_config = gt.ToolConfig(
            function_calling_config=gt.FunctionCallingConfig(
                mode=gt.FunctionCallingConfigMode(_MODES[choice.mode]),
                allowed_function_names=[choice.name] if choice.name else None,
            )
        )
        if searches:
            if re.match(r"gemini-[12]\.", model):
                raise UnsupportedRequest(
                    f"{model} cannot combine Google Search and function calls in one request",
                    provider=WIRE,
                    hint="Search and call functions in separate requests, or use Gemini 3.",
                )
            tool_config.include_server_side_tool_invocations = True
    return gt.GenerateContentConfig(
        system_instruction=request.system or None,
        max_output_tokens=request.max_tokens,
        temperature=request.temperature,
        tools=tools or None,  # type: ignore[arg-type]
        tool_config=tool_config,
        # One complete() is one HTTP request: the breaker and the ledger see each call.
        automatic_function_calling=gt.AutomaticFunctionCallingConfig(disable=True),
        automatic_continuation=False,
        should_return_http_response=True,
    )


def _model_parts(
    message: llm.AssistantMessage, calls: dict[str, tuple[str, str | None]]
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, llm.ProviderBlock):
            if part.provider == WIRE:
                parts.append(part.data)
            continue
        if isinstance(part, llm.ToolCall):
            if part.raw is not None and part.raw.provider == WIRE:
                sent = part.raw.data.get("functionCall") or {}
                calls[part.id] = (part.name, sent.get("id") if isinstance(sent, dict) else None)
            else:
                calls[part.id] = (part.name, part.id)
        if part.raw is not None and part.raw.provider == WIRE:
            parts.append(part.raw.data)
        elif isinstance(part, llm.TextPart):
            if part.text:
                parts.append({"text": part.text})
        else:
            parts.append(
                {"functionCall": {"id": part.id, "name": part.name, "args": part.arguments}}
            )
    return parts


def _user_parts(
    message: llm.UserMessage | llm.ToolResultsMessage, calls: dict[str, tuple[str, str | None]]
) -> list[dict[str, Any]]:
    if isinstance(message, llm.UserMessage):
        return [{"text": message.text}]
    parts: list[dict[str, Any]] = []
    for result in message.results:
        name, wire_id = calls.get(result.call_id, (result.name, result.call_id))
        name = result.name or name
        if not name:
            raise UnsupportedRequest(
                f"tool result {result.call_id!r} answers no earlier tool call and has no name",
                provider=WIRE,
            )
        response: dict[str, Any] = {"error" if result.is_error else "output": result.content}
        function_response: dict[str, Any] = {"name": name, "response": response}
        if wire_id is not None:
            function_response["id"] = wire_id  # echo the model's id; omit when it sent none
        parts.append({"functionResponse": function_response})
    return parts


def build_contents(messages: tuple[llm.Message, ...]) -> list[dict[str, Any]]:
    """One content per turn, roles kept (``user``/``model``); function responses first,
    and the current turn's calls signed (:func:`_sign_current_turn`)."""
    calls: dict[str, tuple[str, str | None]] = {}  # call id -> (name, id on the wire)
    laid_out = turns(
        messages,
        lambda m: _model_parts(m, calls),
        lambda m: _user_parts(m, calls),
        lambda p: "functionResponse" in p,
    )
    out = [
        {"role": "model" if role == "assistant" else "user", "parts": parts}
        for role, parts in laid_out
    ]
    _sign_current_turn(out)
    return out


def _sign_current_turn(contents: list[dict[str, Any]]) -> None:
    """Give the first function call of every model step in the current turn a thought
    signature where it has none: :data:`FOREIGN_SIGNATURE`, as Google documents.

    The current turn is everything after the newest user content that holds more than
    function responses; only its signatures are validated, and only the first call of
    each step carries one (Gemini's own parallel calls after it carry none).
    https://ai.google.dev/gemini-api/docs/thought-signatures
    """
    start = 0
    for index in range(len(contents) - 1, -1, -1):
        content = contents[index]
        if content["role"] == "user" and any("functionResponse" not in p for p in content["parts"]):
            start = index + 1
            break
    for content in contents[start:]:
        if content["role"] != "model":
            continue
        parts = content["parts"]
        first = next((i for i, p in enumerate(parts) if "functionCall" in p), None)
        if first is not None and not parts[first].get("thoughtSignature"):
            # A copy: the part may be the history's own raw block.
            parts[first] = {**parts[first], "thoughtSignature": FOREIGN_SIGNATURE}


# The SDK's models forbid fields they do not know; a part from a newer API version
# would make the whole history unsendable, so such fields are dropped (the SDK could
# not have sent them anyway).
_PART_KEYS = frozenset(f.alias or n for n, f in gt.Part.model_fields.items())


def sdk_contents(contents: list[dict[str, Any]]) -> list[gt.Content]:
    """Wire-shaped contents to SDK models, validated in JSON mode so base64
    ``thoughtSignature`` strings decode to the bytes they stand for."""
    out: list[gt.Content] = []
    for content in contents:
        parts = [{k: v for k, v in p.items() if k in _PART_KEYS} for p in content["parts"]]
        parts = [p for p in parts if p]
        if parts:
            out.append(
                gt.Content.model_validate_json(
                    msgspec.json.encode({"role": content["role"], "parts": parts})
                )
            )
    return out


# ------------------------------------------------------------------ response side


def _usage(body: dict[str, Any], candidate: dict[str, Any]) -> llm.Usage:
    meta = body.get("usageMetadata")
    meta = meta if isinstance(meta, dict) else {}
    cached = count(meta.get("cachedContentTokenCount"))
    grounding = candidate.get("groundingMetadata")
    queries: list[Any] = []
    grounded = 0
    if isinstance(grounding, dict):
        queries = [q for q in grounding.get("webSearchQueries") or [] if q]
        grounded = int(bool(queries or grounding.get("groundingChunks")))
    return llm.Usage(
        # promptTokenCount includes the cached part; tool-use prompt tokens are input too.
        input_tokens=max(0, count(meta.get("promptTokenCount")) - cached)
        + count(meta.get("toolUsePromptTokenCount")),
        output_tokens=count(meta.get("candidatesTokenCount")),
        cache_read_tokens=cached,
        thoughts_tokens=count(meta.get("thoughtsTokenCount")),
        web_search_requests=len(queries),
        grounded_prompts=grounded,
    )


def citations(body: dict[str, Any]) -> tuple[llm.Citation, ...]:
    """The grounding chunks (``web.uri``, ``web.title``) of the first candidate, each
    with the answer segments ``groundingSupports`` attribute to it."""
    candidates = body.get("candidates") or []
    candidate = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
    grounding = candidate.get("groundingMetadata")
    if not isinstance(grounding, dict):
        return ()
    chunks = grounding.get("groundingChunks")
    chunks = chunks if isinstance(chunks, list) else []
    texts: dict[int, list[str]] = {}
    for support in grounding.get("groundingSupports") or []:
        if not isinstance(support, dict):
            continue
        segment = support.get("segment")
        text = segment.get("text") if isinstance(segment, dict) else None
        if not isinstance(text, str) or not text:
            continue
        for index in support.get("groundingChunkIndices") or []:
            if isinstance(index, int) and text not in texts.setdefault(index, []):
                texts[index].append(text)
    out: list[llm.Citation] = []
    for index, chunk in enumerate(chunks):
        web = chunk.get("web") if isinstance(chunk, dict) else None
        if isinstance(web, dict) and isinstance(web.get("uri"), str) and web["uri"]:
            title = web.get("title")
            out.append(
                llm.Citation(
                    web["uri"],
                    title if isinstance(title, str) else "",
                    "\n".join(texts.get(index, ())),
                )
            )
    return tuple(out)


def parse_response(
    body: dict[str, Any], provider: str, model: str
) -> tuple[list[llm.AssistantPart], str, llm.StopReason, llm.Usage]:
    candidates = body.get("candidates") or []
    candidate = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
    usage = _usage(body, candidate)
    if not candidate:
        feedback = body.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, dict) else None
        if reason:
            return [], f"blockReason:{reason}", llm.StopReason.REFUSAL, usage
        return [], "", llm.StopReason.OTHER, usage
    content = candidate.get("content")
    raw_parts = content.get("parts") if isinstance(content, dict) else None
    raw_parts = [p for p in raw_parts or [] if isinstance(p, dict)]
    finish = str(candidate.get("finishReason") or "")
    if finish == "MALFORMED_FUNCTION_CALL":
        raise MalformedToolArguments(
            f"{provider}: the model produced a malformed function call",
            provider=provider,
            tool_name=None,
            call_id=None,
            raw_arguments=str(candidate.get("finishMessage") or ""),
            usage=usage,
            model=model,
        )
    seed = msgspec.json.encode(raw_parts)
    parts: list[llm.AssistantPart] = []
    for index, part in enumerate(raw_parts):
        call = part.get("functionCall")
        if isinstance(call, dict):
            args = call.get("args")
            if args is None:
                args = {}
            if not isinstance(args, dict):
                raise MalformedToolArguments(
                    f"{provider}: function call {call.get('name')!r} has arguments "
                    "that are not a JSON object",
                    provider=provider,
                    tool_name=str(call.get("name")),
                    call_id=text_or_none(call.get("id")),
                    raw_arguments=msgspec.json.encode(args).decode(),
                    usage=usage,
                    model=model,
                )
            call_id = text_or_none(call.get("id")) or synthetic_call_id(WIRE, seed, index)
            parts.append(
                llm.ToolCall(
                    call_id, str(call.get("name")), args, raw=llm.ProviderBlock(WIRE, part)
                )
            )
        elif part.get("thought") or not isinstance(part.get("text"), str):
            parts.append(llm.ProviderBlock(WIRE, part))
        else:
            extra = any(v is not None for k, v in part.items() if k != "text")
            parts.append(
                llm.TextPart(part["text"], raw=llm.ProviderBlock(WIRE, part) if extra else None)
            )
    if finish in ("STOP", ""):
        has_calls = any(isinstance(p, llm.ToolCall) for p in parts)
        stop = llm.StopReason.TOOL_USE if has_calls else llm.StopReason.END_TURN
    elif finish == "MAX_TOKENS":
        stop = llm.StopReason.MAX_TOKENS
    elif finish in _REFUSALS:
        stop = llm.StopReason.REFUSAL
    else:
        stop = llm.StopReason.OTHER
    return parts, finish, stop, usage
