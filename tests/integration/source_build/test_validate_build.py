"""Validation (``tsukuctl create``'s, ``validation/validator.py``) builds a ``configure_make``
recipe as the installer does, in the build container, and verifies the output in the
validation image; a build that fails is a verdict at stage ``build`` with its output."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.create.helpers import loopback_http, make_validator
from tests.integration.source_build.conftest import TARBALL, Project, recipe
from tsukud.net.http import Http
from tsukud.recipe import parse_recipe
from tsukud.recipe.release import Release
from tsukud.sandbox.runtime import ContainerRuntime

RELEASE = Release(tag="v1.0.0", assets=(TARBALL,))


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = loopback_http()
    yield h
    await h.aclose()


async def test_validation_builds_in_the_container_and_verifies_the_output(
    project: Project,
    http: Http,
    runtime: ContainerRuntime,
    image: str,
    build_image: str,
    tmp_path: Path,
) -> None:
    validator = make_validator(http, project.gh, runtime, image, tmp_path)
    good = parse_recipe(recipe(project))
    bad = parse_recipe(recipe(project).replace("--greeting=built-in-a-container", "--nope"))
    async with validator.session("s") as run:
        prepared = await run.prepare(good, RELEASE)
        assert prepared.failure is None, prepared.failure
        assert prepared.binaries == {"hello": "bin/hello"}
        verdict = await prepared.verify(good.verify)
        assert verdict.passed, verdict
        failed = (await run.prepare(bad, RELEASE)).failure
        needs = parse_recipe(
            recipe(project).replace(
                'description = "', 'dependencies = ["libgreet"]\ndescription = "'
            )
        )
        skipped = (await run.prepare(needs, RELEASE)).failure
    assert failed is not None and (failed.status, failed.stage) == ("failed", "build")
    assert "configure: unknown option --nope" in (failed.message or "")
    # A build against build dependencies: validation installs nothing, so it says so.
    assert skipped is not None and (skipped.status, skipped.stage) == ("skipped", "build")
    assert "needs libgreet installed first" in (skipped.message or "")
    assert not project.marker.exists() and not project.calls.exists()
