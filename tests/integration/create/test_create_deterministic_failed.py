"""--deterministic-only: a naming that changed at every release still gets a recipe
(version-ranged steps); a recipe the matcher doubts is never written, but refused with a
typed error listing the candidates and the hint to let a model decide."""

from __future__ import annotations

import pytest

from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz
from tests.integration.create.helpers import Sink, create_in_process, rendered_names
from tsukud.create.errors import DeterministicUncertain
from tsukud.errors import ExitCode
from tsukud.github.client import GitHub
from tsukud.net.http import Http
from tsukud.recipe import parse_recipe


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


async def test_naming_changed_at_every_release_gets_version_ranged_steps(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    gh.add_repo(renamed_every_release())
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="tool",
        repo="acme/shifty",
        sink=Sink(),
        deterministic_only=True,
        skip_validation=True,  # the matcher's steps are the subject; no container here
    )
    recipe = parse_recipe(result.recipe, "tool.toml")
    # The newest naming unranged (all tsuku reads), each older one an override.
    ranges = [s.when.version if s.when is not None else None for s in recipe.steps]
    assert ranges[0] is None and ">=1.1.0, <1.2.0" in ranges and "<1.1.0" in ranges
    assert "[[version_overrides]]" in result.recipe and "when = { version" not in result.recipe
    for tag, want in [
        ("v1.2.0", "tool_1.2.0_linux_amd64.tar.gz"),
        ("v1.1.0", "tool-Linux-x86_64-v1.1.0.tar.gz"),
        ("v1.0.0", "shifty.x64.lnx.1.0.0.tar.gz"),
    ]:
        assert dict(rendered_names(recipe, tag))["linux/amd64"] == [want]


def rival_builds() -> FakeRepo:
    """Four builds per platform that differ only in a suffix the matcher cannot judge."""
    return FakeRepo(
        "acme/rivals",
        [
            _release(
                f"v{v}",
                [
                    f"tool{variant}_{v}_{o}_{a}.tar.gz"
                    for variant in ("", "-lite", "-full", "-extra")
                    for o in ("linux", "darwin")
                    for a in ("amd64", "arm64")
                ],
            )
            for v in ("1.2.0", "1.1.0", "1.0.0")
        ],
    )


async def test_deterministic_only_never_writes_a_doubtful_recipe(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    gh.add_repo(rival_builds())
    sink = Sink()
    with pytest.raises(DeterministicUncertain) as info:
        await create_in_process(
            http=http,
            github=github,
            github_url=gh.web_url,
            tool="tool",
            repo="acme/rivals",
            sink=sink,
            deterministic_only=True,
        )
    err = info.value
    assert err.message.startswith("the deterministic matcher is not confident (0.")
    assert "candidate 1 (" in err.message and "tool_1.2.0_linux_amd64.tar.gz" in err.message
    candidates = err.data["candidates"]
    assert len(candidates) >= 2
    assert candidates[0]["assets"]["linux/amd64"] == "tool_1.2.0_linux_amd64.tar.gz"
    assert any("look as plausible" in r for r in candidates[0]["reasons"])
    assert err.code == "deterministic_low_confidence"
    assert err.exit_code == ExitCode.DETERMINISTIC_FAILED
    assert "Remove --deterministic-only" in err.hint
    (failed,) = sink.of("generation.failed")
    assert failed["error_code"] == "deterministic_low_confidence"
