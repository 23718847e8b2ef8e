"""Where the shared reference data lives, and what a test does when it is missing.

The human-written tsuku recipes, recorded GitHub release lists and recorded search
pages are not part of this repository: they sit next to the checkout (``../shared``) or
wherever ``TSUKU_SHARED`` points. Every test reaches them through this module, so there
is one location and one policy: a test that needs data that is not there fails in CI
(``CI=true``: the suite can never pass by skipping) and is skipped locally, with a
reason naming the missing path.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.conftest import REPO, in_ci

SHARED = Path(os.environ.get("TSUKU_SHARED") or REPO.parent / "shared").resolve()
RECIPES = SHARED / "fixtures" / "tsuku-recipes"
RELEASES = SHARED / "fixtures" / "releases"
SEARCH = SHARED / "fixtures" / "search"

MISSING = "shared-data-missing"


def missing(path: Path) -> NoReturn:
    reason = (
        f"{path} is missing: this test needs the shared reference data"
        " (set TSUKU_SHARED, or place it next to the checkout as ../shared)"
    )
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def require(path: Path = SHARED) -> Path:
    """``path`` when it exists; otherwise the test fails in CI and is skipped locally."""
    if not path.exists():
        missing(path)
    return path


def recipe_text(name: str) -> str:
    """A human-written recipe's TOML, e.g. ``recipe_text("s/stern.toml")``."""
    return (require(RECIPES) / name).read_text()


def cases(values: list[Any], needs: Path = SHARED) -> list[Any]:
    """Values to parametrise a test over that come from the shared data.

    Without the data the list would be empty, and pytest passes an empty parametrisation
    by skipping it quietly, in CI too. So a missing ``needs`` gives one case instead,
    :data:`MISSING`, whose test calls :func:`missing` (through :func:`require` or a
    fixture that does) and so follows the policy above.
    """
    if values or needs.exists():
        return values
    return [pytest.param(MISSING, id=MISSING)]
