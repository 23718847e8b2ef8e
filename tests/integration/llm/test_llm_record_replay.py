"""Record a multi-turn session through the real Claude and Gemini adapters, then replay
it with no server at all."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from tests.fakes import anthropic_server as A
from tests.fakes import gemini_server as G
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.gemini_server import FakeGemini
from tests.fakes.llm import CLAUDE_KEY, EXTRACT, FETCH, GEMINI_KEY
from tsukud.llm.claude import ClaudeProvider
from tsukud.llm.gemini import GeminiProvider
from tsukud.llm.provider import Provider, ReplayMiss
from tsukud.llm.replay import RecordingProvider, ReplayProvider, request_key
from tsukud.llm.types import (
    Message,
    Request,
    Response,
    ToolChoice,
    ToolResult,
    ToolResultsMessage,
    UserMessage,
)

SYSTEM = "You write tsuku recipes."


async def run_session(
    provider: Provider, readme: str = "# ripgrep"
) -> tuple[list[Request], list[Response]]:
    """A three-turn loop like create/session.py: search, read a file, forced final answer."""
    history: list[Message] = [UserMessage("Write a recipe for BurntSushi/ripgrep")]
    requests: list[Request] = []
    responses: list[Response] = []
    for turn in range(3):
        final = turn == 2
        request = Request(
            messages=tuple(history),
            system=SYSTEM,
            tools=(FETCH, EXTRACT),
            tool_choice=ToolChoice.tool("extract_pattern") if final else ToolChoice.auto(),
        )
        response = await provider.complete(request)
        requests.append(request)
        responses.append(response)
        history.append(response.message)
        if response.tool_calls and not final:
            history.append(
                ToolResultsMessage(tuple(ToolResult(c.id, readme) for c in response.tool_calls))
            )
    return requests, responses


def script_claude(fake: FakeAnthropic) -> None:
    fake.reply(
        [
            A.text("Searching."),
            A.server_tool_use("srvtoolu_1", "ripgrep releases"),
            A.web_search_result(
                "srvtoolu_1", "https://github.com/BurntSushi/ripgrep/releases", "Releases"
            ),
            A.tool_use("toolu_1", "fetch_file", {"path": "README.md"}),
        ],
        "tool_use",
        usage_=A.usage(500, 40, web_searches=1),
        request_id="req_1",
    )
    fake.reply(
        [A.tool_use("toolu_2", "fetch_file", {"path": "Cargo.toml"})],
        "tool_use",
        request_id="req_2",
    )
    fake.reply(
        [
            A.tool_use(
                "toolu_3",
                "extract_pattern",
                {"asset_type": "archive", "asset_pattern": "rg-{version}"},
            )
        ],
        "tool_use",
        request_id="req_3",
    )


def script_gemini(fake: FakeGemini) -> None:
    fake.reply([G.function_call("fetch_file", {"path": "README.md"}, signature="q+/cdA==")])
    fake.reply([G.text("thinking", signature="AAAA"), G.function_call("fetch_file", {"path": "x"})])
    fake.reply([G.function_call("extract_pattern", {"asset_type": "binary", "asset_pattern": "x"})])


def recordings(directory: Path) -> dict[str, str]:
    return {f.stem: f.read_text() for f in directory.glob("*.json")}


def encoded(responses: list[Response]) -> list[bytes]:
    return [msgspec.json.encode(r) for r in responses]


@pytest.mark.parametrize("which", ["claude", "gemini"])
async def test_record_then_replay_byte_for_byte(tmp_path: Path, which: str) -> None:
    fake: FakeAnthropic | FakeGemini
    inner: Provider
    with FakeAnthropic() if which == "claude" else FakeGemini() as fake:
        if isinstance(fake, FakeAnthropic):
            script_claude(fake)
            inner = ClaudeProvider(CLAUDE_KEY, base_url=fake.url)
        else:
            script_gemini(fake)
            inner = GeminiProvider(GEMINI_KEY, base_url=fake.url + "/")
        recorder = RecordingProvider(inner, tmp_path)
        recorded_requests, recorded = await run_session(recorder)
        await recorder.aclose()
        assert len(fake.requests) == 3

    files = recordings(tmp_path)
    assert len(files) == 3
    assert set(files) == {request_key(r) for r in recorded_requests}
    for text in files.values():
        assert CLAUDE_KEY not in text and GEMINI_KEY not in text

    replay = ReplayProvider(tmp_path)  # the fake server is gone: no network possible
    replayed_requests, replayed = await run_session(replay)
    assert encoded(replayed) == encoded(recorded)
    assert [msgspec.json.encode(r) for r in replayed_requests] == [
        msgspec.json.encode(r) for r in recorded_requests
    ]


async def test_replay_miss_names_hash_and_closest_recording(tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        script_claude(fake)
        recorder = RecordingProvider(ClaudeProvider(CLAUDE_KEY, base_url=fake.url), tmp_path)
        recorded_requests, _ = await run_session(recorder)
        await recorder.aclose()

    with pytest.raises(ReplayMiss) as info:
        await run_session(ReplayProvider(tmp_path), readme="# ripgrep, edited")
    err = info.value
    changed = Request(
        messages=(
            *recorded_requests[1].messages[:-1],
            ToolResultsMessage((ToolResult("toolu_1", "# ripgrep, edited"),)),
        ),
        system=SYSTEM,
        tools=(FETCH, EXTRACT),
    )
    assert err.key == request_key(changed)
    assert err.closest == request_key(recorded_requests[1])
    assert err.key in err.message and err.closest in err.message
    assert "# ripgrep, edited" in err.message  # the first differing line is shown
    assert not err.retryable
