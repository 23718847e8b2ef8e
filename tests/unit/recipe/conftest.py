"""Access to ../shared (the human-written tsuku recipes and recorded releases).

The fixtures live outside the repo. Locally a missing ../shared skips the tests that
need it; in CI (CI=true) it is a failure, so the suite can never pass by skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared"
RECIPES = SHARED / "fixtures" / "tsuku-recipes"
RELEASES = SHARED / "fixtures" / "releases"


def _require(path: Path) -> Path:
    if path.is_dir():
        return path
    reason = f"{path.resolve()} is missing: these tests need the shared fixtures in ../shared"
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def recipes_dir() -> Path:
    return _require(RECIPES)


@pytest.fixture
def releases_dir() -> Path:
    return _require(RELEASES)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``fixture_recipe`` runs a test once per recipe in ../shared ("s/stern.toml")."""
    if "fixture_recipe" in metafunc.fixturenames:
        names = (
            sorted(str(p.relative_to(RECIPES)) for p in RECIPES.rglob("*.toml"))
            if RECIPES.is_dir()
            else ["(missing)"]
        )
        metafunc.parametrize("fixture_recipe", names)
