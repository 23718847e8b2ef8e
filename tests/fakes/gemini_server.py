"""Fake Gemini API ``generateContent`` (``POST /v1beta/models/{m}:generateContent``),
in the shapes the real API sends."""

from __future__ import annotations

from typing import Any

from tests.fakes.http import FakeHTTPServer, Reply

MODEL = "gemini-3.8-flash"


def text(value: str, *, signature: str | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"text": value}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def function_call(
    name: str, args: Any, *, id: str | None = None, signature: str | None = None
) -> dict[str, Any]:
    call: dict[str, Any] = {"name": name, "args": args}
    if id is not None:
        call["id"] = id
    part: dict[str, Any] = {"functionCall": call}
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def usage(
    prompt: int = 10, candidates: int = 5, *, thoughts: int = 0, cached: int = 0
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": candidates,
        "totalTokenCount": prompt + candidates + thoughts,
        "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}],
    }
    if thoughts:
        out["thoughtsTokenCount"] = thoughts
    if cached:
        out["cachedContentTokenCount"] = cached
    return out


def response(
    parts: list[dict[str, Any]],
    finish_reason: str = "STOP",
    *,
    usage_: dict[str, Any] | None = None,
    model: str = MODEL,
    grounding: dict[str, Any] | None = None,
    response_id: str = "resp_fake",
) -> dict[str, Any]:
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": parts},
        "finishReason": finish_reason,
        "index": 0,
    }
    if grounding is not None:
        candidate["groundingMetadata"] = grounding
    return {
        "candidates": [candidate],
        "usageMetadata": usage_ or usage(),
        "modelVersion": model,
        "responseId": response_id,
    }


def error_body(
    code: int, status: str, msg: str, *, retry_delay: str | None = None, reason: str | None = None
) -> dict[str, Any]:
    details: list[dict[str, Any]] = [
        {"@type": "type.googleapis.com/google.rpc.Help", "links": []},
    ]
    if reason is not None:
        info = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}
        details.insert(0, {**info, "domain": "googleapis.com"})
    if retry_delay is not None:
        details.append(
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay}
        )
    return {"error": {"code": code, "message": msg, "status": status, "details": details}}


class FakeGemini(FakeHTTPServer):
    def reply(
        self,
        parts: list[dict[str, Any]],
        finish_reason: str = "STOP",
        *,
        usage_: dict[str, Any] | None = None,
        grounding: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.push(
            Reply(
                json=response(parts, finish_reason, usage_=usage_, grounding=grounding), delay=delay
            )
        )

    def error(
        self,
        code: int,
        status: str,
        msg: str,
        *,
        retry_delay: str | None = None,
        reason: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.push(
            Reply(
                code,
                json=error_body(code, status, msg, retry_delay=retry_delay, reason=reason),
                headers=headers or {},
            )
        )
