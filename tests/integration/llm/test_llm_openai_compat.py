"""OpenAICompatProvider (local Ollama / llama.cpp / vLLM dialect) against a fake server."""

from __future__ import annotations

import pytest

from tests.fakes import Reply
from tests.fakes import openai_server as O
from tests.fakes.llm import EXTRACT, FETCH, OPENAI_KEY
from tests.fakes.openai_server import FakeOpenAI
from tsukud.llm.openai_compat import OpenAICompatProvider
from tsukud.llm.provider import (
    ProviderRequestError,
    UnsupportedRequest,
)
from tsukud.llm.types import (
    Request,
    StopReason,
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


async def test_no_parallel_calls(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    openai_fake.reply("x")
    await local.complete(Request(messages=(ASK,), tools=(FETCH,), parallel_tool_calls=False))
    sent = openai_fake.last_json()
    assert (sent["tool_choice"], sent["parallel_tool_calls"]) == ("auto", False)


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


async def test_max_tokens(local: OpenAICompatProvider, openai_fake: FakeOpenAI) -> None:
    openai_fake.reply("trunc", finish_reason="length")
    assert (await local.complete(Request(messages=(ASK,)))).stop_reason is StopReason.MAX_TOKENS


async def test_plain_string_errors_and_no_web_search(
    local: OpenAICompatProvider, openai_fake: FakeOpenAI
) -> None:
    """Ollama answers a missing model with a bare string as the error."""
    openai_fake.push(Reply(404, json={"error": "model 'x' not found, try pulling it first"}))
    with pytest.raises(ProviderRequestError, match="try pulling it first") as missing:
        await local.complete(Request(messages=(ASK,)))
    assert not missing.value.retryable
    with pytest.raises(UnsupportedRequest):
        await local.complete(Request(messages=(ASK,), server_tools=(WebSearch(),)))
