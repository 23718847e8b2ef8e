"""What ``create --deterministic-only`` writes from a match, before the container.

The best candidate's recipe, built with the run's context, when the matcher is
confident and the static checks (replay against every listed release included) pass
it; otherwise a refusal. One function for the pipeline and for
``bench/matcher_accuracy.py``, so the benchmark scores the recipe a user gets, and a
refusal counts there as the miss it is for the user.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from tsukud.create.answer import InvalidAnswer, RecipeContext
from tsukud.create.context import RepoContext
from tsukud.create.matcher import MatchResult, recipe_for_candidate
from tsukud.create.static_checks import check_recipe
from tsukud.recipe import Recipe
from tsukud.validation.findings import Finding, errors

DETERMINISTIC = "deterministic"


class Draft(msgspec.Struct, frozen=True, kw_only=True):
    """The best candidate's recipe (``None`` when there is no candidate or its answer
    cannot be written), the static-check errors that refuse it, and whether the
    matcher was confident enough to write it without a model."""

    recipe: Recipe | None
    findings: tuple[Finding, ...] = ()
    confident: bool = False

    @property
    def passes(self) -> bool:
        """The static checks accept it (confident or not)."""
        return self.recipe is not None and not self.findings

    @property
    def written(self) -> Recipe | None:
        """The recipe ``--deterministic-only`` goes on to validate, or ``None``: a refusal."""
        return self.recipe if self.passes and self.confident else None


def recipe_context(
    ctx: RepoContext,
    tool: str,
    match: MatchResult,
    generated_by: str | None = None,
) -> RecipeContext:
    """What a recipe written for ``ctx`` carries besides the answer (the LLM's answers
    are converted with it too, ``generated_by`` left to the caller)."""
    return RecipeContext(
        repo=ctx.repo,
        name=tool,
        description=ctx.description,
        homepage=ctx.homepage,
        generated_by=generated_by,
        versions=tuple(r.version for r in ctx.releases),
        unsupported=match.unsupported,
    )


def draft_recipe(ctx: RepoContext, tool: str, match: MatchResult) -> Draft:
    """The deterministic recipe for ``match`` and what the static checks say of it."""
    best = match.best
    if best is None:
        return Draft(recipe=None)
    recipe: Recipe | None
    try:
        recipe = recipe_for_candidate(best, recipe_context(ctx, tool, match, DETERMINISTIC))
        found: Sequence[Finding] = errors(
            check_recipe(recipe, ctx.releases, expected=best.expected)
        )
    except InvalidAnswer as exc:
        recipe, found = None, exc.findings
    return Draft(recipe=recipe, findings=tuple(found), confident=match.confident)


__all__ = ["DETERMINISTIC", "Draft", "draft_recipe", "recipe_context"]
