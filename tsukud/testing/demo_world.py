"""The world ``tsukuctl demo`` runs in: a fake GitHub serving two tools' releases.

Deterministic on purpose: the replayed LLM session is keyed by the exact requests the
create pipeline makes, which include release listings and README text.
"""

from __future__ import annotations

from pathlib import Path

from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import recipe_repo

DATA = Path(__file__).with_name("data")
RECIPES = DATA / "recipes"
LLM_RECORDINGS = DATA / "demo-llm"

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
        fake.add_repo(recipe_repo(recipe, versions))
    return fake
