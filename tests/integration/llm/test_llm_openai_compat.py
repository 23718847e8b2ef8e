"""OpenAICompatProvider (local Ollama / llama.cpp / vLLM dialect) against a fake server."""

from __future__ import annotations

import pytest
import trio

from tests.fakes import Reply
from tests.fakes import openai_server as O
from tests.fakes.llm import EXTRACT, FETCH, OPENAI_KEY
from tests.fakes.openai_server import FakeOpenAI
from tsukud.llm.openai_compat import OpenAICompatProvider
from tsukud.llm.provider import (
    MalformedToolArguments,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderRateLimited,
    ProviderServerError,
    ProviderTimeout,
    UnsupportedRequest,
)
from tsukud.llm.types import (
    Request,
    StopReason,
    ToolChoice,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    WebSearch,
)

ASK = UserMessage("Pick the linux/amd64 asset")


async def test_tool_round_trip(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    openai_fake.reply(
        None,
        [
            O.tool_call("call_1", "fetch_file", {"path": "README.md"}),
            O.tool_call("call_2", "fetch_file", {"path": "LICENSE"}),
        ],
        "tool_calls",
    )
    openai_fake.reply("Done.")
    request = Request(messages=(ASK,), system="You write recipes.", tools=(FETCH, EXTRACT))
    first = await local.complete(request)
    assert first.stop_reason is StopReason.TOOL_USE
    assert [(c.id, c.arguments) for c in first.tool_calls] == [
        ("call_1", {"path": "README.md"}),
        ("call_2", {"path": "LICENSE"}),
    ]
    assert first.usage == Usage(10, 5)

    results = ToolResultsMessage(
        (ToolResult("call_1", "readme"), ToolResult("call_2", "missing", is_error=True))
    )
    second = await local.complete(
        Request(
            messages=(ASK, first.message, results, UserMessage("extract now")),
            system="You write recipes.",
            tools=(FETCH, EXTRACT),
        )
    )
    assert second.text == "Done." and second.stop_reason is StopReason.END_TURN

    sent = openai_fake.requests[1]
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {OPENAI_KEY}"
    messages = sent.json()["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert messages[2]["tool_calls"][0] == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "fetch_file", "arguments": '{"path":"README.md"}'},
    }
    assert messages[3] == {"role": "tool", "tool_call_id": "call_1", "content": "readme"}
    assert messages[4]["content"] == "ERROR: missing"
    assert sent.json()["tools"][1]["function"]["parameters"] == EXTRACT.input_schema


async def test_tool_choice_mapping(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    for _ in range(3):
        openai_fake.reply("x")
    tools = (FETCH, EXTRACT)
    await local.complete(
        Request(messages=(ASK,), tools=tools, tool_choice=ToolChoice.tool("extract_pattern"))
    )
    await local.complete(Request(messages=(ASK,), tools=tools, tool_choice=ToolChoice.any()))
    await local.complete(Request(messages=(ASK,), tools=tools, parallel_tool_calls=False))
    sent = [r.json() for r in openai_fake.requests]
    assert sent[0]["tool_choice"] == {"type": "function", "function": {"name": "extract_pattern"}}
    assert sent[1]["tool_choice"] == "required"
    assert (sent[2]["tool_choice"], sent[2]["parallel_tool_calls"]) == ("auto", False)


async def test_missing_ids_and_object_arguments_are_tolerated(
    local: OpenAICompatProvider, openai_fake: FakeOpenAI
) -> None:
    call = O.tool_call(None, "fetch_file", "{}")
    call["function"]["arguments"] = {"path": "a"}  # some servers send an object
    openai_fake.reply(None, [call], "stop")
    response = await local.complete(Request(messages=(ASK,), tools=(FETCH,)))
    assert response.stop_reason is StopReason.TOOL_USE
    (only,) = response.tool_calls
    assert only.id.startswith("openai_call_") and only.arguments == {"path": "a"}


async def test_malformed_arguments(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    openai_fake.reply(None, [O.tool_call("call_9", "fetch_file", '{"path": ')], "tool_calls")
    with pytest.raises(MalformedToolArguments) as info:
        await local.complete(Request(messages=(ASK,), tools=(FETCH,)))
    assert (info.value.call_id, info.value.raw_arguments) == ("call_9", '{"path": ')


async def test_max_tokens(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    openai_fake.reply("trunc", finish_reason="length")
    assert (await local.complete(Request(messages=(ASK,)))).stop_reason is StopReason.MAX_TOKENS


async def test_errors(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    openai_fake.error(429, "busy", headers={"retry-after": "3"})
    openai_fake.error(500, "model crashed")
    openai_fake.error(401, "bad key")
    openai_fake.push(Reply(404, json={"error": "model 'x' not found, try pulling it first"}))
    with pytest.raises(ProviderRateLimited) as limited:
        await local.complete(Request(messages=(ASK,)))
    assert limited.value.retry_after == 3
    with pytest.raises(ProviderServerError):
        await local.complete(Request(messages=(ASK,)))
    with pytest.raises(ProviderAuthError):
        await local.complete(Request(messages=(ASK,)))
    with pytest.raises(Exception, match="try pulling it first") as missing:
        await local.complete(Request(messages=(ASK,)))
    assert not missing.value.retryable  # type: ignore[attr-defined]
    with pytest.raises(UnsupportedRequest):
        await local.complete(Request(messages=(ASK,), server_tools=(WebSearch(),)))


async def test_server_down_timeout_and_cancel(openai_fake: FakeOpenAI) -> None:
    down = OpenAICompatProvider("http://127.0.0.1:9", model="m", timeout=2)
    with pytest.raises(ProviderConnectionError):
        await down.complete(Request(messages=(ASK,)))
    await down.aclose()

    slow = OpenAICompatProvider(openai_fake.url, model="m", timeout=0.3)
    openai_fake.reply("late", delay=3)
    openai_fake.reply("late", delay=3)
    try:
        with pytest.raises(ProviderTimeout):
            await slow.complete(Request(messages=(ASK,)))
        started = trio.current_time()
        with trio.move_on_after(0.1) as scope:
            await slow.complete(Request(messages=(ASK,)))
        assert scope.cancelled_caught and trio.current_time() - started < 0.5
    finally:
        await slow.aclose()
