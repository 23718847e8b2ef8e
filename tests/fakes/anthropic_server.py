"""Fake Anthropic Messages API (``POST /v1/messages``), in the shapes the real API sends."""

from __future__ import annotations

from typing import Any

from tests.fakes.http import FakeHTTPServer, Reply

MODEL = "claude-sonnet-5-5"


def text(value: str, **extra: Any) -> dict[str, Any]:
    return {"type": "text", "text": value, **extra}


def tool_use(id: str, name: str, input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


def server_tool_use(id: str, query: str) -> dict[str, Any]:
    return {"type": "server_tool_use", "id": id, "name": "web_search", "input": {"query": query}}


def web_search_result(tool_use_id: str, url: str, title: str) -> dict[str, Any]:
    return {
        "type": "web_search_tool_result",
        "tool_use_id": tool_use_id,
        "content": [
            {
                "type": "web_search_result",
                "url": url,
                "title": title,
                "encrypted_content": "EqgfCioIARgBIiQ3YTAw+opaque/==",
                "page_age": "May 12, 2025",
            }
        ],
    }


def usage(
    input: int = 10,
    output: int = 5,
    *,
    cache_read: int = 0,
    cache_write: int = 0,
    cache_write_1h: int = 0,
    web_searches: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "input_tokens": input,
        "output_tokens": output,
        "cache_creation_input_tokens": cache_write,
        "cache_read_input_tokens": cache_read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": cache_write - cache_write_1h,
            "ephemeral_1h_input_tokens": cache_write_1h,
        },
        "server_tool_use": None,
        "service_tier": "standard",
    }
    if web_searches is not None:
        out["server_tool_use"] = {"web_search_requests": web_searches, "web_fetch_requests": 0}
    return out


def message(
    content: list[dict[str, Any]],
    stop_reason: str = "end_turn",
    *,
    model: str = MODEL,
    usage_: dict[str, Any] | None = None,
    id: str = "msg_01fake",
) -> dict[str, Any]:
    return {
        "id": id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage_ or usage(),
    }


def error_body(kind: str, msg: str, request_id: str = "req_fake") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": msg}, "request_id": request_id}


class FakeAnthropic(FakeHTTPServer):
    def reply(
        self,
        content: list[dict[str, Any]],
        stop_reason: str = "end_turn",
        *,
        usage_: dict[str, Any] | None = None,
        model: str = MODEL,
        request_id: str = "req_fake_1",
        delay: float = 0.0,
    ) -> None:
        self.push(
            Reply(
                json=message(content, stop_reason, model=model, usage_=usage_),
                headers={"request-id": request_id},
                delay=delay,
            )
        )

    def error(
        self, status: int, kind: str, msg: str, *, headers: dict[str, str] | None = None
    ) -> None:
        self.push(
            Reply(
                status,
                json=error_body(kind, msg),
                headers={"request-id": "req_err", **(headers or {})},
            )
        )
