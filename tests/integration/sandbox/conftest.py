"""Fixtures for the sandbox tests: a connected container runtime and the validation image.

When no container runtime answers, tests that need one are skipped locally, but fail
when ``TSUKU_REQUIRE_DOCKER=1`` or ``CI=true`` (CI must exercise the real sandbox).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import NoReturn

import pytest
import trio

from tsukud.sandbox.image import prepare_busybox_image
from tsukud.sandbox.runtime import DEFAULT_IMAGE, ContainerRuntime, RuntimeUnavailable, open_runtime


def docker_required() -> bool:
    return os.environ.get("TSUKU_REQUIRE_DOCKER") == "1" or os.environ.get("CI") == "true"


def unavailable(reason: str) -> NoReturn:
    if docker_required():
        pytest.fail(f"container runtime required (CI / TSUKU_REQUIRE_DOCKER=1): {reason}")
    pytest.skip(f"no container runtime: {reason}")


@pytest.fixture(scope="session")
def docker_endpoint() -> str:
    """The endpoint of a container runtime that answers (probed once per session).

    A sync fixture running its own trio.run, so a skip or failure carries its reason.
    """

    async def probe() -> str:
        async with open_runtime() as rt:
            return rt.endpoint

    try:
        return trio.run(probe)
    except RuntimeUnavailable as exc:
        unavailable(f"{exc} ({exc.hint})")


@pytest.fixture(scope="session")
def image(docker_endpoint: str) -> str:
    """The validation image, imported from the host's busybox-static when missing."""

    async def prepare() -> None:
        async with open_runtime(docker_endpoint) as rt:
            await prepare_busybox_image(rt, DEFAULT_IMAGE)

    try:
        trio.run(prepare)
    except FileNotFoundError as exc:
        unavailable(f"validation image {DEFAULT_IMAGE} missing and cannot be built: {exc}")
    return DEFAULT_IMAGE


@pytest.fixture
async def runtime(docker_endpoint: str) -> AsyncIterator[ContainerRuntime]:
    """An opened :class:`ContainerRuntime` for one test."""
    async with open_runtime(docker_endpoint) as rt:
        yield rt
