"""The per-call worst case is an upper bound whatever the content: text that tokenizes
at about a byte a token (digits, hex, rare Unicode) cannot be billed above it."""

from __future__ import annotations

from tsukud.llm.ceiling import worst_input_tokens
from tsukud.llm.types import Request, ToolResult, ToolResultsMessage, UserMessage


def test_digits_and_hex_are_bounded_at_one_token_per_byte() -> None:
    digits = "31415926535897932384" * 500  # Gemini: one token per digit
    hex_ = "9f86d081884c7d659a2feaa0c55ad015" * 300
    for text in (digits, hex_):
        request = Request(messages=(UserMessage(text),), max_tokens=16)
        assert worst_input_tokens(request) >= len(text.encode())


def test_rare_unicode_in_a_fetched_file_is_bounded_by_its_bytes() -> None:
    text = "\U0001f600ꙮ𓀀" * 1000  # each character is several bytes, maybe several tokens
    result = ToolResultsMessage((ToolResult(call_id="c1", content=text),))
    request = Request(messages=(UserMessage("read it"), result), max_tokens=16)
    assert worst_input_tokens(request) >= len(text.encode())
