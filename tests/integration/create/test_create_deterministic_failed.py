"""--deterministic-only when the matcher cannot produce a recipe that passes the checks:
a typed DeterministicFailed naming what failed, with the hint to let a model decide."""

from __future__ import annotations

import pytest

from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz
from tests.integration.create.helpers import Sink, create_in_process
from tsukud.create.errors import DeterministicFailed
from tsukud.errors import ExitCode
from tsukud.github.client import GitHub
from tsukud.net.http import Http


def _release(tag: str, names: list[str]) -> FakeRelease:
    archive = tar_gz({"tool": (b"#!/bin/sh\necho tool\n", 0o755)})
    return FakeRelease(tag, [FakeAsset(n, archive) for n in names])


def renamed_every_release() -> FakeRepo:
    """The project changed its naming scheme at every release: no one pattern replays."""
    return FakeRepo(
        "acme/shifty",
        [
            _release(
                "v1.2.0",
                [
                    f"tool_1.2.0_{o}_{a}.tar.gz"
                    for o in ("linux", "darwin")
                    for a in ("amd64", "arm64")
                ],
            ),
            _release(
                "v1.1.0",
                [
                    f"tool-{o}-{a}-v1.1.0.tar.gz"
                    for o in ("Linux", "macOS")
                    for a in ("x86_64", "aarch64")
                ],
            ),
            _release(
                "v1.0.0",
                [f"shifty.{a}.{o}.1.0.0.tar.gz" for o in ("lnx", "osx") for a in ("x64", "arm")],
            ),
        ],
    )


async def test_deterministic_only_without_a_passing_recipe_fails_typed(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    gh.add_repo(renamed_every_release())
    sink = Sink()
    with pytest.raises(DeterministicFailed) as info:
        await create_in_process(
            http=http,
            github=github,
            github_url=gh.web_url,
            tool="tool",
            repo="acme/shifty",
            sink=sink,
            deterministic_only=True,
        )
    err = info.value
    assert err.message.startswith(
        "the deterministic matcher found no recipe that passes the checks: - [replay] "
    )
    # It names the release the newest pattern does not fit, and the nearest real asset.
    assert "not among the assets of v1.1.0" in err.message
    assert "closest: 'tool-Linux-x86_64-v1.1.0.tar.gz'" in err.message
    assert err.code == "deterministic_failed" and err.exit_code == ExitCode.DETERMINISTIC_FAILED
    assert "Remove --deterministic-only" in err.hint
    (failed,) = sink.of("generation.failed")
    assert failed["error_code"] == "deterministic_failed"
