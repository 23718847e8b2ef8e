"""Where the shared reference data lives, and what a test does when it is missing.

The human-written tsuku recipes, recorded GitHub release lists and recorded search
pages are not part of this repository: they sit next to the checkout (``../shared``) or
wherever ``TSUKU_SHARED`` points. Every test reaches them through this module, so there
is one location. A test whose data is missing is skipped with a reason naming the path;
in CI (``CI=true``) that skip is a failure (``tests/skip_policy.py``), and so is the
empty parametrisation of a test over the data, so the suite can never pass by skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO

SHARED = Path(os.environ.get("TSUKU_SHARED") or REPO.parent / "shared").resolve()
RECIPES = SHARED / "fixtures" / "tsuku-recipes"
RELEASES = SHARED / "fixtures" / "releases"
SEARCH = SHARED / "fixtures" / "search"


def require(path: Path = SHARED) -> Path:
    """``path`` when it exists; otherwise the test is skipped (a failure in CI)."""
    if not path.exists():
        pytest.skip(
            f"{path} is missing: this test needs the shared reference data"
            " (set TSUKU_SHARED, or place it next to the checkout as ../shared)"
        )
    return path


def recipe_text(name: str) -> str:
    """A human-written recipe's TOML, e.g. ``recipe_text("s/stern.toml")``."""
    return (require(RECIPES) / name).read_text()
