"""Fixtures for the provider adapters: a fake server per provider and an adapter
pointed at it (real SDK, real HTTP on 127.0.0.1)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CLAUDE_KEY, GEMINI_KEY, OPENAI_KEY
from tests.fakes.openai_server import FakeOpenAI
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.openai_compat import OpenAICompatProvider


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def gemini_fake() -> Iterator[FakeGemini]:
    with FakeGemini() as server:
        yield server


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
async def claude(anthropic_fake: FakeAnthropic) -> AsyncIterator[ClaudeProvider]:
    provider = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url, timeout=5.0)
    yield provider
    await provider.aclose()


@pytest.fixture
async def gemini(gemini_fake: FakeGemini) -> AsyncIterator[GeminiProvider]:
    provider = GeminiProvider(GEMINI_KEY, base_url=gemini_fake.url + "/", timeout=5.0)
    yield provider
    await provider.aclose()


@pytest.fixture
async def local(openai_fake: FakeOpenAI) -> AsyncIterator[OpenAICompatProvider]:
    provider = OpenAICompatProvider(
        openai_fake.url, model="qwen2.5-coder:7b", api_key=OPENAI_KEY, timeout=5.0
    )
    yield provider
    await provider.aclose()
