"""The issue's named cases through the whole LLM path: a scripted model (the real Claude
SDK against the fake Anthropic server) answers with the ground truth, and the recipe
must install what the human one installs and pass validation in a real container:
aws-nuke's templated binary renamed to ``bin/aws-nuke``, nix-portable verified through
``{install_dir}``, kustomize's ``tag_prefix``, and per-OS binaries and strip_dirs.
"""

from __future__ import annotations

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.create.helpers import (
    Sink,
    create_in_process,
    direct_llm,
    human_repo,
    script_good_conversation,
    tags_for,
)
from tests.unit.create.named_recipes import AWS_NUKE, KUSTOMIZE, NIX_PORTABLE, SPLIT
from tests.unit.create.releases import expected_names, render_names, repo_of
from tsukud.github.client import GitHub
from tsukud.llm.claude import ClaudeProvider
from tsukud.net.http import Http
from tsukud.recipe import STANDARD_PLATFORMS, parse_recipe
from tsukud.validation.validator import Validator

pytestmark = pytest.mark.docker

CASES = {"aws-nuke": AWS_NUKE, "nix-portable": NIX_PORTABLE, "kustomize": KUSTOMIZE, "split": SPLIT}


@pytest.mark.parametrize("case", sorted(CASES))
async def test_ground_truth_answer_installs_and_validates(
    case: str,
    gh: FakeGitHub,
    github: GitHub,
    http: Http,
    validator: Validator,
    anthropic: FakeAnthropic,
    claude: ClaudeProvider,
) -> None:
    human = parse_recipe(CASES[case], f"{case}.toml")
    repo = human_repo(human)
    if repo.full_name.lower() not in gh.repos:
        gh.add_repo(repo)
    script_good_conversation(anthropic, human)
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool=human.metadata.name,
        repo=repo_of(human),
        sink=Sink(),
        validator=validator,
        open_llm=direct_llm(claude, []),
        force_llm=True,
    )
    assert result.validation.status == "passed", result.validation
    assert (result.turns, result.repairs) == (2, 0)
    mine = parse_recipe(result.recipe)
    tags = tags_for(human.metadata.name)
    assert result.tag == tags[0]
    for tag in (tags[0], tags[-1]):
        release = repo.release(tag)
        assert release is not None
        names = tuple(a.name for a in release.assets)
        for target in STANDARD_PLATFORMS:
            assert render_names(mine, tag, target, names) == expected_names(human, tag, target)
    assert mine.verify is not None and human.verify is not None
    assert mine.verify.command == human.verify.command
