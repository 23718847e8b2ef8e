"""Fixtures for the create tests: a fake GitHub holding every ground-truth tool (with
real archives and decoys), real HTTP and GitHub clients on loopback, the fake Anthropic
server with the real SDK, and a validator on the real container runtime."""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.github import FakeGitHub
from tests.integration.create.helpers import (
    CLAUDE_KEY,
    ground_truth_cases,
    human_repo,
    load_human,
    loopback_http,
    make_validator,
)
from tests.integration.sandbox import conftest as sandbox
from tests.unit.create.releases import require_shared
from tsukud.github.client import GitHub
from tsukud.llm.claude import ClaudeProvider
from tsukud.net.http import Http
from tsukud.sandbox.runtime import ContainerRuntime, open_runtime
from tsukud.validation.validator import Validator

# The sandbox tests' fixtures: a runtime that answers (skipped locally without one,
# failing in CI) and the busybox validation image.
docker_endpoint = sandbox.docker_endpoint
image = sandbox.image


@pytest.fixture(scope="module")
def world() -> Iterator[FakeGitHub]:
    require_shared()
    with FakeGitHub() as fake:
        for path in sorted(set(ground_truth_cases().values())):
            fake.add_repo(human_repo(load_human(path)))
        yield fake


@pytest.fixture
def gh(world: FakeGitHub) -> Iterator[FakeGitHub]:
    world.clear_overrides()
    world.rate_limit_remaining = None
    yield world
    world.clear_overrides()
    world.rate_limit_remaining = None


@pytest.fixture
async def http() -> AsyncIterator[Http]:
    h = loopback_http()
    yield h
    await h.aclose()


@pytest.fixture
def github(http: Http, gh: FakeGitHub) -> GitHub:
    return GitHub(http, gh.api_url)


@pytest.fixture
def anthropic() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
async def claude(anthropic: FakeAnthropic) -> AsyncIterator[ClaudeProvider]:
    provider = ClaudeProvider(CLAUDE_KEY, base_url=anthropic.url, timeout=10.0)
    yield provider
    await provider.aclose()


@pytest.fixture
async def runtime(docker_endpoint: str, image: str) -> AsyncIterator[ContainerRuntime]:
    async with open_runtime(docker_endpoint) as rt:
        yield rt


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="tk-create-") as d:
        yield Path(d)


@pytest.fixture
def validator(
    http: Http,
    gh: FakeGitHub,
    runtime: ContainerRuntime,
    image: str,
    workdir: Path,
) -> Validator:
    return make_validator(http, gh, runtime, image, workdir)
