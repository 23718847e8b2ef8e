"""What a create run can fail with, each with a hint that says what to do next.

Errors that come from elsewhere keep their own types and hints: a missing repository
(``tsukud.github.client.RepoNotFound``), GitHub's rate limit (``GitHubRateLimited``),
the budget, the hourly limit and missing providers (``tsukud.errors``).
"""

from __future__ import annotations

from typing import Any

from tsukud.errors import TsukuError
from tsukud.registries.ecosystems import sources_hint


class CreateError(TsukuError):
    code = "create_failed"


class BadSource(CreateError):
    """A ``--from`` no builder reads; its hint names every source there is (from the
    ecosystems' records: the catalogue, stdlib-only, cannot read them)."""

    code = "create_bad_source"

    def __init__(self, message: str, *, hint: str | None = None, **data: Any) -> None:
        super().__init__(message, hint=hint if hint is not None else from_hint(), **data)


def from_hint() -> str:
    """``Name the source as --from github:owner/repo, npm:<package>, ...``."""
    return f"Name the source as --from {sources_hint()}."


class RecipeExists(CreateError):
    code = "recipe_exists"


class NoReleases(CreateError):
    code = "no_releases"


class NoBinaryAssets(CreateError):
    code = "no_binary_assets"


class DeterministicFailed(CreateError):
    code = "deterministic_failed"


class DeterministicUncertain(DeterministicFailed):
    """Without a model to decide, a recipe the matcher doubts is not written: the
    candidates are listed instead, for a person (or a run with an LLM) to choose."""

    code = "deterministic_low_confidence"
