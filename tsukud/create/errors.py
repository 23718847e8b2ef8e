"""What a create run can fail with, each with a hint that says what to do next.

Errors that come from elsewhere keep their own types and hints: a missing repository
(``tsukud.github.client.RepoNotFound``), GitHub's rate limit (``GitHubRateLimited``),
the budget, the hourly limit and missing providers (``tsukud.errors``).
"""

from __future__ import annotations

from tsukud.errors import TsukuError


class CreateError(TsukuError):
    code = "create_failed"


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
