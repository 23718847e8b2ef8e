"""Fixtures for the eval tests: the fake GitHub holding every repository of the builtin
corpus (releases built from the human recipes, real archives and decoys), the answering
fake model (tests/fakes/answering_model.py) and a daemon pointed at both."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.fakes.answering_model import AnsweringAnthropic, chosen
from tests.fakes.github import FakeGitHub
from tests.integration.create.helpers import CLAUDE_KEY, good_answer, human_repo, load_human
from tests.integration.eval.corpus_source import recipe_paths
from tests.unit.create.releases import repo_of, require_shared

WRONG_FIRST_RATE = 0.3
# An eval reads every repository of the corpus per run: more than GitHub's anonymous
# hour allows, as it would be for a person running it, so it runs with a token.
GITHUB_TOKEN = "ghp_evalcorpus0123456789abcdefABCDEF0123"


@pytest.fixture(scope="module")
def world() -> Iterator[FakeGitHub]:
    require_shared()
    with FakeGitHub(tokens={GITHUB_TOKEN}) as fake:
        for path in recipe_paths():
            fake.add_repo(human_repo(load_human(path)))
        yield fake


@pytest.fixture(scope="module")
def answers() -> dict[str, dict[str, object]]:
    """Each corpus repository's right ``extract_pattern`` answer."""
    return {repo_of(h): good_answer(h) for h in map(load_human, recipe_paths())}


@pytest.fixture
def model(answers: dict[str, dict[str, object]]) -> Iterator[AnsweringAnthropic]:
    """Wrong on the first attempt for a known 30 % of the corpus, right after a repair."""
    with AnsweringAnthropic(answers, chosen(answers, WRONG_FIRST_RATE)) as fake:
        yield fake


@pytest.fixture
def home(world: FakeGitHub, model: AnsweringAnthropic) -> Iterator[Tsuku]:
    world.reset_quota()
    path = short_home()
    t = Tsuku(
        path,
        {
            **base_env(path),
            **world.env(),
            "GITHUB_TOKEN": GITHUB_TOKEN,
            "ANTHROPIC_API_KEY": CLAUDE_KEY,
            "ANTHROPIC_BASE_URL": model.url,
            # An eval is many generations in a row: more than the default hour allows.
            "TSUKU_LLM_HOURLY_LIMIT": "1000",
        },
    )
    try:
        yield t
    finally:
        RETIRING.retire(t)
