"""The answer schema reaches what human recipes say: every fixture recipe whose truth
the schema can express, written as the answer a perfect model gives
(:func:`tsukud.testing.answers.answer_for`) and converted back, installs the same thing
on linux/darwin x amd64/arm64: the same asset, format, strip_dirs and binaries (path in
the archive and command name), read by the independent reader of the recipe format.
The named cases of issue 13 are recipes written here: aws-nuke's templated binary
renamed on install, nix-portable's ``{install_dir}`` verify, kustomize's monorepo tags.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.shared import RECIPES, require
from tests.unit.create.named_recipes import (
    AWS_NUKE,
    CASES,
    CHARM,
    KUSTOMIZE,
    KUSTOMIZE_REFERENCE,
    KUSTOMIZE_TAGS,
    NIX_PORTABLE,
)
from tests.unit.create.releases import expected_names, repo_of, synthesize
from tsukud.create.answer import InvalidAnswer, RecipeContext, answer_to_recipe, parse_answer
from tsukud.create.static_checks import check_recipe
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    Recipe,
    ResolvedVersion,
    parse_recipe,
    recipe_to_dict,
    render_recipe,
)
from tsukud.testing.answers import Inexpressible, answer_for
from tsukud.testing.asset_names import expected_assets
from tsukud.validation.findings import errors

# What the answer cannot say, and why (the test fails if one becomes expressible).
INEXPRESSIBLE = {
    # The whole JDK tree is installed (install_mode = "directory"): a generated recipe
    # installs binaries only.
    "l/liberica.toml": "install_mode directory",
}
VERSIONS = ("1.4.2", "1.2.7")


def _fixture_paths() -> list[str]:
    if not RECIPES.is_dir():
        return []
    return sorted(str(p.relative_to(RECIPES)) for p in RECIPES.glob("*/*.toml"))


def _round_trip(human: Recipe, version: str | None = None) -> Recipe:
    """human → the perfect model's answer (as JSON, the way it arrives) → recipe. The
    run's own view of missing builds is left out: the answer must say it."""
    answer, unsupported = answer_for(human, version)
    assert answer.get("unsupported_platforms", []) == list(unsupported)
    versions = (version,) if version else VERSIONS
    parsed = parse_answer(json.dumps(answer), versions=versions)
    context = RecipeContext(repo=repo_of(human), name=human.metadata.name, versions=versions)
    return answer_to_recipe(parsed, context)


def _installs(recipe: Recipe, version: str) -> dict[str, Any]:
    data = recipe_to_dict(recipe)
    return {t.key: expected_assets(data, version, t.os, t.arch, t.libc) for t in STANDARD_PLATFORMS}


def _assert_same(human: Recipe, mine: Recipe, versions: tuple[str, ...] = VERSIONS) -> None:
    for version in versions:
        want = _installs(human, version)
        assert any(want.values())
        assert _installs(mine, version) == want, version
    assert mine.verify is not None and human.verify is not None
    assert mine.verify.command == human.verify.command


@pytest.mark.parametrize("path", _fixture_paths())
def test_every_expressible_fixture_recipe_round_trips(path: str) -> None:
    human = parse_recipe((RECIPES / path).read_text(), path)
    if path in INEXPRESSIBLE:
        with pytest.raises(Inexpressible, match=INEXPRESSIBLE[path]):
            answer_for(human)
        return
    mine = _round_trip(human)
    _assert_same(human, mine)
    releases = synthesize(human, human.metadata.name)
    assert errors(check_recipe(mine, releases)) == []


def test_the_fixture_recipes_are_there() -> None:
    require(RECIPES)
    assert len(_fixture_paths()) >= 20
    assert set(INEXPRESSIBLE) <= set(_fixture_paths())


@pytest.mark.parametrize("case", sorted(CASES))
def test_named_cases_round_trip(case: str) -> None:
    human = parse_recipe(CASES[case], f"{case}.toml")
    mine = _round_trip(human)
    if case.startswith("kustomize"):
        # The other products' releases carry no kustomize assets; the reference-style
        # recipe would take them for kustomize's (its prefix is ignored), ours does not.
        _assert_same(human, mine, ("5.4.2", "5.3.0"))
        releases = synthesize(parse_recipe(KUSTOMIZE), "kustomize", KUSTOMIZE_TAGS)
    else:
        _assert_same(human, mine)
        releases = synthesize(human, human.metadata.name)
    assert errors(check_recipe(mine, releases)) == []
    for release in releases:
        mine_names = [expected_names(mine, release.tag, t) for t in STANDARD_PLATFORMS]
        if release.tag.startswith(("api/", "kyaml/")):
            assert mine_names == [None] * 4
            continue
        assert mine_names == [expected_names(human, release.tag, t) for t in STANDARD_PLATFORMS]


