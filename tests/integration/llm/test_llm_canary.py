"""Canary API keys must never surface: not in errors (message, hint, repr, wire form,
formatted traceback), provider reprs, log records of any library, or recordings."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import Reply
from tests.fakes import anthropic_server as A
from tests.fakes import gemini_server as G
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CANARIES, CLAUDE_KEY, FETCH, GEMINI_KEY
from tests.integration.llm.wires import WIRES, Wire, error_texts
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.provider import ProviderError
from tsukud.llm.replay import RecordingProvider
from tsukud.llm.types import Request, UserMessage

ASK = Request(messages=(UserMessage("hi"),), tools=(FETCH,))


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    for name in ("", "anthropic", "httpx2", "httpcore2", "google_genai", "google"):
        caplog.set_level(logging.DEBUG, logger=name)
    yield caplog


def assert_clean(*texts: str) -> None:
    for text in texts:
        for canary in CANARIES:
            assert canary not in text


def recording_texts(directory: Path) -> list[str]:
    return [f.read_text() for f in sorted(directory.glob("*.json"))]


@pytest.mark.parametrize("wire", WIRES, ids=str)
async def test_adapters_never_leak_their_key(
    all_logs: pytest.LogCaptureFixture, wire: Wire
) -> None:
    """Servers that echo the key they rejected, in a rate limit, and a dropped
    connection: none of it may carry the key on."""
    with wire.fake() as fake:
        provider = wire.build(fake.url, None, 5.0)
        texts = [repr(provider)]
        wire.error(fake, "auth", wire.key)
        wire.error(fake, "rate_limited", wire.key)
        fake.push(Reply(disconnect=True))
        errors = []
        try:
            for _ in range(3):
                with pytest.raises(ProviderError) as info:
                    await provider.complete(ASK)
                texts.extend(error_texts(info.value))
                errors.append(info.value)
        finally:
            await provider.aclose()
    # The two answers that quoted the key come back as HTTP errors with the key
    # replaced; the dropped connection has no status and nothing to redact.
    auth, limited, dropped = errors
    assert auth.status in (400, 401) and "[REDACTED]" in str(auth), str(auth)
    assert limited.status == 429 and "[REDACTED]" in str(limited), str(limited)
    assert dropped.status is None and "[REDACTED]" not in str(dropped), str(dropped)
    assert_clean(*texts, all_logs.text, *(str(r.__dict__) for r in all_logs.records))


async def test_recordings_never_contain_keys(tmp_path: Path, anthropic_fake: FakeAnthropic) -> None:
    # Even if the key comes back in model output (a tool echoing the environment).
    anthropic_fake.reply([A.text(f"your key is {CLAUDE_KEY}, and sk-ant-api03-abcdefghijklmnop")])
    inner = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url)
    recorder = RecordingProvider(inner, tmp_path, secrets=[CLAUDE_KEY])
    try:
        await recorder.complete(Request(messages=(UserMessage(f"echo {CLAUDE_KEY}"),)))
    finally:
        await recorder.aclose()
    (text,) = recording_texts(tmp_path)
    assert CLAUDE_KEY not in text and "sk-ant-api03" not in text
    assert "[REDACTED]" in text
    assert_clean(repr(recorder))


async def test_successful_calls_log_no_key(
    all_logs: pytest.LogCaptureFixture, anthropic_fake: FakeAnthropic, gemini_fake: FakeGemini
) -> None:
    anthropic_fake.reply([A.text("ok")])
    gemini_fake.reply([G.text("ok")])
    claude = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url)
    gemini = GeminiProvider(GEMINI_KEY, base_url=gemini_fake.url + "/")
    try:
        await claude.complete(ASK)
        await gemini.complete(ASK)
    finally:
        await claude.aclose()
        await gemini.aclose()
    assert all_logs.records  # debug logging really was on
    assert_clean(all_logs.text, *(str(r.__dict__) for r in all_logs.records))
