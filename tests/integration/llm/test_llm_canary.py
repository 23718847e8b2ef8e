"""Canary API keys must never surface: not in errors (message, hint, repr, wire form,
formatted traceback), provider reprs, log records of any library, or recordings."""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import Reply
from tests.fakes import anthropic_server as A
from tests.fakes import gemini_server as G
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CANARIES, CLAUDE_KEY, FETCH, GEMINI_KEY, OPENAI_KEY
from tests.fakes.openai_server import FakeOpenAI
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.openai_compat import OpenAICompatProvider
from tsukud.llm.provider import Provider, ProviderError
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


def error_texts(err: ProviderError) -> list[str]:
    return [
        str(err),
        repr(err),
        err.hint,
        json.dumps(err.to_wire()),
        "".join(traceback.format_exception(err)),
    ]


def recording_texts(directory: Path) -> list[str]:
    return [f.read_text() for f in sorted(directory.glob("*.json"))]


def leaky_401(key: str) -> dict[str, object]:
    """Some servers echo the key they rejected; ours must not pass it on."""
    return {"message": f"Incorrect API key provided: {key}", "key": key}


async def exercise(
    provider: Provider, fake: FakeAnthropic | FakeGemini | FakeOpenAI, key: str
) -> list[str]:
    texts = [repr(provider)]
    if isinstance(fake, FakeAnthropic):
        fake.push(Reply(401, json=A.error_body("authentication_error", f"invalid x-api-key {key}")))
        fake.push(Reply(429, json=A.error_body("rate_limit_error", f"slow down {key}")))
    elif isinstance(fake, FakeGemini):
        message = f"API key not valid: {key}"
        body = G.error_body(400, "INVALID_ARGUMENT", message, reason="API_KEY_INVALID")
        fake.push(Reply(400, json=body))
        fake.push(Reply(429, json=G.error_body(429, "RESOURCE_EXHAUSTED", f"quota for {key}")))
    else:
        fake.push(Reply(401, json={"error": leaky_401(key)}))
        fake.push(Reply(429, body=f"plain text error {key}".encode()))
    fake.push(Reply(disconnect=True))
    errors = []
    for _ in range(3):
        with pytest.raises(ProviderError) as info:
            await provider.complete(ASK)
        texts.extend(error_texts(info.value))
        errors.append(info.value)
    # The two answers that quoted the key come back as HTTP errors with the key
    # replaced; the dropped connection has no status and nothing to redact.
    auth, limited, dropped = errors
    assert auth.status in (400, 401) and "[REDACTED]" in str(auth), str(auth)
    assert limited.status == 429 and "[REDACTED]" in str(limited), str(limited)
    assert dropped.status is None and "[REDACTED]" not in str(dropped), str(dropped)
    return texts


async def test_claude_never_leaks_key(
    all_logs: pytest.LogCaptureFixture, anthropic_fake: FakeAnthropic
) -> None:
    provider = ClaudeProvider(CLAUDE_KEY, base_url=anthropic_fake.url)
    try:
        texts = await exercise(provider, anthropic_fake, CLAUDE_KEY)
    finally:
        await provider.aclose()
    assert_clean(*texts, all_logs.text, *(str(r.__dict__) for r in all_logs.records))


async def test_gemini_never_leaks_key(
    all_logs: pytest.LogCaptureFixture, gemini_fake: FakeGemini
) -> None:
    provider = GeminiProvider(GEMINI_KEY, base_url=gemini_fake.url + "/")
    try:
        texts = await exercise(provider, gemini_fake, GEMINI_KEY)
    finally:
        await provider.aclose()
    assert_clean(*texts, all_logs.text, *(str(r.__dict__) for r in all_logs.records))


async def test_local_never_leaks_key(
    all_logs: pytest.LogCaptureFixture, openai_fake: FakeOpenAI
) -> None:
    provider = OpenAICompatProvider(openai_fake.url, model="m", api_key=OPENAI_KEY)
    try:
        texts = await exercise(provider, openai_fake, OPENAI_KEY)
    finally:
        await provider.aclose()
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
