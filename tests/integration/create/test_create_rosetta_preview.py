"""darwin/arm64 without an arm64 build: the darwin/amd64 build is offered under
Rosetta 2, and a person reading the create preview (not only the saved TOML) is told
so, on the darwin/arm64 line and no other."""

from __future__ import annotations

import msgspec

from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz
from tests.integration.create.helpers import Sink, create_in_process
from tsukuctl.recipe_preview import preview
from tsukud.github.client import GitHub
from tsukud.net.http import Http

BUILDS = [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64")]  # no darwin/arm64


def _repo() -> FakeRepo:
    releases = []
    for version in ("0.9.2", "0.9.1", "0.9.0"):
        assets = [
            FakeAsset(
                f"orbit_{version}_{os}_{arch}.tar.gz",
                tar_gz({"orbit": (f"#!/bin/sh\necho orbit {version}\n".encode(), 0o755)}),
            )
            for os, arch in BUILDS
        ]
        releases.append(FakeRelease(f"v{version}", assets))
    return FakeRepo("acme/orbit", releases)


async def test_the_preview_says_darwin_arm64_runs_the_amd64_build_under_rosetta(
    http: Http,
) -> None:
    with FakeGitHub() as gh:
        gh.add_repo(_repo())
        result = await create_in_process(
            http=http,
            github=GitHub(http, gh.api_url),
            github_url=gh.web_url,
            tool="orbit",
            repo="acme/orbit",
            sink=Sink(),
            deterministic_only=True,
            skip_validation=True,
        )
    assert "Rosetta 2" in result.recipe  # the written recipe says so
    text = preview(msgspec.to_builtins(result), "github:acme/orbit")
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("darwin/arm64"))
    assert lines[at].split() == ["darwin/arm64", "orbit_0.9.2_darwin_amd64.tar.gz"]
    assert "Rosetta 2" in lines[at + 1] and lines[at + 1].strip().startswith("(")
    # Only the platform that falls back carries the remark.
    assert sum("Rosetta" in line for line in lines) == 1
