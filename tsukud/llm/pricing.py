"""What a call cost, from a dated price table (``prices.toml``), and model deprecations.

Unknown is never zero: a model without a price row valid on the day, or a call that
used a fee the row does not know, costs ``None``, so the budget can refuse or warn
instead of silently counting $0 (the reference priced everything as Sonnet).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import re
import tomllib
from decimal import Decimal
from importlib import resources

import msgspec

from tsukud.llm.providers import SPECS, ProviderSpec
from tsukud.llm.types import Usage

_PER_TOKEN = Decimal(1_000_000)
_DATE_SUFFIX = re.compile(r"-(?:\d{8}|latest|\d{3})$")


class Rates(msgspec.Struct, frozen=True):
    """USD per 1M tokens of one price tier (a model's rates for one prompt size)."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    cache_write_1h: Decimal


def prompt_tokens(usage: Usage) -> int:
    """The prompt size a tiered price is chosen by: every input-side token, cached or
    not (a provider's prompt count may include the cached part or leave it apart, as
    :class:`~tsukud.llm.types.Usage` says). Tool-use prompt tokens are in
    ``input_tokens`` too; counting them can only pick the dearer tier, never undercount."""
    return usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens


class Price(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """One row of ``prices.toml``: USD per 1M tokens; fees USD per unit.

    A long-context tier (``above_tokens`` with the ``*_above`` rates) bills the whole
    call, input and output, at the higher rates once its prompt has more than
    ``above_tokens`` tokens, as providers price their long-context models. Higher rates
    are required to be at least the base ones, so the worst case may always take the
    dearer tier when unsure.
    """

    model: str
    input: Decimal
    output: Decimal
    aliases: tuple[str, ...] = ()
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    cache_write_1h: Decimal | None = None
    per_search: Decimal | None = None
    per_grounded_prompt: Decimal | None = None
    above_tokens: int | None = None
    input_above: Decimal | None = None
    output_above: Decimal | None = None
    cache_read_above: Decimal | None = None
    cache_write_above: Decimal | None = None
    cache_write_1h_above: Decimal | None = None
    since: dt.date | None = None
    until: dt.date | None = None

    def __post_init__(self) -> None:
        # Refused when the table loads (a bad llm.prices_file is a ConfigError), not
        # discovered as an undercount on the day a long prompt is sent.
        above = (
            self.input_above,
            self.output_above,
            self.cache_read_above,
            self.cache_write_above,
            self.cache_write_1h_above,
        )
        if self.above_tokens is None:
            if any(r is not None for r in above):
                raise ValueError(f"{self.model}: *_above rates need above_tokens")
            return
        if self.above_tokens < 1:
            raise ValueError(f"{self.model}: above_tokens must be at least 1")
        if self.input_above is None or self.output_above is None:
            raise ValueError(f"{self.model}: above_tokens needs input_above and output_above")
        low, high = self.rates(0), self.rates(self.above_tokens + 1)
        for field in Rates.__struct_fields__:
            if getattr(high, field) < getattr(low, field):
                raise ValueError(f"{self.model}: {field} above {self.above_tokens} tokens is lower")

    def valid_on(self, day: dt.date) -> bool:
        return (self.since is None or self.since <= day) and (
            self.until is None or day <= self.until
        )

    def rates(self, prompt: int) -> Rates:
        """The rates a call whose prompt has ``prompt`` tokens is billed at. A cache rate
        the row leaves out is the input rate of the same tier (never a lower guess)."""
        if self.above_tokens is not None and prompt > self.above_tokens:
            assert self.input_above is not None and self.output_above is not None
            inp, out = self.input_above, self.output_above
            read, write, write_1h = (
                self.cache_read_above,
                self.cache_write_above,
                self.cache_write_1h_above,
            )
        else:
            inp, out = self.input, self.output
            read, write, write_1h = self.cache_read, self.cache_write, self.cache_write_1h
        write = write if write is not None else inp
        return Rates(
            input=inp,
            output=out,
            cache_read=read if read is not None else inp,
            cache_write=write,
            cache_write_1h=write_1h if write_1h is not None else write,
        )

    def cost(self, usage: Usage) -> Decimal | None:
        """What one call with ``usage`` cost (``None`` when it used an unpriced fee).

        One call: a tier is chosen by this call's prompt, so a sum of several calls'
        usage would be priced wrongly (too high, never too low)."""
        fees = Decimal(0)
        for count, fee in (
            (usage.web_search_requests, self.per_search),
            (usage.grounded_prompts, self.per_grounded_prompt),
        ):
            if count:
                if fee is None:
                    return None
                fees += count * fee
        r = self.rates(prompt_tokens(usage))
        one_hour = min(usage.cache_write_1h_tokens, usage.cache_write_tokens)
        tokens = (
            usage.input_tokens * r.input
            + (usage.output_tokens + usage.thoughts_tokens) * r.output
            + usage.cache_read_tokens * r.cache_read
            + (usage.cache_write_tokens - one_hour) * r.cache_write
            + one_hour * r.cache_write_1h
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

        Dated snapshots (``<model>-20250929``), ``-latest`` and ``models/`` prefixes
        fall back to the base name; nothing looser, so ``x-flash-lite`` never takes
        ``x-flash``'s price.
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
def _deprecated_models(spec: ProviderSpec) -> dict[str, str]:
    """Model → end-of-life date, from the SDK of a provider whose spec names its list
    (``sdk_deprecations``): that one module's file, run alone, so ``llm status`` on a
    fresh daemon answers in milliseconds instead of the seconds the whole SDK takes to
    import (its package's ``__init__`` imports everything). When the SDK moved the list,
    its adapter module's ``deprecated_models`` imports the SDK: slow, never silent."""
    table = _sdk_table(spec.sdk_deprecations) if spec.sdk_deprecations else None
    if table is None:
        table = importlib.import_module(spec.adapter_module).deprecated_models()
    return dict(table)


def _sdk_table(module: str) -> dict[str, str] | None:
    """``module``'s ``DEPRECATED_MODELS``, executed from its file without importing the
    packages above it; ``None`` when there is no such file or table."""
    import importlib.util
    import pathlib

    top, _, rest = module.partition(".")
    try:
        package = importlib.util.find_spec(top)  # finds; imports nothing
    except (ImportError, ValueError):
        return None
    for base in (package.submodule_search_locations or []) if package else []:
        path = pathlib.Path(base, *rest.split(".")).with_suffix(".py")
        loaded = importlib.util.spec_from_file_location(f"_tsuku_sdk_list.{module}", path)
        if not path.is_file() or loaded is None or loaded.loader is None:
            continue
        data = importlib.util.module_from_spec(loaded)
        try:
            loaded.loader.exec_module(data)
        except Exception:  # an SDK changed under us: the adapter's own reading answers
            return None
        table = getattr(data, "DEPRECATED_MODELS", None)
        if isinstance(table, dict):
            return {str(k): str(v) for k, v in table.items()}
    return None


def deprecation(model: str) -> str | None:
    """A warning for a model its provider's SDK lists as deprecated (the spec whose
    ``sdk_deprecations`` is set), with its end-of-life date, else ``None``."""
    for spec in (s for s in SPECS if s.sdk_deprecations):
        eol = _deprecated_models(spec).get(model)
        if eol is not None:
            return (
                f"{model} is deprecated by {spec.vendor} and reaches end of life on {eol}; "
                f"switch to a current model such as {spec.default_model}."
            )
    return None