def test_version_ranged_recipe_answers_for_the_release_asked() -> None:
    """charm renamed its assets at 0.12.5: the answer names the builds of the release it
    is given (the newest, in a create run), and installs what the human recipe installs
    there; without a version both namings apply and no one answer says that."""
    human = parse_recipe(CHARM, "charm.toml")
    with pytest.raises(Inexpressible, match="not exactly one"):
        answer_for(human)
    newest, _ = answer_for(human, "0.12.6")
    assert newest["os_mapping"] == {"linux": "Linux", "darwin": "Darwin"}
    assert "unsupported_platforms" not in newest
    older, unsupported = answer_for(human, "0.12.4")
    assert older["os_mapping"] == {"linux": "linux"}
    assert unsupported == ("darwin/amd64", "darwin/arm64")
    for version in ("0.12.6", "0.12.4"):
        _assert_same(human, _round_trip(human, version), (version,))
    assert _installs(human, "0.12.6")["linux/amd64"] != _installs(human, "0.12.4")["linux/amd64"]


def test_aws_nuke_binary_is_templated_and_renamed() -> None:
    human = parse_recipe(AWS_NUKE, "aws-nuke.toml")
    answer, _ = answer_for(human)
    assert answer["binaries"] == [
        {"src": "aws-nuke-v{version}-{os}-{arch}", "dest": "bin/aws-nuke"}
    ]
    mine = _round_trip(human)
    (step,) = render_recipe(mine, ResolvedVersion("3.29.0", "v3.29.0"), STANDARD_PLATFORMS[3])
    assert step.asset_name == "aws-nuke-v3.29.0-darwin-arm64.tar.gz"
    assert [(b.src, b.dest) for b in step.binaries] == [
        ("aws-nuke-v3.29.0-darwin-arm64", "bin/aws-nuke")
    ]


def test_mapped_spellings_in_binaries_are_written_out_where_they_differ() -> None:
    """In the answer, {arch} in a binary's src is spelled like the asset (x86_64); the
    recipe format expands the standard name (amd64), so the recipe spells it out."""
    answer = {
        "asset_type": "archive",
        "asset_pattern": "tool-{version}-{os}-{arch}.tar.gz",
        "os_mapping": {"linux": "linux", "darwin": "darwin"},
        "arch_mapping": {"amd64": "x86_64", "arm64": "arm64"},
        "binaries": [{"src": "tool-{os}-{arch}/tool", "dest": "bin/tool"}],
        "verify_command": "tool --version",
    }
    recipe = answer_to_recipe(parse_answer(answer), RecipeContext(repo="a/tool", name="tool"))
    srcs = {}
    for target in STANDARD_PLATFORMS:
        (step,) = render_recipe(recipe, ResolvedVersion("1.0.0", "v1.0.0"), target)
        srcs[target.key] = step.binaries[0].src
    assert srcs == {
        "linux/amd64": "tool-linux-x86_64/tool",
        "linux/arm64": "tool-linux-arm64/tool",
        "darwin/amd64": "tool-darwin-x86_64/tool",
        "darwin/arm64": "tool-darwin-arm64/tool",
    }
    # arm64 keeps the template; amd64 gets its own step with the spelling written out.
    assert [(s.when.arch if s.when else None) for s in recipe.steps] == [("amd64",), ("arm64",)]


def test_the_answer_decides_which_platforms_have_no_build() -> None:
    """Names without an OS (nix-portable-x86_64) may leave a run thinking no platform
    has a build; the answer's unsupported_platforms replaces that view."""
    human = parse_recipe(NIX_PORTABLE, "nix-portable.toml")
    answer, _ = answer_for(human)
    everything = tuple(p.key for p in STANDARD_PLATFORMS)
    context = RecipeContext(repo="DavHau/nix-portable", name="nix-portable", unsupported=everything)
    recipe = answer_to_recipe(parse_answer(answer), context)
    assert recipe.metadata.supported_os == ("linux",)
    without = {k: v for k, v in answer.items() if k != "unsupported_platforms"}
    with pytest.raises(InvalidAnswer, match="nothing to install"):
        answer_to_recipe(parse_answer(without), context)


