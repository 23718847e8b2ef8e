"""The demo names what answered in its LLM recording, and the bundled label is true."""

from __future__ import annotations

import json
from pathlib import Path

from tsukud.testing.demo_world import (
    LLM_RECORDINGS,
    RecordingSource,
    recording_source,
    write_recording_source,
)


def test_bundled_source_matches_the_recordings() -> None:
    source = recording_source()
    recordings = [json.loads(p.read_text()) for p in sorted(LLM_RECORDINGS.glob("*.json"))]
    assert recordings
    assert {r["provider"] for r in recordings} == {source.provider}
    assert {resp["model"] for r in recordings for resp in r["responses"]} == {source.model}
    # The bundled session came from the scripted fake (its request ids say so), and the
    # source must not claim a real model made it.
    request_ids = {resp["request_id"] for r in recordings for resp in r["responses"]}
    assert all(rid.startswith("req_fake") for rid in request_ids)
    assert source.kind == "scripted"
    assert source.label() == "a scripted model, replayed: no network, no key"


def test_a_real_recording_names_its_model(tmp_path: Path) -> None:
    real = RecordingSource("real", "gemini", "gemini-3-pro", "2026-12-01T10:00:00Z")
    write_recording_source(real, tmp_path / "source.json")
    again = recording_source(tmp_path / "source.json")
    assert again == real
    assert again.label() == (
        "a real gemini-3-pro session (gemini, recorded 2026-12-01), replayed: no network, no key"
    )
