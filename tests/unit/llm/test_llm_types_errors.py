"""Neutral types, typed errors and their helpers (no network)."""

from __future__ import annotations

import email.utils
import json
import time

import msgspec
import pytest
import trio

from tsukud.errors import ExitCode, ProviderUnavailable, TsukuError
from tsukud.llm.provider import (
    MalformedToolArguments,
    ProviderAuthError,
    ProviderError,
    ProviderOverloaded,
    ProviderRateLimited,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeout,
    error_for_status,
    parse_retry_after,
    within,
)
from tsukud.llm.types import (
    AssistantMessage,
    Message,
    ProviderBlock,
    Request,
    Response,
    StopReason,
    TextPart,
    Tool,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    WebSearch,
)
from tsukud.secrets import redact

TOOL = Tool("fetch_file", "Read a file", {"type": "object"})


def test_messages_round_trip_through_json() -> None:
    messages: tuple[Message, ...] = (
        UserMessage("hi"),
        AssistantMessage(
            (
                TextPart(
                    "a",
                    raw=ProviderBlock("anthropic", {"type": "text", "text": "a", "citations": []}),
                ),
                ProviderBlock("anthropic", {"type": "server_tool_use", "id": "s"}),
                ToolCall("t1", "fetch_file", {"path": "x"}),
            )
        ),
        ToolResultsMessage((ToolResult("t1", "body", is_error=True),)),
    )
    request = Request(
        messages=messages,
        tools=(TOOL,),
        tool_choice=ToolChoice.tool("fetch_file"),
        server_tools=(WebSearch(max_uses=2),),
        temperature=0.0,
    )
    assert msgspec.json.decode(msgspec.json.encode(request), type=Request) == request


def test_assistant_message_accessors() -> None:
    message = AssistantMessage((TextPart("a"), ToolCall("1", "f", {}), TextPart("b")))
    assert message.text == "ab"
    assert [c.id for c in message.tool_calls] == ["1"]
    response = Response(message, StopReason.TOOL_USE, "tool_use", Usage(), "claude", "m")
    assert response.text == "ab" and response.tool_calls == message.tool_calls


def test_request_validation() -> None:
    with pytest.raises(ValueError, match="not among the tools"):
        Request(messages=(UserMessage("x"),), tool_choice=ToolChoice.tool("missing"))
    with pytest.raises(ValueError):
        ToolChoice("tool")
    with pytest.raises(ValueError):
        Request(messages=(UserMessage("x"),), max_tokens=0)


def test_usage_adds_fieldwise() -> None:
    total = Usage(1, 2, 3, 4, 1, 5, 6, 7, 8) + Usage(10, 20, 30, 40, 10, 50, 60, 70, 80)
    assert total == Usage(11, 22, 33, 44, 11, 55, 66, 77, 88)


def test_error_hierarchy_feeds_breaker_and_cli() -> None:
    transient = error_for_status("claude", 503, "x", secrets=(), key_hint="K")
    assert isinstance(transient, ProviderServerError)
    assert isinstance(transient, ProviderUnavailable) and transient.retryable
    assert transient.code == "provider_unavailable"
    assert transient.exit_code == ExitCode.PROVIDER_UNAVAILABLE
    auth = error_for_status("claude", 401, "bad", secrets=(), key_hint="ANTHROPIC_API_KEY")
    assert isinstance(auth, ProviderAuthError) and isinstance(auth, TsukuError)
    assert not auth.retryable and "ANTHROPIC_API_KEY" in auth.hint
    assert auth.to_wire()["data"]["provider"] == "claude"
    json.dumps(auth.to_wire())  # wire form stays JSON
    mapping = {
        400: ProviderRequestError,
        404: ProviderRequestError,
        403: ProviderAuthError,
        408: ProviderServerError,
        429: ProviderRateLimited,
        500: ProviderServerError,
        529: ProviderOverloaded,
    }
    for status, cls in mapping.items():
        assert type(error_for_status("p", status, "", secrets=(), key_hint="k")) is cls
    gemini_503 = error_for_status(
        "gemini", 503, "", secrets=(), key_hint="k", overloaded_statuses=frozenset({503})
    )
    assert isinstance(gemini_503, ProviderOverloaded)


def test_malformed_arguments_error_is_wire_safe() -> None:
    err = MalformedToolArguments(
        "bad", provider="p", tool_name="f", call_id="c", raw_arguments="x" * 2000, usage=Usage(1, 2)
    )
    assert len(err.raw_arguments) == 500 and err.retryable
    json.dumps(err.to_wire())
    assert isinstance(err, ProviderError) and not isinstance(err, ProviderUnavailable)


def test_redact() -> None:
    text = (
        "key=my-secret-value and sk-ant-api03-AbCdEfGhIjKlMnOp"
        " and AIzaSyA1234567890abcdefghijklmnopqrstu"
    )
    out = redact(text, ["my-secret-value", None, ""])
    assert "my-secret-value" not in out and "sk-ant-api03" not in out and "AIzaSy" not in out
    assert out.count("[REDACTED]") == 3
    assert redact("version 1.2.3.4", ["x"]) == "version 1.2.3.4"


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "17"}) == 17.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({}) is None
    assert parse_retry_after({"retry-after": "soon"}) is None
    later = email.utils.formatdate(time.time() + 30, usegmt=True)
    value = parse_retry_after({"retry-after": later})
    assert value is not None and 25 < value <= 31


async def test_within_turns_a_deadline_into_provider_timeout() -> None:
    async def slow() -> int:
        await trio.sleep(5)
        return 1

    async def fast() -> int:
        return 2

    with pytest.raises(ProviderTimeout):
        await within(0.01, "p", slow)
    assert await within(1, "p", fast) == 2
    assert await within(None, "p", fast) == 2
