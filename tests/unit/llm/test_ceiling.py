"""The per-call worst case is an upper bound whatever the content: text that tokenizes
at about a byte a token (digits, hex, rare Unicode) cannot be billed above it, a prompt
that may cross a long-context threshold is bounded at the dearer tier, and a grounded
Gemini request is bounded by its per-query fees."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples
from tsukud.llm import ceiling
from tsukud.llm.ceiling import GROUNDED_QUERIES_BOUND, call_worst_case, worst_input_tokens
from tsukud.llm.claude import build_params
from tsukud.llm.pricing import Price, PriceTable, default_table
from tsukud.llm.types import (
    Request,
    Tool,
    ToolResult,
    ToolResultsMessage,
    Usage,
    UserMessage,
    WebSearch,
)

DAY = dt.date(2026, 11, 22)
M = Decimal(1_000_000)


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


# ---------------------------------------------------------------- tiers and fees

PRO = default_table().price("gemini-2.5-pro", DAY)
assert PRO is not None and PRO.above_tokens == 200_000


def _sized(tokens: int, max_tokens: int = 1000, **kw: Any) -> Request:
    """A request whose input bound is exactly ``tokens`` (one ASCII byte a token)."""
    empty = worst_input_tokens(Request(messages=(UserMessage(""),), max_tokens=1, **kw))
    text = "x" * (tokens - empty)
    request = Request(messages=(UserMessage(text),), max_tokens=max_tokens, **kw)
    assert worst_input_tokens(request) == tokens
    return request


def test_a_worst_case_that_stays_under_the_threshold_uses_the_lower_tier() -> None:
    request = _sized(200_000)
    expected = (200_000 * Decimal("1.25") + 1000 * Decimal(10)) / M
    assert call_worst_case(PRO, request, grounded=False) == expected


def test_a_worst_case_that_could_cross_the_threshold_uses_the_higher_tier() -> None:
    """The bound is 200,001 tokens: the real prompt may be well under 200k (prose runs
    at about 4 bytes a token), but it may not, so every token is priced above."""
    request = _sized(200_001)
    expected = (200_001 * Decimal("2.50") + 1000 * Decimal(15)) / M
    assert call_worst_case(PRO, request, grounded=False) == expected
    # and it covers a real turn just above the threshold, output maxed out
    actual = PRO.cost(Usage(input_tokens=200_001, output_tokens=600, thoughts_tokens=400))
    assert actual == expected


def test_a_grounded_gemini_3_request_is_bounded_per_query() -> None:
    """Gemini 3 bills each query (no request field caps them): the bound is
    GROUNDED_QUERIES_BOUND queries; Gemini 2.5 bills the grounded prompt once."""
    flash3 = default_table().price("gemini-3.8-flash", DAY)
    flash25 = default_table().price("gemini-2.5-flash", DAY)
    assert flash3 is not None and flash25 is not None
    request = _sized(40_000, server_tools=(WebSearch(max_uses=2),))
    tokens3 = (40_000 * Decimal("0.75") + 1000 * Decimal("3.75")) / M
    tokens25 = (40_000 * Decimal("0.30") + 1000 * Decimal("2.50")) / M
    fee3 = GROUNDED_QUERIES_BOUND * Decimal("0.014")
    assert call_worst_case(flash3, request, grounded=True) == tokens3 + fee3
    assert call_worst_case(flash25, request, grounded=True) == tokens25 + Decimal("0.035")
    # max_uses above the bound is honoured as a higher bound, never a lower one
    many = _sized(40_000 + 13 * 12_000, server_tools=(WebSearch(max_uses=15),))
    tokens3 = ((40_000 + 13 * 12_000) * Decimal("0.75") + 1000 * Decimal("3.75")) / M
    worst = call_worst_case(flash3, many, grounded=True)
    assert worst == tokens3 + 15 * Decimal("0.014")


def test_an_unpriced_query_fee_leaves_the_grounded_worst_case_unknown() -> None:
    row = Price(model="m", input=Decimal(1), output=Decimal(1), per_grounded_prompt=Decimal(0))
    request = _sized(20_000, server_tools=(WebSearch(),))
    assert call_worst_case(row, request, grounded=True) is None
    assert call_worst_case(row, _sized(1000), grounded=True) is not None  # no search, no fee


def test_tsuku_never_asks_claude_for_cache_writes() -> None:
    """The worst case prices input at the input (or cache-read) rate, not the dearer
    cache-write rates: that holds only while no request sets a cache breakpoint."""
    request = _sized(
        50_000,
        system="be brief",
        tools=(Tool("fetch_file", "read a file", {"type": "object"}),),
        server_tools=(WebSearch(max_uses=3),),
    )
    params = build_params(request, "claude-sonnet-5-5", "web_search_20250305")
    assert b"cache_control" not in msgspec.json.encode(params)


# A tiered row dearer on every cache rate, besides every bundled row.
TIERED = PriceTable.from_toml(
    """
