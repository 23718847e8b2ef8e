"""The most one call may cost, and a run's spend split over its reservations.

A run's reservation is a ceiling, not a forecast: before each call the LLM service
compares what the run has spent plus this call's worst case with what it reserved. The
worst case is taken from the request actually about to be sent (the whole history,
every tool result the model asked for), so a conversation that grows with each turn,
or a model that reads large files, is caught before it is paid for, not after.

Tokens are bounded from bytes, one token per byte (``BYTES_PER_TOKEN``). English prose
runs at about four bytes a token and source code at about three, but digit runs, hex,
base64 and rare Unicode tokenize at about one byte a token (some tokenizers split
numbers into one token per digit), and fetched files are full of them; byte-level tokenizers (BPE
with byte fallback, SentencePiece with byte fallback) never emit more than one token per
byte, so this bound holds for any content without the providers' tokenizers. The price
is a worst case about three times the usual spend for prose, reserved and then released
when the run settles. What it does not cover: tokens a provider adds that are not in the
request (covered by the per-message and tools overheads below, estimates too).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import msgspec

from tsukud.llm.pricing import Price
from tsukud.llm.types import (
    AssistantMessage,
    Request,
    TextPart,
    ToolCall,
    ToolResultsMessage,
    UserMessage,
    WebSearch,
)

BYTES_PER_TOKEN = 1
# Framing the providers add per message and part (roles, block types, ids).
MESSAGE_OVERHEAD_TOKENS = 8
# The system prompt a provider adds when tools are offered (a few hundred tokens).
TOOLS_OVERHEAD_TOKENS = 512
# What one server-side web search may add to the input: its results are read by the
# model in the same call (documented as several thousand tokens by the provider whose
# search tool is billed per use).
SEARCH_RESULT_TOKENS = 12_000
# The search queries one grounded request (a spec's ``search = "grounded"``) is assumed
# to run at most. The provider documents no maximum and its search tool has no field to
# set one (and may bill each query), so this is an assumption, not a guarantee: a call
# that reports more queries is still recorded at what it reports.
GROUNDED_QUERIES_BOUND = 10
_MILLION = Decimal(1_000_000)


def _bound(text: str | bytes) -> int:
    size = len(text.encode("utf-8")) if isinstance(text, str) else len(text)
    return -(-size // BYTES_PER_TOKEN)


def worst_input_tokens(request: Request) -> int:
    """An upper bound of the input tokens ``request`` may be billed for."""
    total = _bound(request.system)
    if request.tools:
        total += TOOLS_OVERHEAD_TOKENS
        total += sum(_bound(msgspec.json.encode(t)) for t in request.tools)
    for message in request.messages:
        total += MESSAGE_OVERHEAD_TOKENS
        if isinstance(message, UserMessage):
            total += _bound(message.text)
        elif isinstance(message, ToolResultsMessage):
            for r in message.results:
                total += MESSAGE_OVERHEAD_TOKENS + _bound(r.content)
        elif isinstance(message, AssistantMessage):
            for part in message.parts:
                total += MESSAGE_OVERHEAD_TOKENS
                if isinstance(part, TextPart):
                    total += _bound(part.text)
                elif isinstance(part, ToolCall):
                    total += _bound(msgspec.json.encode(part.arguments))
                else:  # provider blocks (search results, thoughts) kept verbatim
                    total += _bound(msgspec.json.encode(part))
    total += searches(request) * SEARCH_RESULT_TOKENS
    return total


def searches(request: Request) -> int:
    """Server-side web searches ``request`` allows (the search tool's ``max_uses``)."""
    return sum((t.max_uses or 1) for t in request.server_tools if isinstance(t, WebSearch))


def call_worst_case(price: Price, request: Request, *, grounded: bool) -> Decimal | None:
    """The most ``request`` may cost at ``price``; ``None`` when a fee it may incur is
    unpriced (never counted as zero). ``grounded``: the provider grounds the request
    in its own search (a spec's ``search = "grounded"``), where ``max_uses`` is not
    enforced.

    The tier is the one of the prompt's bound: when that bound passes the row's
    ``above_tokens`` the call could cross the threshold, so the dearer rates are taken
    for everything. Input is priced at the dearer of the input and cache-read rates
    (cache reads are never dearer today; cache writes are left out because tsuku's
    requests set no cache breakpoint, which ``tests/unit/llm/test_ceiling.py`` pins).
    Output covers ``max_tokens``, which holds thinking tokens too on both providers.
    """
    prompt = worst_input_tokens(request)
    r = price.rates(prompt)
    tokens = prompt * max(r.input, r.cache_read) + request.max_tokens * r.output
    fees = search_fees(price, searches=searches(request), grounded=grounded)
    return None if fees is None else tokens / _MILLION + fees


def search_fees(price: Price, *, searches: int, grounded: bool) -> Decimal | None:
    """The most the searches of one request allowing ``searches`` may cost in fees.

    A server-side search is billed per search (``per_search``) and stops at
    ``max_uses``. A grounded request is billed per prompt (``per_grounded_prompt``)
    and per search query it runs (``per_search``: the provider's pricing page, read
    through shared/notes/llm-2026.md section 3), and no request field caps the queries, so a
    grounded request is bounded by :data:`GROUNDED_QUERIES_BOUND` queries (or more when
    ``max_uses`` asks). ``None`` when a fee that may apply is unpriced."""
    if not searches:
        return Decimal(0)
    if not grounded:
        return None if price.per_search is None else searches * price.per_search
    if price.per_grounded_prompt is None or price.per_search is None:
        return None
    return price.per_grounded_prompt + max(searches, GROUNDED_QUERIES_BOUND) * price.per_search


def allocate(total: Decimal, amounts: Sequence[Decimal]) -> list[Decimal]:
    """``total`` spread over reservations of ``amounts`` in order, each filled up to its
    amount; whatever is left over (an unbounded run) goes to the last one."""
    if not amounts:
        return []
    out: list[Decimal] = []
    left = total
    for amount in amounts[:-1]:
        part = min(left, amount)
        out.append(part)
        left -= part
    out.append(left)
    return out
