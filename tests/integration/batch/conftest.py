"""Fixtures for the batch tests: the fake GitHub world (recorded and synthesised
releases, plus repositories broken on purpose), fake npm and PyPI registries with real
packages, a fake Homebrew, and a real tsukud pointed at all of them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import RETIRING, Tsuku, base_env, short_home
from tests.fakes.ecosystems import FakeEcosystems
from tests.fakes.github import FakeGitHub, fixture_world
from tsukud.testing.homebrew import FakeHomebrew
from tsukud.testing.packages import npm_tarball, wheel
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

TOKEN = "ghp_batchTestToken0123456789abcdefABCDEF"

#: Sources from the fake GitHub world that the deterministic matcher can write.
GITHUB_TOOLS = (
    "stern stern/stern",
    "k9s derailed/k9s",
    "age filosottile/age",
    "gitleaks gitleaks/gitleaks",
    "buf bufbuild/buf",
    "cosign sigstore/cosign",
    "kind kubernetes-sigs/kind",
    "tflint terraform-linters/tflint",
    "jid simeji/jid",
    "gotty yudai/gotty",
    "k3d k3d-io/k3d",
    "gobuster oj/gobuster",
    "trivy aquasecurity/trivy",
)


@pytest.fixture(scope="module")
def gh() -> Iterator[FakeGitHub]:
    with fixture_world() as fake:
        # Broken on purpose: releases with only a source archive (no build for any
        # platform) and an http:// homepage; a repository with no release at all.
        fake.add_repo(
            FakeRepo(
                "acme/docs-only",
                [FakeRelease("v1.0.0", [FakeAsset("docs-only-1.0.0-src.tar.gz", b"src")])],
                homepage="http://acme.example/install",
            )
        )
        fake.add_repo(FakeRepo("acme/unreleased", []))
        yield fake


@pytest.fixture
def world(gh: FakeGitHub) -> Iterator[FakeGitHub]:
    """The module's fake with a fresh rate-limit window for each test (the anonymous
    quota is per identity, and one batch spends a good part of it)."""
    gh.clear_overrides()
    gh.rate_limit_remaining = None
    yield gh
    gh.clear_overrides()
    gh.rate_limit_remaining = None


@pytest.fixture(scope="module")
def eco() -> Iterator[FakeEcosystems]:
    with FakeEcosystems() as fake:
        fake.publish_npm(npm_tarball("greet", "1.2.0", {"greet": "greet 1.2.0"}))
        fake.publish_npm(npm_tarball("@fake/shout", "0.3.0", {"shout": "shout 0.3.0"}))
        fake.publish_wheel(wheel("hello", "1.0", {"hello": "hello 1.0"}))
        yield fake


@pytest.fixture(scope="module")
def brew() -> Iterator[FakeHomebrew]:
    with FakeHomebrew() as fake:
        yield fake


def sources_text() -> str:
    """About twenty sources, some broken on purpose, with a comment and a bad line."""
    lines = ["# the batch tests' queue"]
    lines += [f"{tool} github:{repo}" for tool, repo in (s.split() for s in GITHUB_TOOLS)]
    lines += [
        "greet npm:greet",
        '{"tool": "shout", "source": "npm:@fake/shout", "priority": 10}',
        "hello pypi:hello",
        "nosuch github:nobody/nothing",  # unknown repository
        "docs-only github:acme/docs-only",  # no binaries; http:// homepage
        "unreleased github:acme/unreleased",  # no release
        "ghost npm:ghost-package",  # not on the registry
        "nobrew homebrew:no-such-formula",  # not in the formulae API
        "site http://acme.example/tool",  # refused at add: not a source
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture
def home(world: FakeGitHub, eco: FakeEcosystems, brew: FakeHomebrew) -> Iterator[Tsuku]:
    path = short_home()
    # A maintainer's batch runs with a token: GitHub's anonymous 60 an hour is a few jobs.
    world.add_token(TOKEN)
    env = {**base_env(path), **world.env(), **eco.env(), **brew.env(), "GITHUB_TOKEN": TOKEN}
    t = Tsuku(path, env)
    try:
        yield t
    finally:
        RETIRING.retire(t)


def ctl_json(t: Tsuku, *args: str, rc: int = 0, **kw: Any) -> dict[str, Any]:
    cp = t.ctl(*args, "--json", **kw)
    assert cp.returncode == rc, cp.stderr
    return json.loads(cp.stdout)  # type: ignore[no-any-return]


def events(t: Tsuku, *types: str) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    with t.client() as c:
        c.call(
            "events.list",
            {"filter": {"types": list(types)}, "limit": 0},
            on_progress=lambda p: out.extend(p["events"]),
        )
    return out
