"""What the three HTTP adapters share (tsukud.llm.adapter): name, model, a repr that
says where they talk to and never the key, an HTTP client closed only when it is
their own, and the same answer through a client the caller passed in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest

from tests.fakes import anthropic_server as A
from tests.fakes import gemini_server as G
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CLAUDE_KEY, GEMINI_KEY, OPENAI_KEY
from tests.fakes.openai_server import FakeOpenAI
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.openai_compat import OpenAICompatProvider
from tsukud.llm.types import Request, UserMessage

Fake = FakeAnthropic | FakeGemini | FakeOpenAI


def claude(fake: Fake, client: httpx2.AsyncClient | None) -> Any:
    return ClaudeProvider(CLAUDE_KEY, base_url=fake.url, name="c1", http_client=client)


def gemini(fake: Fake, client: httpx2.AsyncClient | None) -> Any:
    return GeminiProvider(GEMINI_KEY, base_url=fake.url + "/", name="g1", http_client=client)


def local(fake: Fake, client: httpx2.AsyncClient | None) -> Any:
    return OpenAICompatProvider(
        fake.url, model="qwen2.5-coder:7b", api_key=OPENAI_KEY, name="l1", http_client=client
    )


def say_ok(fake: Fake) -> None:
    if isinstance(fake, FakeAnthropic):
        fake.reply([A.text("ok")])
    elif isinstance(fake, FakeGemini):
        fake.reply([G.text("ok")])
    else:
        fake.reply("ok")


CASES = [
    (claude, FakeAnthropic, CLAUDE_KEY, "ClaudeProvider", "c1"),
    (gemini, FakeGemini, GEMINI_KEY, "GeminiProvider", "g1"),
    (local, FakeOpenAI, OPENAI_KEY, "OpenAICompatProvider", "l1"),
]


@pytest.mark.parametrize(("build", "fake_type", "key", "kind", "name"), CASES)
async def test_shared_behaviour(
    build: Callable[[Fake, httpx2.AsyncClient | None], Any],
    fake_type: type[Fake],
    key: str,
    kind: str,
    name: str,
) -> None:
    with fake_type() as fake:
        own = build(fake, None)
        assert own.name == name and own.model
        shown = repr(own)
        assert shown.startswith(f"{kind}(name={name!r}, model={own.model!r}, url=")
        assert fake.url in shown and key not in shown
        say_ok(fake)
        assert (await own.complete(Request(messages=(UserMessage("hi"),)))).text == "ok"
        await own.aclose()
        assert own._http.is_closed  # its own client: closed

        async with httpx2.AsyncClient() as client:
            lent = build(fake, client)
            say_ok(fake)
            assert (await lent.complete(Request(messages=(UserMessage("hi"),)))).text == "ok"
            await lent.aclose()
            assert not client.is_closed  # the caller's client: left open
