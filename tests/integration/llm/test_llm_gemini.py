"""GeminiProvider through the real google-genai SDK (``client.aio``) against a fake
Gemini API, under trio."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal

import msgspec
import pytest
import sniffio

from tests.fakes import gemini_server as G
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import EXTRACT, FETCH, GEMINI_KEY
from tsukud.llm import pricing
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.provider import (
    MalformedToolArguments,
    UnsupportedRequest,
)
from tsukud.llm.types import (
    Citation,
    ProviderBlock,
    Request,
    StopReason,
    TextPart,
    ToolCall,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    WebSearch,
)

ASK = UserMessage("Pick the linux/amd64 asset")
SIGNATURE = "q+/cdA=="  # standard base64 alphabet on purpose


async def test_tool_round_trip_keeps_roles_ids_and_signatures(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    assert sniffio.current_async_library() == "trio"
    gemini_fake.reply(
        [G.function_call("fetch_file", {"path": "README.md"}, id="fc-1", signature=SIGNATURE)]
    )
    gemini_fake.reply([G.text("Done.")])

    request = Request(messages=(ASK,), system="You write recipes.", tools=(FETCH, EXTRACT))
    first = await gemini.complete(request)
    assert first.stop_reason is StopReason.TOOL_USE and first.raw_stop_reason == "STOP"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [
        ("fc-1", "fetch_file", {"path": "README.md"})
    ]
    assert first.request_id == "resp_fake" and first.model == "gemini-3.8-flash"

    second = await gemini.complete(
        Request(
            messages=(
                ASK,
                first.message,
                ToolResultsMessage((ToolResult("fc-1", "# ripgrep"),)),
                UserMessage("Now extract."),
            ),
            system="You write recipes.",
            tools=(FETCH, EXTRACT),
        )
    )
    assert second.stop_reason is StopReason.END_TURN and second.text == "Done."

    sent = gemini_fake.requests[1]
    assert sent.path == "/v1beta/models/gemini-3.8-flash:generateContent"
    assert sent.headers["x-goog-api-key"] == GEMINI_KEY
    body = sent.json()
    assert body["systemInstruction"]["parts"] == [{"text": "You write recipes."}]
    contents = body["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]  # never flattened
    model_part = contents[1]["parts"][0]
    assert model_part["functionCall"] == {
        "id": "fc-1",
        "name": "fetch_file",
        "args": {"path": "README.md"},
    }
    # The SDK re-encodes bytes fields URL-safe; the signature's bytes are unchanged.
    assert base64.urlsafe_b64decode(model_part["thoughtSignature"]) == base64.b64decode(SIGNATURE)
    assert contents[2]["parts"] == [
        {
            "functionResponse": {
                "id": "fc-1",
                "name": "fetch_file",
                "response": {"output": "# ripgrep"},
            }
        },
        {"text": "Now extract."},
    ]
    declarations = body["tools"][0]["functionDeclarations"]
    schema = (
        declarations[1].get("parametersJsonSchema") or declarations[1]["parameters_json_schema"]
    )
    assert schema == EXTRACT.input_schema  # enums kept
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}


async def test_parallel_calls_without_ids_get_stable_distinct_ids(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    parts = [
        G.function_call("fetch_file", {"path": "README.md"}),
        G.function_call("fetch_file", {"path": "Cargo.toml"}),
    ]
    gemini_fake.reply(parts)
    gemini_fake.reply(parts)
    gemini_fake.reply([G.text("ok")])
    first = await gemini.complete(Request(messages=(ASK,), tools=(FETCH,)))
    again = await gemini.complete(Request(messages=(ASK,), tools=(FETCH,)))
    ids = [c.id for c in first.tool_calls]
    assert len(set(ids)) == 2
    assert ids == [c.id for c in again.tool_calls]  # deterministic: replays stay identical

    results = ToolResultsMessage(
        (ToolResult(ids[0], "readme"), ToolResult(ids[1], "gone", is_error=True))
    )
    await gemini.complete(Request(messages=(ASK, first.message, results), tools=(FETCH,)))
    contents = gemini_fake.last_json()["contents"]
    # Sent back as Gemini 3 gave them: no invented ids, the signature on the first call only.
    assert [p["functionCall"] for p in contents[1]["parts"]] == [p["functionCall"] for p in parts]
    assert [bool(p.get("thoughtSignature")) for p in contents[1]["parts"]] == [True, False]
    assert contents[2]["parts"] == [  # names found from the calls; no id since Gemini sent none
        {"functionResponse": {"name": "fetch_file", "response": {"output": "readme"}}},
        {"functionResponse": {"name": "fetch_file", "response": {"error": "gone"}}},
    ]


async def test_usage_thoughts_cache_and_cost(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    gemini_fake.reply(
        [G.text("x", signature=SIGNATURE)],
        usage_=G.usage(prompt=1000, candidates=200, thoughts=300, cached=400),
    )
    response = await gemini.complete(Request(messages=(ASK,)))
    assert response.usage == Usage(
        input_tokens=600, output_tokens=200, cache_read_tokens=400, thoughts_tokens=300
    )
    assert isinstance(response.message.parts[0], TextPart) and response.message.parts[0].raw
    on = dt.date(2026, 12, 31)
    # Thoughts billed as output; cached tokens at the input price (no cache price known).
    assert (
        pricing.cost(response.model, response.usage, on=on)
        == (Decimal(1000) * Decimal("0.75") + 500 * Decimal("3.75")) / 1_000_000
    )
    assert pricing.cost(response.model, response.usage, on=dt.date(2027, 1, 1)) is None


async def test_grounding_only_request_and_usage(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    grounding = {
        "webSearchQueries": ["ripgrep latest release", "ripgrep linux musl"],
        "groundingChunks": [
            {"web": {"uri": "https://vertexaisearch.cloud.google.com/x", "title": "github.com"}}
        ],
    }
    gemini_fake.reply([G.text("ripgrep 14.1.1")], grounding=grounding)
    response = await gemini.complete(Request(messages=(ASK,), server_tools=(WebSearch(),)))
    body = gemini_fake.last_json()
    assert body["tools"] == [{"googleSearch": {}}]
    assert "toolConfig" not in body  # grounding-only requests must omit functionCallingConfig
    assert (response.usage.grounded_prompts, response.usage.web_search_requests) == (1, 2)
    cost = pricing.cost(response.model, response.usage, on=dt.date(2026, 11, 22))
    # Gemini 3 bills each of the two search queries ($14 per 1,000), not the prompt.
    assert cost is not None and cost > 2 * Decimal("0.014")
    day = dt.date(2026, 11, 22)
    tokens_only = msgspec.structs.replace(response.usage, web_search_requests=0)
    assert cost - 2 * Decimal("0.014") == pricing.cost(response.model, tokens_only, on=day)


async def test_grounding_chunks_become_citations(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    redirect = "https://vertexaisearch.cloud.google.com/grounding-api-redirect/AUZ"
    grounding = {
        "webSearchQueries": ["ripgrep releases"],
        "searchEntryPoint": {"renderedContent": "<div>chips</div>"},
        "groundingChunks": [
            {"web": {"uri": redirect + "1", "title": "github.com"}},
            {"web": {"uri": redirect + "2", "title": "crates.io"}},
            {"retrievedContext": {"uri": "gs://bucket/doc", "title": "not the web"}},
        ],
        "groundingSupports": [
            {
                "segment": {
                    "startIndex": 0,
                    "endIndex": 48,
                    "text": "ripgrep is at github.com/BurntSushi/ripgrep.",
                },
                "groundingChunkIndices": [0, 1],
                "confidenceScores": [0.9, 0.4],
            },
            {
                "segment": {"startIndex": 49, "endIndex": 80, "text": "Its crate is ripgrep."},
                "groundingChunkIndices": [1],
            },
        ],
    }
    gemini_fake.reply([G.text("ripgrep is at github.com/BurntSushi/ripgrep.")], grounding=grounding)
    response = await gemini.complete(Request(messages=(ASK,), server_tools=(WebSearch(),)))
    assert response.citations == (
        Citation(redirect + "1", "github.com", "ripgrep is at github.com/BurntSushi/ripgrep."),
        Citation(
            redirect + "2",
            "crates.io",
            "ripgrep is at github.com/BurntSushi/ripgrep.\nIts crate is ripgrep.",
        ),
    )
    gemini_fake.reply([G.text("no search")])
    assert (await gemini.complete(Request(messages=(ASK,)))).citations == ()


async def test_search_with_functions(gemini_fake: FakeGemini) -> None:
    old = GeminiProvider(GEMINI_KEY, base_url=gemini_fake.url + "/", model="gemini-2.5-flash")
    try:
        with pytest.raises(UnsupportedRequest):
            await old.complete(
                Request(messages=(ASK,), tools=(FETCH,), server_tools=(WebSearch(),))
            )
        assert gemini_fake.requests == []  # refused locally, no paid 400
        gemini_fake.reply([G.text("ok")])
        await old.complete(
            Request(
                messages=(ASK,),
                tools=(FETCH,),
                server_tools=(WebSearch(),),
                model="gemini-3.8-flash",
            )
        )
    finally:
        await old.aclose()
    body = gemini_fake.last_json()
    assert body["toolConfig"]["includeServerSideToolInvocations"] is True


@pytest.mark.parametrize(
    ("finish", "stop"),
    [
        ("MAX_TOKENS", StopReason.MAX_TOKENS),
        ("SAFETY", StopReason.REFUSAL),
        ("RECITATION", StopReason.REFUSAL),
        ("TOO_MANY_TOOL_CALLS", StopReason.OTHER),
    ],
)
async def test_finish_reasons(
    gemini: GeminiProvider, gemini_fake: FakeGemini, finish: str, stop: StopReason
) -> None:
    gemini_fake.reply([G.text("partial")], finish)
    response = await gemini.complete(Request(messages=(ASK,), max_tokens=5))
    assert (response.stop_reason, response.raw_stop_reason) == (stop, finish)


async def test_thought_parts_are_opaque_and_passed_back(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    thought = {"text": "**Planning**", "thought": True}
    future = {"text": "answer", "fieldFromTheFuture": {"x": 1}}  # unknown to the SDK
    gemini_fake.reply([thought, future])
    gemini_fake.reply([G.text("ok")])
    first = await gemini.complete(Request(messages=(ASK,)))
    assert first.text == "answer"
    assert first.message.parts[0] == ProviderBlock("gemini", thought)
    assert first.message.parts[1] == TextPart("answer", raw=ProviderBlock("gemini", future))
    await gemini.complete(Request(messages=(ASK, first.message, UserMessage("more"))))
    assert gemini_fake.last_json()["contents"][1]["parts"] == [thought, {"text": "answer"}]


async def test_malformed_function_call_finish_reason(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    """Gemini reports a call it could not form as a finish reason, with no call at all."""
    gemini_fake.reply([], "MALFORMED_FUNCTION_CALL")
    with pytest.raises(MalformedToolArguments) as info:
        await gemini.complete(Request(messages=(ASK,), tools=(FETCH,)))
    assert info.value.usage == Usage(10, 5) and info.value.tool_name is None


async def test_calls_from_another_provider_are_rebuilt(
    gemini: GeminiProvider, gemini_fake: FakeGemini
) -> None:
    from tsukud.llm.types import AssistantMessage

    claude_turn = AssistantMessage(
        (
            TextPart("Let me look."),
            ProviderBlock("anthropic", {"type": "server_tool_use", "id": "srvtoolu_1"}),
            ToolCall("toolu_01", "fetch_file", {"path": "x"}),
        )
    )
    gemini_fake.reply([G.text("ok")])
    await gemini.complete(
        Request(
            messages=(ASK, claude_turn, ToolResultsMessage((ToolResult("toolu_01", "data"),))),
            tools=(FETCH,),
        )
    )
    contents = gemini_fake.last_json()["contents"]
    # Claude's call is in the current turn: Gemini 3 takes it only with Google's documented
    # stand-in signature, sent as that literal string.
    assert contents[1]["parts"] == [
        {"text": "Let me look."},
        {
            "functionCall": {"id": "toolu_01", "name": "fetch_file", "args": {"path": "x"}},
            "thoughtSignature": "skip_thought_signature_validator",
        },
    ]
    assert contents[2]["parts"][0]["functionResponse"]["id"] == "toolu_01"