def test_nix_portable_verifies_by_install_dir() -> None:
    human = parse_recipe(NIX_PORTABLE, "nix-portable.toml")
    answer, unsupported = answer_for(human)
    assert answer["verify_command"] == "{install_dir}/bin/nix-portable --version"
    assert set(unsupported) == {"darwin/amd64", "darwin/arm64"}
    mine = _round_trip(human)
    assert mine.metadata.supported_os == ("linux",)


def test_kustomize_tag_prefix_reaches_the_recipe() -> None:
    for text in (KUSTOMIZE, KUSTOMIZE_REFERENCE):
        human = parse_recipe(text, "kustomize.toml")
        answer, _ = answer_for(human)
        assert answer["tag_prefix"] == "kustomize/v"
        mine = _round_trip(human)
        assert mine.version is not None
        assert (mine.version.github_repo, mine.version.tag_prefix) == (
            "kubernetes-sigs/kustomize",
            "kustomize/v",
        )


def test_replay_names_a_tag_prefix_no_release_has() -> None:
    human = parse_recipe(KUSTOMIZE, "kustomize.toml")
    releases = synthesize(human, "kustomize", KUSTOMIZE_TAGS)
    answer, _ = answer_for(human)
    wrong = answer_to_recipe(
        parse_answer({**answer, "tag_prefix": "kustomise/v"}),
        RecipeContext(repo="kubernetes-sigs/kustomize", name="kustomize"),
    )
    (finding,) = errors(check_recipe(wrong, releases))
    assert "no release tag starts with tag_prefix 'kustomise/v'" in finding.message


BASE: dict[str, Any] = {
    "asset_type": "archive",
    "asset_pattern": "tool-v{version}-{os}-{arch}.tar.gz",
    "os_mapping": {"linux": "linux", "darwin": "darwin"},
    "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
    "binaries": ["tool"],
    "verify_command": "tool --version",
}


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"binaries": ["tool-{os}-{arch}"]}, "placeholders in its file name"),
        ({"binaries": [{"src": "tool", "dest": "bin/{version}/tool"}]}, "plain relative path"),
        ({"binaries": [{"src": "tool", "dest": "../tool"}]}, "must not contain '..'"),
        ({"binaries": [{"src": "tool-{platform}"}]}, "not a plain relative path"),
        ({"binaries": [{"dest": "bin/tool"}]}, "does not match the schema"),
        ({"tag_prefix": "kustomize v"}, "literal start of the tool's tags"),
        ({"unsupported_platforms": ["windows/amd64"]}, "is not one of linux/amd64"),
        ({"tag_prefix": "tool-1.2.0-"}, "literal version"),
        ({"verify_command": "{install_dir}/bin/other --version"}, "not an installed path"),
        ({"verify_command": "tool --version {os}"}, "only {version} and {install_dir}"),
        ({"overrides": [{"os": "darwin", "strip_dirs": 7}]}, "strip_dirs must be between"),
        ({"overrides": [{"os": "darwin", "arch_mapping": {"x64": "x"}}]}, "standard names"),
        ({"overrides": [{"os": "darwin", "binaries": []}]}, "binaries is empty"),
        (
            {"overrides": [{"os": "darwin", "binaries": [{"src": "t", "dest": "bin/t"}]}]},
            "not among the installed binaries",
        ),
    ],
)
def test_new_fields_give_feedback(change: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidAnswer) as caught:
        parse_answer({**BASE, **change}, versions=("1.2.0",))
    assert needle in caught.value.message


def test_overrides_carry_binaries_strip_dirs_and_mappings() -> None:
    answer = parse_answer(
        {
            **BASE,
            "strip_dirs": 1,
            "overrides": [
                {
                    "os": "darwin",
                    "asset_pattern": "tool-v{version}-macos-{arch}.zip",
                    "strip_dirs": 0,
                    "binaries": ["bin/tool"],
                    "arch_mapping": {"amd64": "x64"},
                }
            ],
        }
    )
    recipe = answer_to_recipe(answer, RecipeContext(repo="a/tool", name="tool"))
    got = {}
    for target in STANDARD_PLATFORMS:
        (step,) = render_recipe(recipe, ResolvedVersion("1.0.0", "v1.0.0"), target)
        got[target.key] = (step.asset_name, step.strip_dirs, step.binaries[0].src)
    assert got == {
        "linux/amd64": ("tool-v1.0.0-linux-amd64.tar.gz", 1, "tool"),
        "linux/arm64": ("tool-v1.0.0-linux-arm64.tar.gz", 1, "tool"),
        "darwin/amd64": ("tool-v1.0.0-macos-x64.zip", 0, "bin/tool"),
        "darwin/arm64": ("tool-v1.0.0-macos-arm64.zip", 0, "bin/tool"),
    }
