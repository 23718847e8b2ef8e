"""Fake Gemini API ``generateContent`` (``POST /v1beta/models/{m}:generateContent``):
scripted answers in the API's shapes, every request checked against the API's rules
(:mod:`tests.fakes.llm_rules`), and thought signatures the way Gemini 3 gives them."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from tests.fakes.http import RecordedRequest, Reply, Responder
from tests.fakes.llm import StrictFake
from tests.fakes.llm_rules import enforces_thought_signatures, gemini_violations, signature_bytes

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


_ENDPOINT = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:?]+):generateContent(?:\?.*)?$")


def signed(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``parts`` as a Gemini 3 model sends them: the first function call carries a
    thought signature (parallel calls after it carry none). The signature is opaque
    base64 derived from the parts, so the same scripted answer is the same bytes."""
    out = [dict(p) for p in parts]
    first = next((p for p in out if "functionCall" in p), None)
    if first is not None and "thoughtSignature" not in first:
        digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
        first["thoughtSignature"] = base64.b64encode(b"\x12\x9f" + digest).decode()
    return out


def requested_model(request: RecordedRequest) -> str | None:
    match = _ENDPOINT.match(request.path) if request.method == "POST" else None
    return match.group(1) if match else None


class FakeGemini(StrictFake):
    """Answers as the requested model: scripted function calls gain the signature a
    Gemini 3 model attaches, and a Gemini 3 request must send the signatures of its
    current turn back unchanged (or Google's documented stand-in for foreign calls)."""

    service = "gemini"

    def __init__(self, fallback: Responder | None = None) -> None:
        super().__init__(fallback)
        self.issued_signatures: set[bytes] = set()

    def violations_of(self, request: RecordedRequest) -> list[str]:
        model = requested_model(request)
        if model is None:
            return [f"no such endpoint: {request.method} {request.path}"]
        with self._lock:
            issued = frozenset(self.issued_signatures)
        return gemini_violations(model, request.json(), issued)

    def rejection(self, problems: list[str]) -> Reply:
        return Reply(400, json=error_body(400, "INVALID_ARGUMENT", problems[0]))

    def handle(self, request: RecordedRequest) -> Reply:
        reply = super().handle(request)
        answer = reply.json if isinstance(reply.json, dict) else {}
        for candidate in answer.get("candidates") or []:
            for part in (candidate.get("content") or {}).get("parts") or []:
                signature = signature_bytes(part.get("thoughtSignature") or "")
                if signature:
                    with self._lock:
                        self.issued_signatures.add(signature)
        return reply

    def reply(
        self,
        parts: list[dict[str, Any]],
        finish_reason: str = "STOP",
        *,
        usage_: dict[str, Any] | None = None,
        grounding: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> None:
        def answer(request: RecordedRequest) -> Reply:
            model = requested_model(request) or MODEL
            sent = signed(parts) if enforces_thought_signatures(model) else parts
            # Google answers with the version of the model asked for (its price row).
            body = response(sent, finish_reason, usage_=usage_, model=model, grounding=grounding)
            return Reply(json=body, delay=delay)

        self.push(answer)

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
