"""The deterministic matcher against tsuku's human-written recipes.

For the 9 ground-truth tools (GROUND_TRUTH_9) and the 18 cases of llm-test-matrix.json,
the releases are synthesised from the human recipe (releases.py) and the matcher's recipe
must install the SAME asset as the human one on linux/darwin x amd64/arm64, at the
newest and at an older release, and be confident doing so. Where the human recipe
encodes a choice the names cannot justify, the test says so and asserts that the
matcher is not confident and offers the human's choice among its candidates.
"""

from __future__ import annotations

import pytest

from tests.unit.create.releases import (
    GROUND_TRUTH_9,
    expected_names,
    load,
    matrix_cases,
    render_names,
    repo_of,
    require_shared,
    synthesize,
)
from tsukud.create.matcher import CONFIDENT, candidate_to_recipe, match_releases
from tsukud.create.static_checks import check_recipe
from tsukud.recipe import STANDARD_PLATFORMS, Recipe
from tsukud.validation.findings import errors

# Recipes whose human choice is not derivable from asset names, and why.
NOT_FROM_NAMES = {
    # The registry installs Liberica's CRaC build (-crac), one of six JDK/JRE variants
    # per platform (plain, -full, -lite, -crac, JRE, musl). Nothing in the names makes
    # CRaC the one to install; the matcher picks the plain JDK and lowers confidence.
    "l/liberica.toml",
}

CASES: dict[str, str] = {f"ground_truth_{p.split('/')[1][:-5]}": p for p in GROUND_TRUTH_9}
CASES.update({test_id: case["recipe"] for test_id, case in matrix_cases().items()})


def _same_assets(mine: Recipe, human: Recipe, releases: list) -> list[tuple]:
    diffs = []
    for release in (releases[0], releases[-1]):
        for target in STANDARD_PLATFORMS:
            want = expected_names(human, release.tag, target)
            got = render_names(mine, release.tag, target, release.assets)
            if want != got:
                diffs.append((release.tag, target.key, want, got))
    return diffs


@pytest.mark.parametrize("case", sorted(CASES))
def test_matcher_reproduces_human_recipe(case: str) -> None:
    require_shared()
    path = CASES[case]
    human = load(path)
    tool, repo = human.metadata.name, repo_of(human)
    releases = synthesize(human, tool)
    result = match_releases(releases, repo=repo, tool=tool)
    best = result.best
    assert best is not None
    mine = candidate_to_recipe(best, repo=repo, name=tool, releases=releases)
    # Whatever it picked, the recipe passes every static check, replay included.
    assert errors(check_recipe(mine, releases, expected=best.expected)) == []
    diffs = _same_assets(mine, human, releases)
    if path in NOT_FROM_NAMES:
        assert diffs, "expected the matcher to differ here; update NOT_FROM_NAMES"
        assert not result.confident
        assert any("look as plausible" in reason for reason in best.reasons)
        # The human's choice is one of the ranked candidates offered to the LLM.
        human_assets = {
            t.key: (expected_names(human, releases[0].tag, t) or [None])[0]
            for t in STANDARD_PLATFORMS
        }
        offered = [{c.platform: c.asset for c in cand.choices} for cand in result.candidates]
        assert any(
            all(offer.get(k) == v for k, v in human_assets.items() if v) for offer in offered
        )
        return
    assert diffs == []
    assert best.confidence >= CONFIDENT, best.reasons


def test_every_matrix_case_is_covered() -> None:
    require_shared()
    matrix = matrix_cases()
    assert len(matrix) == 18
    assert len(GROUND_TRUTH_9) == 9
    assert {case["recipe"] for case in matrix.values()} <= set(CASES.values())


def test_musl_policy_matches_the_human_choice_for_cargo_deny() -> None:
    """cargo-deny's recipe installs musl; the synthetic release also has the gnu twin."""
    require_shared()
    human = load("c/cargo-deny.toml")
    releases = synthesize(human, "cargo-deny")
    assert any("unknown-linux-gnu" in n for n in releases[0].assets)
    result = match_releases(releases, repo=repo_of(human), tool="cargo-deny")
    assert result.best is not None
    linux = {c.platform: c for c in result.best.choices if c.platform.startswith("linux")}
    assert all(c.libc == "musl" for c in linux.values())
    assert any("musl build preferred over gnu" in r for r in result.best.reasons)
    recipe = candidate_to_recipe(result.best, repo=repo_of(human), name="cargo-deny")
    assert recipe.metadata.supported_libc is None  # musl runs everywhere
    assert any(step.note and "musl" in step.note for step in recipe.steps)


def test_gnu_only_build_limits_the_recipe_to_glibc() -> None:
    """ast-grep ships only -unknown-linux-gnu: the recipe says so, as the human one does."""
    require_shared()
    human = load("a/ast-grep.toml")
    releases = synthesize(human, "ast-grep")
    result = match_releases(releases, repo=repo_of(human), tool="ast-grep")
    assert result.best is not None
    recipe = candidate_to_recipe(result.best, repo=repo_of(human), name="ast-grep")
    assert recipe.metadata.supported_libc == human.metadata.supported_libc == ("glibc",)


def test_platforms_without_builds_stay_unsupported() -> None:
    """btop (linux only), gotop (no darwin/amd64): the same platforms are refused."""
    require_shared()
    for path, unsupported in (
        ("b/btop.toml", {"darwin/amd64", "darwin/arm64"}),
        ("g/gotop.toml", {"darwin/amd64"}),
    ):
        human = load(path)
        tool = human.metadata.name
        releases = synthesize(human, tool)
        result = match_releases(releases, repo=repo_of(human), tool=tool)
        assert set(result.unsupported) == unsupported
