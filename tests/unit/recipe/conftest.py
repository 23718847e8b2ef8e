"""Access to the shared reference data (the human-written tsuku recipes and recorded
releases), skipped (failed in CI) when it is missing: :mod:`tests.shared`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.shared import RECIPES, RELEASES, require


@pytest.fixture
def recipes_dir() -> Path:
    return require(RECIPES)


@pytest.fixture
def releases_dir() -> Path:
    return require(RELEASES)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``fixture_recipe`` runs a test once per human-written recipe ("s/stern.toml")."""
    if "fixture_recipe" in metafunc.fixturenames:
        names = sorted(str(p.relative_to(RECIPES)) for p in RECIPES.rglob("*.toml"))
        metafunc.parametrize("fixture_recipe", names)
