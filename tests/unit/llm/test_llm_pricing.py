"""Price table: dated rows, unknown is None (never zero), fees, deprecations."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tsukud.llm import pricing
from tsukud.llm.pricing import PriceTable
from tsukud.llm.types import Usage

DAY = dt.date(2026, 11, 22)
M = 1_000_000


def test_defaults_and_required_rows_are_priced() -> None:
    expected = {
        "claude-sonnet-5-5": ("2", "10"),
        "claude-opus-5-5": ("4", "20"),
        "claude-opus-5": ("5", "25"),
        "claude-haiku-4-5": ("1", "5"),
        "claude-sonnet-4-5": ("3", "15"),
        "gemini-3.8-flash": ("0.75", "3.75"),
        "gemini-2.5-flash": ("0.30", "2.50"),
        "gemini-2.5-pro": ("1.25", "10"),
        "gemini-2.5-flash-lite": ("0.10", "0.40"),
    }
    for model, (inp, out) in expected.items():
        # 100k tokens: under every long-context threshold (gemini-2.5-pro's is 200k)
        small = pricing.cost(model, Usage(input_tokens=M // 10), on=DAY)
        assert small is not None and small * 10 == Decimal(inp), model
        assert pricing.cost(model, Usage(output_tokens=M), on=DAY) == Decimal(out), model


def test_unknown_model_is_none_not_zero() -> None:
    assert pricing.cost("qwen2.5-coder:7b", Usage(1, 1), on=DAY) is None
    assert pricing.cost("gemini-2.5-flash-lite-preview", Usage(1, 1), on=DAY) is None


def test_snapshot_names_fall_back_to_base_model() -> None:
    assert pricing.cost("claude-sonnet-5-5-20261001", Usage(M), on=DAY) == Decimal(2)
    assert pricing.cost("models/gemini-2.5-flash", Usage(M), on=DAY) == Decimal("0.30")


def test_validity_dates() -> None:
    usage = Usage(input_tokens=M)
    assert pricing.cost("gemini-3.8-flash", usage, on=dt.date(2026, 12, 31)) == Decimal("0.75")
    assert pricing.cost("gemini-3.8-flash", usage, on=dt.date(2027, 1, 1)) is None
    assert pricing.cost("claude-sonnet-4-5", usage, on=dt.date(2026, 12, 1)) is None


def test_newest_valid_row_wins() -> None:
    table = PriceTable.from_toml(
        """
