"""The strict fakes' rules (tests/fakes/llm_rules.py): each accepts what the real API
accepts and names what it would refuse. The adapters' own requests are checked by the
fakes in every integration test; these pin each rule on its own."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from tests.fakes.llm_rules import (
    anthropic_violations,
    enforces_thought_signatures,
    gemini_violations,
    openai_violations,
)

FETCH = {"name": "fetch_file", "description": "d", "input_schema": {"type": "object"}}
EXTRACT = {"name": "extract_pattern", "description": "d", "input_schema": {"type": "object"}}


def claude_body(**over: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 1024,
        "tools": [FETCH, EXTRACT],
        "tool_choice": {"type": "auto"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "go"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "fetch_file", "input": {}}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                    {"type": "text", "text": "and now?"},
                ],
            },
        ],
    }
    body.update(over)
    return body


def test_anthropic_accepts_a_valid_tool_round_trip() -> None:
    assert anthropic_violations(claude_body()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b.pop("max_tokens"), "max_tokens: Field required"),
        (lambda b: b.update(temperature=0.2), "temperature: Extra inputs are not permitted"),
        (lambda b: b.update(max_tokens=0), "greater than or equal to 1"),
        (lambda b: b["messages"].pop(0), 'first message must use the "user" role'),
        (
            lambda b: b["messages"].insert(1, {"role": "user", "content": "again"}),
            "roles must alternate",
        ),
        (lambda b: b["messages"][2]["content"].pop(0), "without `tool_result` blocks"),
        (lambda b: b["messages"][2]["content"].reverse(), "tool_result blocks must come first"),
        (
            lambda b: b["messages"][2]["content"][0].update(tool_use_id="toolu_9"),
            "unexpected `tool_use_id`",
        ),
        (
            lambda b: b["messages"][1]["content"][0].update(name="rm_rf"),
            "unknown tool 'rm_rf'",
        ),
        (
            lambda b: b["messages"][1]["content"][0].update(id="gemini/call"),
            "tool_use.id",
        ),
        (lambda b: b.update(tools=[FETCH, FETCH]), "Tool names must be unique"),
        (
            lambda b: b.update(tool_choice={"type": "tool", "name": "nope"}),
            "Tool 'nope' not found",
        ),
        (
            lambda b: b.update(
                tool_choice={"type": "any"}, thinking={"type": "enabled", "budget_tokens": 2048}
            ),
            "Thinking may not be enabled when tool_choice forces tool use",
        ),
        (
            lambda b: b.update(tool_choice={"type": "none", "disable_parallel_tool_use": True}),
            "tool_choice",
        ),
        (lambda b: b.pop("tools"), "must define tools"),
    ],
)
def test_anthropic_refuses_what_the_api_refuses(change: Any, expected: str) -> None:
    body = claude_body()
    change(body)
    problems = anthropic_violations(body)
    assert any(expected in p for p in problems), problems


# ---------------------------------------------------------------------- Gemini

SIGNATURE = base64.b64encode(b"\x12\x9fsigned by the model").decode()
ISSUED = {base64.b64decode(SIGNATURE)}


def gemini_body(first_call_signature: str | None = SIGNATURE) -> dict[str, Any]:
    call: dict[str, Any] = {"functionCall": {"id": "fc-1", "name": "fetch_file", "args": {}}}
    if first_call_signature is not None:
        call["thoughtSignature"] = first_call_signature
    parallel = {"functionCall": {"id": "fc-2", "name": "fetch_file", "args": {}}}
    return {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [call, parallel]},
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "fc-1", "name": "fetch_file", "response": {}}},
                    {"functionResponse": {"id": "fc-2", "name": "fetch_file", "response": {}}},
                ],
            },
        ],
        "tools": [{"functionDeclarations": [{"name": "fetch_file", "description": "d"}]}],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {"maxOutputTokens": 100},
    }


def test_gemini_accepts_signed_and_stand_in_signatures() -> None:
    assert gemini_violations("gemini-3.8-flash", gemini_body(), ISSUED) == []
    # The SDK re-encodes bytes URL-safe: the same bytes, so the same signature.
    urlsafe = base64.urlsafe_b64encode(base64.b64decode(SIGNATURE)).decode()
    assert gemini_violations("gemini-3.8-flash", gemini_body(urlsafe), ISSUED) == []
    stand_in = gemini_body("skip_thought_signature_validator")
    assert gemini_violations("gemini-3.8-flash", stand_in, ()) == []


def test_gemini_3_refuses_an_unsigned_call_of_the_current_turn_only() -> None:
    (problem,) = gemini_violations("gemini-3.8-flash", gemini_body(None), ISSUED)
    assert "missing a thought_signature" in problem and "default_api:fetch_file" in problem
    (problem,) = gemini_violations("gemini-3.8-flash", gemini_body("AAAA"), ISSUED)
    assert "Corrupted thought signature" in problem
    # A new user text ends the turn: earlier calls are no longer validated.
    later = gemini_body(None)
    later["contents"][2]["parts"].append({"text": "thanks; next question"})
    assert gemini_violations("gemini-3.8-flash", later, ISSUED) == []
    # Gemini 2.x and Gemini 3 Pro Image do not enforce signatures.
    assert gemini_violations("gemini-2.5-flash", gemini_body(None), ()) == []
    assert not enforces_thought_signatures("gemini-3-pro-image-preview")
    assert enforces_thought_signatures("gemini-4-argon")


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b.update(temperature=0), 'Unknown name "temperature"'),
        (lambda b: b["contents"][1].update(role="assistant"), "valid role"),
        (lambda b: b["contents"][2]["parts"].pop(), "number of function response parts"),
        (
            lambda b: b["contents"][2]["parts"][0]["functionResponse"].update(name="other"),
            "names do not match",
        ),
        (
            lambda b: b["contents"][2]["parts"][0]["functionResponse"].update(id="fc-9"),
            "ids",
        ),
        (lambda b: b["contents"].pop(0), "function call turn comes immediately after a user"),
        (lambda b: b["contents"].pop(1), "function response turn comes immediately after"),
        (lambda b: b["contents"][0]["parts"][0].update(bogus=1), "contents[0].parts.0.bogus"),
        (
            lambda b: b["toolConfig"]["functionCallingConfig"].update(
                allowedFunctionNames=["fetch_file"]
            ),
            "only be set when function calling mode is ANY",
        ),
        (
            lambda b: b["toolConfig"]["functionCallingConfig"].update(
                mode="ANY", allowedFunctionNames=["nope"]
            ),
            "'nope' is not declared",
        ),
        (lambda b: b["tools"].append({"googleSearch": {}}), "include_server_side_tool_invocations"),
        (
            lambda b: b.update(tools=[{"googleSearch": {}}]),
            "Function calling config is set without function_declarations",
        ),
    ],
)
def test_gemini_refuses_what_the_api_refuses(change: Any, expected: str) -> None:
    body = gemini_body()
    change(body)
    problems = gemini_violations("gemini-3.8-flash", body, ISSUED)
    assert any(expected in p for p in problems), problems


def test_gemini_2_refuses_search_with_functions() -> None:
    body = gemini_body()
    body["tools"].append({"googleSearch": {}})
    body["toolConfig"]["includeServerSideToolInvocations"] = True
    assert gemini_violations("gemini-3.8-flash", copy.deepcopy(body), ISSUED) == []
    problems = gemini_violations("gemini-2.5-flash", body, ())
    assert problems == ["Tool use with function calling is unsupported by the model."]


# -------------------------------------------------------------- OpenAI-compatible


def openai_body(**over: Any) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    body: dict[str, Any] = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "x"},
        ],
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}],
        "tool_choice": "auto",
    }
    body.update(over)
    return body


def test_openai_accepts_a_valid_tool_round_trip() -> None:
    assert openai_violations(openai_body()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda b: b.update(thinking=True), "Unrecognized request argument supplied: thinking"),
        (lambda b: b.pop("messages"), "Missing required parameter: 'messages'"),
        (lambda b: b["messages"].pop(), "did not have response messages: call_1"),
        (lambda b: b["messages"].pop(2), "must be a response to a preceeding message"),
        (lambda b: b.pop("tools"), "'tool_choice' is only allowed when 'tools' are specified"),
        (
            lambda b: b.update(tool_choice={"type": "function", "function": {"name": "g"}}),
            "function 'g' is not declared",
        ),
        (lambda b: b.update(tool_choice="any"), "Invalid value for 'tool_choice'"),
    ],
)
def test_openai_refuses_what_the_api_refuses(change: Any, expected: str) -> None:
    body = openai_body()
    change(body)
    problems = openai_violations(body)
    assert any(expected in p for p in problems), problems
