"""Validation builds the tool's tree with the installer's assembler: a file listed
twice is there twice (and runs in the container), a path outside the tool is refused
before anything is written, and a missing binary comes back with the asset's files."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from msgspec.structs import replace

from tests.integration.create import conftest as create
from tsukud.recipe import Binary, Recipe, Verify, parse_recipe
from tsukud.recipe.release import Release
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo, script, tar_gz
from tsukud.validation.validator import ValidationRun, Validator, container_platform

ARCH = container_platform().arch
ASSET = f"t-1.0.0-linux-{ARCH}.tar.gz"
RELEASE = Release(tag="v1.0.0", assets=(ASSET,))


@pytest.fixture(scope="module")
def gh() -> Iterator[FakeGitHub]:
    archive = tar_gz({"t-1.0.0/t": (script("t", "1.0.0"), 0o755), "t-1.0.0/README": (b"", 0o644)})
    with FakeGitHub() as fake:
        fake.add_repo(FakeRepo("o/t", [FakeRelease("v1.0.0", [FakeAsset(ASSET, archive)])]))
        yield fake


# The create tests' real HTTP client, workdir and validator, on this module's ``gh``.
http = create.http
workdir = create.workdir
validator = create.validator


@pytest.fixture
async def run(validator: Validator) -> AsyncIterator[ValidationRun]:
    async with validator.session("test-session") as vrun:
        yield vrun


def recipe(binaries: str) -> Recipe:
    return parse_recipe(
        '[metadata]\nname = "t"\n\n[[steps]]\naction = "github_archive"\nrepo = "o/t"\n'
        'asset_pattern = "t-{version}-linux-{arch}.tar.gz"\nstrip_dirs = 1\n'
        f"binaries = {binaries}\n"
    )


async def test_a_file_listed_twice_is_in_the_tree_twice(run: ValidationRun) -> None:
    prepared = await run.prepare(
        recipe('[{ src = "t", dest = "bin/t" }, { src = "t", dest = "bin/t2" }]'), RELEASE
    )
    assert prepared.failure is None and prepared.root is not None
    assert prepared.binaries == {"t": "bin/t", "t2": "bin/t2"}
    assert (prepared.root / "bin" / "t2").read_bytes() == script("t", "1.0.0")
    verdict = await prepared.verify(Verify(command="t2", pattern="v{version}"))
    assert verdict.passed, verdict
    assert verdict.output == "t v1.0.0" and verdict.assets[0].name == ASSET


async def test_a_path_outside_the_tool_is_refused(run: ValidationRun) -> None:
    # The parser refuses such a recipe; the assembler does not rely on that.
    parsed = recipe('["t"]')
    step = replace(parsed.steps[0], binaries=(Binary("t", "../../escaped"),))
    prepared = await run.prepare(replace(parsed, steps=(step,)), RELEASE)
    failure = prepared.failure
    assert failure is not None and failure.failed
    assert (failure.stage, failure.category) == ("layout", "binary_not_found")
    assert "'../../escaped' must be a relative path inside the tool" in failure.message
    assert [a.name for a in failure.assets] == [ASSET]  # downloaded, then refused
    assert not list(run.dir.parent.glob("**/escaped"))
    assert await prepared.verify(Verify(command="t")) is failure  # nothing runs


async def test_a_missing_binary_comes_back_with_the_assets_files(run: ValidationRun) -> None:
    prepared = await run.prepare(recipe('["bin/t"]'), RELEASE)
    failure = prepared.failure
    assert failure is not None
    assert (failure.stage, failure.category) == ("layout", "binary_not_found")
    assert failure.message == f"bin/t is not a file in {ASSET} (after strip_dirs=1)"
    assert failure.listing == ("README", "t") and failure.executables == ("t",)