[[price]]
model = "m"
input = "1"
output = "1"
until = 2026-06-30
[[price]]
model = "m"
input = "2"
output = "2"
since = 2026-07-01
"""
    )
    assert table.cost("m", Usage(M), on=dt.date(2026, 6, 30)) == 1
    assert table.cost("m", Usage(M), on=dt.date(2026, 7, 1)) == 2


def test_claude_cache_and_search_fees() -> None:
    usage = Usage(
        cache_read_tokens=M,
        cache_write_tokens=2 * M,
        cache_write_1h_tokens=M,
        web_search_requests=1000,
    )
    # 0.20 read + 2.50 (5 min) + 4 (1 h) per 1M, $10 per 1,000 searches.
    assert (
        pricing.cost("claude-sonnet-5-5", usage, on=DAY)
        == Decimal("0.20") + Decimal("2.50") + 4 + 10
    )
    assert pricing.cost("claude-sonnet-4-5", Usage(cache_write_tokens=M), on=DAY) == Decimal("3.75")
    assert pricing.cost("claude-sonnet-4-5", Usage(cache_read_tokens=M), on=DAY) == Decimal("0.30")


def test_gemini_thoughts_billed_as_output_and_grounding_fee() -> None:
    usage = Usage(
        output_tokens=M, thoughts_tokens=M, grounded_prompts=1000, web_search_requests=3000
    )
    # Gemini 2.5: $35 per 1,000 grounded prompts, whatever queries they ran.
    assert pricing.cost("gemini-2.5-flash", usage, on=DAY) == Decimal("2.50") * 2 + 35
    # Gemini 3: $14 per 1,000 search queries, no per-prompt fee.
    assert pricing.cost("gemini-3.8-flash", usage, on=DAY) == Decimal("3.75") * 2 + 42


def test_fee_unknown_makes_cost_unknown() -> None:
    table = PriceTable.from_toml('[[price]]\nmodel = "m"\ninput = "1"\noutput = "1"\n')
    assert table.cost("m", Usage(M), on=DAY) == 1
    assert table.cost("m", Usage(M, web_search_requests=1), on=DAY) is None


def test_deprecation_from_the_sdk_list() -> None:
    message = pricing.deprecation("claude-sonnet-4-5")
    assert message is not None and "November 30th, 2026" in message
    assert "claude-sonnet-5-5" in message
    assert pricing.deprecation("claude-sonnet-5-5") is None
    assert pricing.deprecation("gemini-3.8-flash") is None


def test_deprecations_are_read_without_importing_the_sdk() -> None:
    # Importing the Anthropic SDK takes seconds: `llm status` on a fresh daemon waited
    # for it. The list is read from the SDK's one data file; the SDK stays unimported.
    code = (
        "import sys\n"
        "from tsukud.llm.pricing import deprecation\n"
        "assert 'end of life' in (deprecation('claude-sonnet-4-5') or '')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'httpx2')))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]", out.stdout


def test_a_moved_sdk_list_is_not_found_rather_than_guessed() -> None:
    # None sends the reader to the adapter's own (slow, importing) list: never no warning
    assert pricing._sdk_table("anthropic._data.no_such_module") is None
    assert pricing._sdk_table("no_such_sdk_package._data") is None
    table = pricing._sdk_table("anthropic._data.deprecated_models")
    assert table is not None and "claude-sonnet-4-5" in table


counts = st.integers(min_value=0, max_value=10**9)


@given(counts, counts, counts, counts, counts)
def test_cost_is_additive_and_never_negative(a: int, b: int, c: int, d: int, e: int) -> None:
    one = Usage(input_tokens=a, output_tokens=b, thoughts_tokens=c)
    two = Usage(cache_read_tokens=d, cache_write_tokens=e, cache_write_1h_tokens=min(d, e))
    for model in ("claude-sonnet-5-5", "gemini-3.8-flash"):
        x = pricing.cost(model, one, on=DAY)
        y = pricing.cost(model, two, on=DAY)
        both = pricing.cost(model, one + two, on=DAY)
        assert x is not None and y is not None and both is not None
        assert x >= 0 and y >= 0 and both == x + y


# ---------------------------------------------------------------- long-context tiers

PRO = "gemini-2.5-pro"  # $1.25 / $10 up to 200k prompt tokens, $2.50 / $15 above


def test_a_turn_at_the_threshold_is_billed_at_the_lower_tier() -> None:
    usage = Usage(input_tokens=200_000, output_tokens=1_000)
    assert pricing.cost(PRO, usage, on=DAY) == (
        200_000 * Decimal("1.25") + 1_000 * Decimal(10)
    ) / Decimal(M)


def test_a_turn_just_above_the_threshold_is_billed_entirely_at_the_higher_tier() -> None:
    usage = Usage(input_tokens=200_001, output_tokens=1_000, thoughts_tokens=500)
    assert pricing.cost(PRO, usage, on=DAY) == (
        200_001 * Decimal("2.50") + 1_500 * Decimal(15)
    ) / Decimal(M)


def test_cached_tokens_count_toward_the_prompt_that_picks_the_tier() -> None:
    """Google's threshold is on promptTokenCount, which includes the cached part: 150k
    fresh + 60k cached is a 210k prompt, billed above (cache read at the input rate of
    that tier, since the row gives no cheaper one)."""
    usage = Usage(input_tokens=150_000, cache_read_tokens=60_000)
    assert pricing.cost(PRO, usage, on=DAY) == 210_000 * Decimal("2.50") / Decimal(M)


def test_a_tier_row_in_a_prices_file_prices_its_cache_above_too() -> None:
    table = PriceTable.from_toml(
        """
[[price]]
model = "m"
input = "2"
output = "12"
cache_read = "0.20"
above_tokens = 200000
input_above = "4"
output_above = "18"
cache_read_above = "0.40"
"""
    )
    below = Usage(input_tokens=100_000, cache_read_tokens=100_000, output_tokens=M)
    above = Usage(input_tokens=100_001, cache_read_tokens=100_000, output_tokens=M)
    assert table.cost("m", below, on=DAY) == Decimal("0.2") + Decimal("0.02") + 12
    assert table.cost("m", above, on=DAY) == Decimal("0.400004") + Decimal("0.04") + 18


@pytest.mark.parametrize(
    ("row", "complaint"),
    [
        ('above_tokens = 1000\ninput_above = "0.5"\noutput_above = "2"', "input above"),
        ('above_tokens = 1000\ninput_above = "2"\noutput_above = "0.5"', "output above"),
        ('above_tokens = 1000\ninput_above = "2"', "needs input_above and output_above"),
        ('input_above = "2"\noutput_above = "2"', "need above_tokens"),
        ('above_tokens = 0\ninput_above = "2"\noutput_above = "2"', "at least 1"),
        (
            'cache_read = "0.5"\nabove_tokens = 9\ninput_above = "2"\noutput_above = "2"\n'
            'cache_read_above = "0.1"',
            "cache_read above",
        ),
    ],
)
def test_a_tier_that_could_undercount_is_refused_when_the_table_loads(
    row: str, complaint: str
) -> None:
    """A dearer tier cheaper than the base one would make "take the dearer tier when
    unsure" an undercount; a half-given tier would silently price at the base rates."""
    text = f'[[price]]\nmodel = "m"\ninput = "1"\noutput = "1"\n{row}\n'
    with pytest.raises(ValueError, match=complaint):
        PriceTable.from_toml(text)
