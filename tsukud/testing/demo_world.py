"""The world ``tsukuctl demo`` runs in: a fake GitHub serving two tools' releases.

Deterministic on purpose: the replayed LLM session is keyed by the exact requests the
create pipeline makes, which include release listings and README text.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import native_program, recipe_repo

DATA = Path(__file__).with_name("data")
RECIPES = DATA / "recipes"
LLM_RECORDINGS = DATA / "demo-llm"
# Beside the recordings, not among them: the replayer reads every *.json in there.
LLM_SOURCE = DATA / "demo-llm.source.json"

VERSIONS = {
    "stern": ["1.30.0", "1.31.0", "1.32.0"],
    "age": ["1.1.1", "1.2.0", "1.2.1"],
}


def demo_github() -> FakeGitHub:
    """stern/stern and FiloSottile/age with three releases each (not started)."""
    from tsukud.recipe import load_recipe

    fake = FakeGitHub()
    for name, versions in VERSIONS.items():
        recipe = load_recipe(RECIPES / f"{name}.toml")
        # A real program per Linux platform: what the demo says it ran, it ran.
        fake.add_repo(recipe_repo(recipe, versions, program=native_program))
    return fake


@dataclass(frozen=True)
class RecordingSource:
    """Who answered when the demo's LLM session was recorded.

    ``scripted``: the scripted Claude fake with hand-written answers and token counts
    (``scripts/record_demo_llm.py`` without a key); ``real``: a provider's real model,
    named in ``model``. The demo says which, so nobody mistakes one for the other.
    """

    kind: str  # "scripted" or "real"
    provider: str  # the provider name the replay is keyed under (claude, gemini)
    model: str
    recorded_at: str

    def label(self) -> str:
        if self.kind == "real":
            return (
                f"a real {self.model} session ({self.provider}, recorded "
                f"{self.recorded_at[:10]}), replayed: no network, no key"
            )
        return "a scripted model, replayed: no network, no key"


def recording_source(path: Path = LLM_SOURCE) -> RecordingSource:
    return RecordingSource(**json.loads(path.read_text()))


def write_recording_source(source: RecordingSource, path: Path = LLM_SOURCE) -> None:
    path.write_text(json.dumps(asdict(source), indent=2) + "\n")
