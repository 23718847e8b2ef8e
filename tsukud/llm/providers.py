"""The LLM providers tsuku knows, as the daemon uses them: their adapters built.

A provider is one row of ``provider_specs.LLM_PROVIDERS`` (a :class:`ProviderSpec`: its
name, the tag its responses carry, its adapter module, its settings and the variables
carrying its key, how it searches the web during discovery, whether its calls are
priced). The row lives in ``caller_env.py``, stdlib only, because the settings
(``config.py``, core) and the client (which carries the key variables) read it too and
may import nothing of ``llm/``. This module adds what needs more than data: the
adapter imported and built, and the questions the service (``llm/service.py``), ``llm
status``, discovery (``discover/llm_discovery.strategy_for``, ``discover/chain.py``)
and create's pipeline ask instead of naming providers.

Adding a provider is its row, its adapter module on ``llm/adapter.py``'s
``HttpAdapter`` and its prices in ``llm/prices.toml``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tsukud.provider_specs import LLM_PROVIDERS, ProviderSpec

if TYPE_CHECKING:
    from tsukud.llm.provider import Provider

__all__ = ["SPECS", "ProviderSpec", "adapter_class", "build"]

SPECS: tuple[ProviderSpec, ...] = LLM_PROVIDERS


def adapter_class(spec: ProviderSpec) -> type[Provider]:
    """The adapter's class, its module imported (and with it the provider's SDK)."""
    module, _, cls = spec.adapter.partition(":")
    found: type[Provider] = getattr(importlib.import_module(module), cls)
    return found


def build(
    spec: ProviderSpec, *, key: str, model: str, base_url: str, proxy: str | None
) -> Provider:
    """The adapter, configured (every adapter takes these by keyword)."""
    args: dict[str, Any] = {"model": model, "base_url": base_url, "proxy": proxy}
    args["api_key"] = key if key or spec.key_required else None
    return adapter_class(spec)(**args)


BY_NAME: Mapping[str, ProviderSpec] = {s.name: s for s in SPECS}
BY_TAG: Mapping[str, ProviderSpec] = {s.tag: s for s in SPECS}
NAMES: tuple[str, ...] = tuple(s.name for s in SPECS)


def key_variables() -> str:
    """``A_API_KEY or B_API_KEY``: the first variable of every provider that needs a
    key, for a hint (``tsukuctl doctor`` names the same from the same table)."""
    names = [s.key_env[0] for s in SPECS if s.key_required]
    return ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]


def searches_itself(name: str | None) -> bool:
    """Whether provider ``name`` searches the web itself (an unknown name: no)."""
    s = BY_NAME.get(name or "")
    return s is not None and s.server_search


def lists_deprecations(name: str | None) -> bool:
    """Whether provider ``name``'s SDK lists deprecated models (an unknown name: no):
    only then is that list, in a heavy SDK, worth reading."""
    s = BY_NAME.get(name or "")
    return s is not None and s.sdk_deprecations is not None


def name_of_tag(tag: str) -> str:
    """The provider's name for a response's ``provider`` tag (a spec's ``tag``)."""
    s = BY_TAG.get(tag)
    return s.name if s is not None else tag