[[price]]
model = "tiered"
input = "2"
output = "12"
cache_read = "0.20"
per_search = "0.014"
per_grounded_prompt = "0.035"
above_tokens = 100000
input_above = "4"
output_above = "18"
cache_read_above = "0.40"
"""
).price("tiered", DAY)
ROWS = sorted(default_table()._rows)


@st.composite
def call_and_usage(draw: st.DrawFn) -> tuple[Price, Request, bool, Usage]:
    """Any priced model, a request of any size around its threshold, and any usage the
    provider may bill for it: a prompt up to the request's bound (split between fresh
    and cached tokens), output and thoughts up to max_tokens, searches up to what the
    request allows (Gemini: up to the assumed query bound, one grounded prompt)."""
    name = draw(st.sampled_from([*ROWS, "tiered"]))
    price = TIERED if name == "tiered" else default_table().price(name, DAY)
    assert price is not None
    grounded = name.startswith("gemini") or (name == "tiered" and draw(st.booleans()))
    threshold = price.above_tokens or 200_000
    near = st.integers(min_value=threshold - 30_000, max_value=threshold + 30_000)
    size = draw(near | st.integers(min_value=50, max_value=threshold * 2))
    max_uses = draw(st.none() | st.integers(min_value=1, max_value=20))
    search = draw(st.booleans())
    server = (WebSearch(max_uses=max_uses),) if search else ()
    max_tokens = draw(st.integers(min_value=1, max_value=64_000))
    request = Request(
        messages=(UserMessage("x" * size),), max_tokens=max_tokens, server_tools=server
    )
    bound = worst_input_tokens(request)
    # the edges (a prompt at its bound, output maxed out) are where an undercount shows
    prompt = draw(st.just(bound) | st.integers(min_value=0, max_value=bound))
    cached = draw(st.integers(min_value=0, max_value=prompt))
    out = draw(st.just(max_tokens) | st.integers(min_value=0, max_value=max_tokens))
    thoughts = draw(st.integers(min_value=0, max_value=out))
    allowed = ceiling.searches(request)
    if grounded and allowed:
        allowed = max(allowed, GROUNDED_QUERIES_BOUND)
    usage = Usage(
        input_tokens=prompt - cached,
        cache_read_tokens=cached,
        output_tokens=out - thoughts,
        thoughts_tokens=thoughts,
        web_search_requests=draw(st.integers(min_value=0, max_value=allowed)),
        grounded_prompts=int(grounded and search and draw(st.booleans())),
    )
    return price, request, grounded, usage


@settings(max_examples=examples(400), deadline=None)
@given(call_and_usage())
def test_the_worst_case_is_never_below_the_actual_cost(
    case: tuple[Price, Request, bool, Usage],
) -> None:
    price, request, grounded, usage = case
    worst = call_worst_case(price, request, grounded=grounded)
    actual = price.cost(usage)
    assert worst is not None and actual is not None
    assert actual <= worst, (price.model, usage, actual, worst)
