"""Where each provider's API lives, from the environment.

Pure (takes the environment as a mapping) so config precedence can be layered on top
and tests need no monkeypatching. Tests and mirrors point these at loopback fakes.
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from tsukud.llm.provider import ANTHROPIC_BASE_URL, GEMINI_BASE_URL


class Endpoints(msgspec.Struct, frozen=True):
    anthropic: str = ANTHROPIC_BASE_URL
    gemini: str = GEMINI_BASE_URL
    openai: str | None = None
    """No default: a local OpenAI-compatible server is used only when configured."""


def endpoints_from_env(env: Mapping[str, str]) -> Endpoints:
    """``ANTHROPIC_BASE_URL``, ``TSUKU_GEMINI_BASE_URL``, ``TSUKU_OPENAI_BASE_URL``."""
    return Endpoints(
        anthropic=env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL,
        gemini=env.get("TSUKU_GEMINI_BASE_URL") or GEMINI_BASE_URL,
        openai=env.get("TSUKU_OPENAI_BASE_URL") or None,
    )
