"""``tsukuctl create``: from a GitHub repository's releases to a validated recipe.

The modules here are the pure core: no network, no daemon, no LLM calls. They turn
release asset lists into prompt text and into recipes, check recipes before any
container runs, and clean up what goes back to the model.

- ``tokens``: how asset names spell OS, arch and libc; one name taken apart.
- ``assets``: releases, unsafe-name and noise filtering, prompt rendering (fences,
  README truncation).
- ``matcher``: the deterministic matcher (no LLM, $0) with ranked candidates.
- ``answer``: the ``extract_pattern`` answer, its validation, and the one converter
  from an answer to a recipe.
- ``static_checks``: limits, verify command, paths, literal versions, replay.
- ``paths``: ``fetch_file`` path rules and result builders.
- ``verify_repair``: verify-command fixes tried before an LLM repair.
- ``prompts``: system prompt and tool schemas (data).

The findings' shape, the feedback cleaning and validation itself live in
:mod:`tsukud.validation`, which the instructions builder uses too.
"""

from tsukud.create.answer import (
    BinaryAnswer,
    ExtractPatternAnswer,
    InvalidAnswer,
    Override,
    RecipeContext,
    answer_to_recipe,
    parse_answer,
    validate_answer,
)
from tsukud.create.assets import (
    filter_release,
    release_from_api,
    render_readme,
    render_releases,
    usable_releases,
)
from tsukud.create.matcher import (
    CONFIDENT,
    Candidate,
    MatchResult,
    candidate_to_recipe,
    hints_text,
    match_releases,
)
from tsukud.create.static_checks import check_recipe, replay
from tsukud.recipe.release import Release
from tsukud.validation.findings import Finding, format_findings

__all__ = [
    "CONFIDENT",
    "BinaryAnswer",
    "Candidate",
    "ExtractPatternAnswer",
    "Finding",
    "InvalidAnswer",
    "MatchResult",
    "Override",
    "RecipeContext",
    "Release",
    "answer_to_recipe",
    "candidate_to_recipe",
    "check_recipe",
    "filter_release",
    "format_findings",
    "hints_text",
    "match_releases",
    "parse_answer",
    "release_from_api",
    "render_readme",
    "render_releases",
    "replay",
    "usable_releases",
    "validate_answer",
]
