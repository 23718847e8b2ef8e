"""ClaudeProvider through the real anthropic SDK against a fake Messages API, under trio."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
import sniffio

from tests.fakes import anthropic_server as A
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.llm import CLAUDE_KEY, EXTRACT, FETCH
from tsukud.llm import pricing
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.provider import UnsupportedRequest
from tsukud.llm.types import (
    AssistantMessage,
    Citation,
    ProviderBlock,
    Request,
    StopReason,
    TextPart,
    ToolCall,
    ToolChoice,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    WebSearch,
)

ASK = UserMessage("Find the linux/amd64 asset for BurntSushi/ripgrep")


async def test_tool_round_trip_two_turns(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    assert sniffio.current_async_library() == "trio"
    first_content = [
        A.text("I'll read the README."),
        A.tool_use("toolu_01D7", "fetch_file", {"path": "README.md"}),
    ]
    anthropic_fake.reply(first_content, "tool_use", request_id="req_turn1")
    anthropic_fake.reply([A.text("Done.")], "end_turn")

    request = Request(messages=(ASK,), system="You write recipes.", tools=(FETCH, EXTRACT))
    first = await claude.complete(request)

    assert first.stop_reason is StopReason.TOOL_USE
    assert first.raw_stop_reason == "tool_use"
    assert first.tool_calls == (ToolCall("toolu_01D7", "fetch_file", {"path": "README.md"}),)
    assert first.text == "I'll read the README."
    assert first.request_id == "req_turn1"
    assert first.provider == "claude" and first.model == "claude-sonnet-5-5"

    second = await claude.complete(
        Request(
            messages=(
                ASK,
                first.message,
                ToolResultsMessage((ToolResult("toolu_01D7", "# ripgrep\n..."),)),
                UserMessage("Now call extract_pattern."),
            ),
            system="You write recipes.",
            tools=(FETCH, EXTRACT),
        )
    )
    assert second.stop_reason is StopReason.END_TURN and second.text == "Done."

    sent = anthropic_fake.requests[1]
    assert sent.path == "/v1/messages"
    # SDK 2.12 sends the key as a bearer token (older SDKs: x-api-key) and its own
    # pinned anthropic-version, not the 2023-06-01 the public docs show.
    assert CLAUDE_KEY in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "")[7:])
    assert sent.headers["anthropic-version"]
    assert sent.headers["x-stainless-retry-count"] == "0"
    body = sent.json()
    assert body["system"] == "You write recipes."
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][1]["content"] == first_content  # resent verbatim
    assert body["messages"][2]["content"] == [  # one user turn, tool_result first
        {
            "type": "tool_result",
            "tool_use_id": "toolu_01D7",
            "content": "# ripgrep\n...",
            "is_error": False,
        },
        {"type": "text", "text": "Now call extract_pattern."},
    ]
    assert body["tools"][1]["input_schema"] == EXTRACT.input_schema  # enum kept
    assert body["tool_choice"] == {"type": "auto"}


async def test_no_parallel_calls_is_sent_with_the_choice(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    """Claude says "one call at a time" inside tool_choice (the contract test covers the
    modes themselves)."""
    call = A.tool_use("toolu_x", "extract_pattern", {"asset_type": "archive", "asset_pattern": "x"})
    anthropic_fake.reply([call], "tool_use")
    forced = Request(
        messages=(ASK,),
        tools=(FETCH, EXTRACT),
        tool_choice=ToolChoice.tool("extract_pattern"),
        parallel_tool_calls=False,
    )
    await claude.complete(forced)
    assert anthropic_fake.requests[0].json()["tool_choice"] == {
        "type": "tool",
        "name": "extract_pattern",
        "disable_parallel_tool_use": True,
    }


async def test_parallel_tool_calls_answered_in_one_turn(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    anthropic_fake.reply(
        [
            A.tool_use("toolu_a", "fetch_file", {"path": "README.md"}),
            A.tool_use("toolu_b", "fetch_file", {"path": "Cargo.toml"}),
        ],
        "tool_use",
    )
    anthropic_fake.reply([A.text("ok")])
    first = await claude.complete(Request(messages=(ASK,), tools=(FETCH,)))
    assert [c.id for c in first.tool_calls] == ["toolu_a", "toolu_b"]
    results = ToolResultsMessage(
        (ToolResult("toolu_a", "readme"), ToolResult("toolu_b", "not found", is_error=True))
    )
    await claude.complete(Request(messages=(ASK, first.message, results), tools=(FETCH,)))
    last_turn = anthropic_fake.requests[1].json()["messages"][-1]
    assert last_turn["role"] == "user"
    assert [(b["tool_use_id"], b["is_error"]) for b in last_turn["content"]] == [
        ("toolu_a", False),
        ("toolu_b", True),
    ]


async def test_server_web_search_blocks_pass_back_unchanged(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    cited = A.text(
        "ripgrep publishes ripgrep-<v>-x86_64-unknown-linux-musl.tar.gz",
        citations=[
            {
                "type": "web_search_result_location",
                "url": "https://github.com/BurntSushi/ripgrep/releases",
                "title": "Releases",
                "encrypted_index": "Eo8BCioIAhgBIiQ=",
                "cited_text": "ripgrep-14.1.1-x86_64-unknown-linux-musl.tar.gz",
            }
        ],
    )
    content = [
        A.text("Let me search."),
        A.server_tool_use("srvtoolu_01", "ripgrep releases linux x86_64"),
        A.web_search_result(
            "srvtoolu_01", "https://github.com/BurntSushi/ripgrep/releases", "Releases"
        ),
        cited,
    ]
    anthropic_fake.reply(content, usage_=A.usage(6039, 931, web_searches=1))
    anthropic_fake.reply([A.text("ok")])
    search = WebSearch(max_uses=3, allowed_domains=("github.com",))
    first = await claude.complete(Request(messages=(ASK,), tools=(FETCH,), server_tools=(search,)))

    assert [type(p) for p in first.message.parts] == [
        TextPart,
        ProviderBlock,
        ProviderBlock,
        TextPart,
    ]
    assert first.text.startswith("Let me search.ripgrep publishes")
    assert first.usage.web_search_requests == 1
    # The search result and the passage cited from it: one page, with the quote.
    assert first.citations == (
        Citation(
            "https://github.com/BurntSushi/ripgrep/releases",
            "Releases",
            "ripgrep-14.1.1-x86_64-unknown-linux-musl.tar.gz",
        ),
    )
    assert pricing.cost(first.model, first.usage, on=dt.date(2026, 11, 22)) == (
        Decimal(6039) * 2 / 1_000_000 + Decimal(931) * 10 / 1_000_000 + Decimal("0.01")
    )
    sent_tools = anthropic_fake.requests[0].json()["tools"]
    assert sent_tools[1] == {
        "type": "web_search_20250305",
        "name": "web_search",
        "max_uses": 3,
        "allowed_domains": ["github.com"],
    }

    await claude.complete(
        Request(messages=(ASK, first.message, UserMessage("and arm64?")), server_tools=(search,))
    )
    resent = anthropic_fake.requests[1].json()["messages"][1]
    assert resent == {"role": "assistant", "content": content}


async def test_pause_turn_is_continued(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    paused = [A.text("Searching."), A.server_tool_use("srvtoolu_9", "ripgrep assets")]
    rest = [A.web_search_result("srvtoolu_9", "https://example.com", "x"), A.text("Found it.")]
    anthropic_fake.reply(paused, "pause_turn", usage_=A.usage(100, 10, web_searches=1))
    anthropic_fake.reply(rest, "end_turn", usage_=A.usage(300, 20, web_searches=0))

    response = await claude.complete(Request(messages=(ASK,), server_tools=(WebSearch(),)))

    assert response.stop_reason is StopReason.END_TURN
    assert len(anthropic_fake.requests) == 2
    continued = anthropic_fake.requests[1].json()["messages"]
    assert continued[-1] == {"role": "assistant", "content": paused}
    assert len(response.message.parts) == 4
    assert response.usage.input_tokens == 400 and response.usage.output_tokens == 30
    assert response.usage.web_search_requests == 1


async def test_pause_turn_continuation_is_bounded(anthropic_fake: FakeAnthropic) -> None:
    provider = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url, max_continuations=2)
    for i in range(3):
        anthropic_fake.reply([A.server_tool_use(f"srvtoolu_{i}", "q")], "pause_turn")
    try:
        response = await provider.complete(Request(messages=(ASK,), server_tools=(WebSearch(),)))
    finally:
        await provider.aclose()
    assert response.stop_reason is StopReason.PAUSE_TURN
    assert len(anthropic_fake.requests) == 3
    # Handing the paused turn back continues it: the two assistant messages merge.
    anthropic_fake.reply([A.text("done")])
    provider = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url)
    try:
        await provider.complete(Request(messages=(ASK, response.message)))
    finally:
        await provider.aclose()
    assert [m["role"] for m in anthropic_fake.last_json()["messages"]] == ["user", "assistant"]


async def test_max_tokens_and_refusal_stop_reasons(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    anthropic_fake.reply([A.text("truncat")], "max_tokens")
    anthropic_fake.reply([], "refusal")
    anthropic_fake.reply([A.text("x")], "stop_sequence")
    request = Request(messages=(ASK,), max_tokens=5)
    assert (await claude.complete(request)).stop_reason is StopReason.MAX_TOKENS
    assert anthropic_fake.requests[0].json()["max_tokens"] == 5
    assert (await claude.complete(request)).stop_reason is StopReason.REFUSAL
    last = await claude.complete(request)
    assert (last.stop_reason, last.raw_stop_reason) == (StopReason.END_TURN, "stop_sequence")


async def test_usage_mapping_and_cost(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    anthropic_fake.reply(
        [A.text("x")],
        usage_=A.usage(1000, 200, cache_read=5000, cache_write=3000, cache_write_1h=1000),
    )
    response = await claude.complete(Request(messages=(ASK,)))
    assert response.usage == Usage(
        input_tokens=1000,
        output_tokens=200,
        cache_read_tokens=5000,
        cache_write_tokens=3000,
        cache_write_1h_tokens=1000,
    )
    expected = (
        Decimal(1000) * 2 + 200 * 10 + 5000 * Decimal("0.20") + 2000 * Decimal("2.50") + 1000 * 4
    ) / 1_000_000
    assert pricing.cost(response.model, response.usage, on=dt.date(2026, 11, 22)) == expected


async def test_history_from_another_provider_is_translated(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    """Failover mid-session: Gemini's opaque parts are dropped, its calls rebuilt."""
    gemini_turn = AssistantMessage(
        (
            ProviderBlock("gemini", {"thought": True, "text": "thinking"}),
            ToolCall("gemini_call_abc/0", "fetch_file", {"path": "x"}),
        )
    )
    anthropic_fake.reply([A.text("ok")])
    await claude.complete(
        Request(
            messages=(
                ASK,
                gemini_turn,
                ToolResultsMessage((ToolResult("gemini_call_abc/0", "data"),)),
            ),
            tools=(FETCH,),
        )
    )
    messages = anthropic_fake.last_json()["messages"]
    assert messages[1]["content"] == [
        {
            "type": "tool_use",
            "id": "gemini_call_abc_0",
            "name": "fetch_file",
            "input": {"path": "x"},
        }
    ]
    assert messages[2]["content"][0]["tool_use_id"] == "gemini_call_abc_0"


async def test_temperature_is_refused_before_any_request(
    claude: ClaudeProvider, anthropic_fake: FakeAnthropic
) -> None:
    """The SDK's request types have no temperature: a typed refusal, nothing sent."""
    with pytest.raises(UnsupportedRequest, match="takes no temperature"):
        await claude.complete(Request(messages=(ASK,), temperature=0.2))
    assert anthropic_fake.requests == []
