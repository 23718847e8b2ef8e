"""Record/replay wrapper with an in-memory provider (the SDK paths are covered by the
integration tests)."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.hypothesis_profiles import examples
from tsukud.llm.provider import Provider, ReplayMiss
from tsukud.llm.replay import RecordingProvider, ReplayProvider, request_key
from tsukud.llm.types import (
    AssistantMessage,
    Request,
    Response,
    StopReason,
    TextPart,
    Usage,
    UserMessage,
)


class Echo:
    """Answers with the prompt's text and a counter, so repeated requests differ."""

    name = "echo"
    model = "echo-1"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, request: Request) -> Response:
        self.calls += 1
        last = request.messages[-1]
        text = f"{getattr(last, 'text', '')} #{self.calls}"
        return Response(
            AssistantMessage((TextPart(text),)),
            StopReason.END_TURN,
            "end_turn",
            Usage(1, 2),
            self.name,
            self.model,
            request_id=f"req_{self.calls}",
            duration_ms=self.calls,
        )

    async def aclose(self) -> None:
        pass


def recordings(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.json"))


def ask(text: str, **kw: object) -> Request:
    return Request(messages=(UserMessage(text),), **kw)  # type: ignore[arg-type]


def test_wrappers_satisfy_the_protocol(tmp_path: Path) -> None:
    assert isinstance(Echo(), Provider)
    assert isinstance(RecordingProvider(Echo(), tmp_path), Provider)
    assert isinstance(ReplayProvider(tmp_path), Provider)


async def test_repeated_requests_replay_in_order(tmp_path: Path) -> None:
    recorder = RecordingProvider(Echo(), tmp_path)
    live = [await recorder.complete(ask("hi")) for _ in range(2)]
    live.append(await recorder.complete(ask("other")))
    assert len(recordings(tmp_path)) == 2
    replay = ReplayProvider(tmp_path)
    served = [await replay.complete(ask("hi")) for _ in range(3)]
    assert [r.text for r in served] == ["hi #1", "hi #2", "hi #2"]  # the last repeats
    assert await replay.complete(ask("other")) == live[2]


async def test_key_ignores_nothing_that_matters_and_normaliser_masks(tmp_path: Path) -> None:
    assert request_key(ask("a")) != request_key(ask("a", max_tokens=5))
    assert request_key(ask("a")) != request_key(ask("a", system="s"))

    def mask(data: dict[str, object]) -> dict[str, object]:
        data["system"] = "<masked>"
        return data

    recorder = RecordingProvider(Echo(), tmp_path, normalise=mask)
    await recorder.complete(ask("x", system="run at 10:00"))
    replay = ReplayProvider(tmp_path, normalise=mask)
    assert (await replay.complete(ask("x", system="run at 11:30"))).text == "x #1"


async def test_miss_in_empty_directory(tmp_path: Path) -> None:
    with pytest.raises(ReplayMiss, match="no recordings there") as info:
        await ReplayProvider(tmp_path / "nothing").complete(ask("x"))
    assert info.value.key == request_key(ask("x")) and info.value.closest is None


async def test_miss_points_at_closest(tmp_path: Path) -> None:
    recorder = RecordingProvider(Echo(), tmp_path)
    await recorder.complete(ask("find the ripgrep asset for linux"))
    await recorder.complete(ask("something else entirely", max_tokens=7, system="other"))
    with pytest.raises(ReplayMiss) as info:
        await ReplayProvider(tmp_path).complete(ask("find the ripgrep asset for darwin"))
    assert info.value.closest == request_key(ask("find the ripgrep asset for linux"))
    assert "darwin" in info.value.message and "similarity" in info.value.message


@settings(max_examples=examples(30), deadline=None)
@given(st.text(max_size=50), st.integers(min_value=1, max_value=10_000), st.text(max_size=20))
def test_key_is_stable_across_serialisation(text: str, max_tokens: int, system: str) -> None:
    request = ask(text, max_tokens=max_tokens, system=system)
    again = msgspec.json.decode(msgspec.json.encode(request), type=Request)
    assert request_key(request) == request_key(again)
