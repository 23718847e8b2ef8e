"""Fake OpenAI-compatible chat completions (``POST /v1/chat/completions``), the dialect
spoken by Ollama, llama.cpp server and vLLM. Requests are held to OpenAI's own rules
(:mod:`tests.fakes.llm_rules`), the strictest of the dialect."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.http import Reply
from tests.fakes.llm import StrictFake
from tests.fakes.llm_rules import openai_violations

MODEL = "qwen2.5-coder:7b"


def tool_call(id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    """``arguments`` is JSON-encoded unless it is already a string (to script bad JSON)."""
    encoded = arguments if isinstance(arguments, str) else json.dumps(arguments)
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": encoded}}
    if id is not None:
        call["id"] = id
    return call


def completion(
    content: str | None = None,
    tool_calls: list[dict[str, Any]] | None = None,
    finish_reason: str = "stop",
    *,
    prompt_tokens: int = 10,
    completion_tokens: int = 5,
    model: str = MODEL,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_790_000_000,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


class FakeOpenAI(StrictFake):
    service = "openai"
    endpoint = "/v1/chat/completions"

    def body_violations(self, body: Any) -> list[str]:
        return openai_violations(body)

    def rejection(self, problems: list[str]) -> Reply:
        error = {"message": problems[0], "type": "invalid_request_error", "param": None}
        return Reply(400, json={"error": {**error, "code": None}})

    def reply(
        self,
        content: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
        finish_reason: str = "stop",
        *,
        delay: float = 0.0,
        **kw: Any,
    ) -> None:
        self.push(Reply(json=completion(content, tool_calls, finish_reason, **kw), delay=delay))

    def error(self, status: int, msg: str, *, headers: dict[str, str] | None = None) -> None:
        self.push(
            Reply(
                status,
                json={"error": {"message": msg, "type": "server_error"}},
                headers=headers or {},
            )
        )
