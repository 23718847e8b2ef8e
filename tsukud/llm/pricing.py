"""What a call cost, from a dated price table (``prices.toml``), and model deprecations.

Unknown is never zero: a model without a price row valid on the day, or a call that
used a fee the row does not know, costs ``None``, so the budget can refuse or warn
instead of silently counting $0 (the reference priced everything as Sonnet).
"""

from __future__ import annotations

import datetime as dt
import functools
import re
import tomllib
from decimal import Decimal
from importlib import resources

import msgspec

from tsukud.llm.provider import DEFAULT_CLAUDE_MODEL
from tsukud.llm.types import Usage

_PER_TOKEN = Decimal(1_000_000)
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|latest|\d{3})$")


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row of ``prices.toml``: USD per 1M tokens; fees USD per unit."""

    model: str
    input: Decimal
    output: Decimal
    aliases: tuple[str, ...] = ()
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    cache_write_1h: Decimal | None = None
    per_search: Decimal | None = None
    per_grounded_prompt: Decimal | None = None
    since: dt.date | None = None
    until: dt.date | None = None

    def valid_on(self, day: dt.date) -> bool:
        return (self.since is None or self.since <= day) and (
            self.until is None or day <= self.until
        )

    def cost(self, usage: Usage) -> Decimal | None:
        fees = Decimal(0)
        for count, fee in (
            (usage.web_search_requests, self.per_search),
            (usage.grounded_prompts, self.per_grounded_prompt),
        ):
            if count:
                if fee is None:
                    return None
                fees += count * fee
        cache_read = self.cache_read if self.cache_read is not None else self.input
        write_5m = self.cache_write if self.cache_write is not None else self.input
        write_1h = self.cache_write_1h if self.cache_write_1h is not None else write_5m
        one_hour = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
        tokens = (
            usage.input_tokens * self.input
            + (usage.output_tokens + usage.thoughts_tokens) * self.output
            + usage.cache_read_tokens * cache_read
            + (usage.cache_write_tokens - one_hour) * write_5m
            + one_hour * write_1h
        )
        return tokens / _PER_TOKEN + fees


class _File(msgspec.Struct, forbid_unknown_fields=True):
    price: list[Price]


class PriceTable:
    def __init__(self, rows: list[Price], fallback: PriceTable | None = None) -> None:
        """``fallback`` answers for models these rows do not price (the bundled table
        behind a user's ``llm.prices_file``)."""
        self._fallback = fallback
        self._rows: dict[str, list[Price]] = {}
        for row in rows:
            for name in (row.model, *row.aliases):
                self._rows.setdefault(name, []).append(row)

    @classmethod
    def from_toml(cls, text: str, fallback: PriceTable | None = None) -> PriceTable:
        return cls(msgspec.convert(tomllib.loads(text), _File).price, fallback)

    def price(self, model: str, on: dt.date) -> Price | None:
        """The row for ``model`` valid on ``on`` (the caller's clock says which day).

        Dated snapshots (``claude-x-20250929``), ``-latest`` and ``models/`` prefixes
        fall back to the base name; nothing looser, so ``gemini-2.5-flash-lite`` never
        takes ``gemini-2.5-flash``'s price.
        """
        name = model.removeprefix("models/")
        for candidate in (name, _DATE_SUFFIX.sub("", name)):
            valid = [r for r in self._rows.get(candidate, ()) if r.valid_on(on)]
            if valid:
                return max(valid, key=lambda r: r.since or dt.date.min)
        return self._fallback.price(model, on) if self._fallback is not None else None

    def cost(self, model: str, usage: Usage, on: dt.date) -> Decimal | None:
        row = self.price(model, on)
        return None if row is None else row.cost(usage)


@functools.cache
def default_table() -> PriceTable:
    text = resources.files("tsukud.llm").joinpath("prices.toml").read_text(encoding="utf-8")
    return PriceTable.from_toml(text)


def cost(model: str, usage: Usage, on: dt.date) -> Decimal | None:
    """USD cost of ``usage`` on ``model`` (``None`` = unknown, never a guessed zero)."""
    return default_table().cost(model, usage, on)


@functools.cache
def _anthropic_deprecations() -> dict[str, str]:
    # The SDK's own list (it warns on every call with these); imported lazily because
    # the anthropic package is heavy and the daemon must start fast.
    from anthropic.resources.messages import messages as sdk_messages

    table: dict[str, str] = dict(getattr(sdk_messages, "DEPRECATED_MODELS", {}))
    try:
        from anthropic import _data

        table.update(getattr(_data, "DEPRECATED_MODELS", {}))
    except ImportError:
        pass
    return table


def deprecation(model: str) -> str | None:
    """A warning for a deprecated Claude model, with its end-of-life date, else ``None``."""
    eol = _anthropic_deprecations().get(model)
    if eol is None:
        return None
    return (
        f"{model} is deprecated by Anthropic and reaches end of life on {eol}; "
        f"switch to a current model such as {DEFAULT_CLAUDE_MODEL}."
    )
