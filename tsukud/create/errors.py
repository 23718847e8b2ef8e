"""What a create run can fail with, each with a hint that says what to do next.

Errors that come from elsewhere keep their own types and hints: a missing repository
(``tsukud.github.client.RepoNotFound``), GitHub's rate limit (``GitHubRateLimited``),
the budget, the hourly limit and missing providers (``tsukud.errors``).
"""

from __future__ import annotations

from tsukud.errors import ExitCode, TsukuError


class CreateError(TsukuError):
    code = "create_failed"
    exit_code = ExitCode.GENERAL


class BadSource(CreateError):
    code = "create_bad_source"
    exit_code = ExitCode.USAGE
    default_hint = "Name the source as --from github:owner/repo."


class RecipeExists(CreateError):
    code = "recipe_exists"
    default_hint = (
        "Use --force to overwrite it, or --output to write the new recipe somewhere else."
    )


class NoReleases(CreateError):
    code = "no_releases"
    exit_code = ExitCode.RECIPE_NOT_FOUND
    default_hint = (
        "tsuku writes recipes for tools published as GitHub release assets; this "
        "repository has no published (non-draft) release."
    )


class NoBinaryAssets(CreateError):
    code = "no_binary_assets"
    exit_code = ExitCode.RECIPE_NOT_FOUND
    default_hint = (
        "The releases carry no asset for linux or darwin (only checksums, installers, "
        "source archives or other platforms); the tool may need to be built from source."
    )


class DeterministicFailed(CreateError):
    code = "deterministic_failed"
    exit_code = ExitCode.DETERMINISTIC_FAILED
    default_hint = "Remove --deterministic-only to let an LLM decide from the candidates."


class GenerationFailed(CreateError):
    code = "generation_failed"
    default_hint = (
        "No answer passed the checks within the repair budget; `tsukuctl events "
        "--session <id>` shows every turn and check."
    )


class ValidationFailed(CreateError):
    code = "validation_failed"
    exit_code = ExitCode.VERIFY_FAILED
    default_hint = (
        "The recipe did not install and verify in the container; `tsukuctl events "
        "--session <id>` has the output of each attempt."
    )
