"""Fixtures for the sandbox tests: a connected container runtime and the validation image.

When no container runtime answers, tests that need one are skipped locally, but fail
when ``TSUKU_REQUIRE_DOCKER=1`` or ``CI=true`` (CI must exercise the real sandbox).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import NoReturn

import pytest
import trio

from tests.machine_lock import exclusive
from tsukud.errors import SandboxError
from tsukud.sandbox.image import prepare_busybox_image, prepare_debian_image
from tsukud.sandbox.runtime import (
    BUSYBOX_IMAGE,
    DEFAULT_IMAGE,
    ContainerRuntime,
    RuntimeUnavailable,
    open_runtime,
)


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


def _ensure(
    docker_endpoint: str,
    name: str,
    prepare: Callable[[ContainerRuntime, str], Awaitable[bool]],
) -> str:
    async def run() -> None:
        async with open_runtime(docker_endpoint) as rt:
            await prepare(rt, name)

    try:
        # Workers (and other runs) share the engine: one builds a missing image, the
        # others wait and then only check it.
        with exclusive(f"image-{name}"):
            trio.run(run)
    except (SandboxError, FileNotFoundError) as exc:
        unavailable(f"validation image {name} missing and cannot be built: {exc}")
    return name


@pytest.fixture(scope="session")
def image(docker_endpoint: str) -> str:
    """The default validation image (Debian minbase), built with debootstrap when missing
    (``bash scripts/dev setup`` builds it ahead, so CI finds it present)."""
    return _ensure(docker_endpoint, DEFAULT_IMAGE, prepare_debian_image)


@pytest.fixture(scope="session")
def busybox_image(docker_endpoint: str) -> str:
    """The static-only fallback image, imported from the host's busybox-static."""
    return _ensure(docker_endpoint, BUSYBOX_IMAGE, prepare_busybox_image)


@pytest.fixture
async def runtime(docker_endpoint: str) -> AsyncIterator[ContainerRuntime]:
    """An opened :class:`ContainerRuntime` for one test."""
    async with open_runtime(docker_endpoint) as rt:
        yield rt
