"""The provider adapters through a proxy: the one the settings chose for the
provider's URL (``tsukud.net.proxy``), and never one the daemon's environment names
behind the settings' back. A real forwarding proxy on loopback records what passed."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import anthropic_server as A
from tests.fakes import gemini_server as G
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CLAUDE_KEY, GEMINI_KEY, OPENAI_KEY
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.proxy import ForwardingProxy
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.openai_compat import OpenAICompatProvider
from tsukud.llm.types import Request, UserMessage

ASK = Request(messages=(UserMessage("Which asset is linux/amd64?"),))


@pytest.fixture
def proxy() -> Iterator[ForwardingProxy]:
    with ForwardingProxy() as p:
        yield p


async def test_each_provider_goes_through_the_proxy_it_is_given(
    proxy: ForwardingProxy,
    anthropic_fake: FakeAnthropic,
    gemini_fake: FakeGemini,
    openai_fake: FakeOpenAI,
) -> None:
    anthropic_fake.reply([A.text("stern_linux_amd64.tar.gz")], "end_turn")
    gemini_fake.reply([G.text("stern_linux_amd64.tar.gz")])
    openai_fake.reply("stern_linux_amd64.tar.gz")
    providers = [
        ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url, timeout=5.0, proxy=proxy.url),
        GeminiProvider(GEMINI_KEY, base_url=gemini_fake.url + "/", timeout=5.0, proxy=proxy.url),
        OpenAICompatProvider(
            openai_fake.url, model="qwen2.5-coder:7b", api_key=OPENAI_KEY, proxy=proxy.url
        ),
    ]
    try:
        for provider in providers:
            response = await provider.complete(ASK)
            assert response.text == "stern_linux_amd64.tar.gz"
    finally:
        for provider in providers:
            await provider.aclose()
    through = proxy.urls()
    assert len(through) == 3
    assert through[0] == f"{anthropic_fake.url}/v1/messages"
    assert through[1].startswith(f"{gemini_fake.url}/") and ":generateContent" in through[1]
    assert through[2] == f"{openai_fake.url}/v1/chat/completions"
    # Forwarded as sent: the keys reached the providers, in their headers only.
    sent = anthropic_fake.requests[0].headers
    assert sent.get("authorization") == f"Bearer {CLAUDE_KEY}" or sent["x-api-key"] == CLAUDE_KEY


async def test_the_daemons_environment_does_not_pick_a_proxy_behind_the_settings(
    proxy: ForwardingProxy, anthropic_fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings that chose no proxy (a caller's NO_PROXY, say) mean direct, whatever
    httpx would read from the environment tsukud was started in."""
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy.url)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    anthropic_fake.reply([A.text("direct")], "end_turn")
    claude = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url, timeout=5.0)
    try:
        assert (await claude.complete(ASK)).text == "direct"
    finally:
        await claude.aclose()
    assert proxy.requests == []
    assert len(anthropic_fake.requests) == 1
