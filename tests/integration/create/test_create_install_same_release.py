"""The release installed is the release validated (issue 33, item 7), through the real
daemon and client, the fake GitHub and real Docker.

The attack: a repository whose newest release is tagged ``v2.0.0-beta.1`` but not
flagged as a pre-release on GitHub, and whose previous one is ``v1.9.0``. ``create``
validates and pins 1.9.0 (a ``-beta`` tag is a pre-release); ``install`` used GitHub's
``releases/latest`` (the flag alone), so it installed 2.0.0-beta.1, never validated nor
pinned, and ran it on the host to verify it. Here the beta's binary leaves a mark on the
host when it runs: the mark must never appear.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Tsuku, base_env, short_home
from tsukud.errors import ExitCode
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo, script, tar_gz

pytestmark = pytest.mark.docker

REPO = "acme/foo"
PLATFORMS = [("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")]


def release(version: str, body: bytes, *, prerelease: bool = False) -> FakeRelease:
    return FakeRelease(
        f"v{version}",
        [
            FakeAsset(f"foo_{version}_{o}_{a}.tar.gz", tar_gz({"foo": (body, 0o755)}))
            for o, a in PLATFORMS
        ],
        prerelease=prerelease,
    )


def marking(version: str, mark: Path) -> bytes:
    """A ``foo`` that leaves ``mark`` behind wherever it runs."""
    return f'#!/bin/sh\necho ran > "{mark}"\necho "foo v{version}"\n'.encode()


@pytest.fixture
def world(tmp_path: Path) -> Iterator[tuple[FakeGitHub, Path]]:
    mark = tmp_path / "beta-ran-here"
    with FakeGitHub() as fake:
        fake.add_repo(
            FakeRepo(
                REPO,
                [
                    # Newest, a beta by its tag, but GitHub's prerelease flag is off.
                    release("2.0.0-beta.1", marking("2.0.0-beta.1", mark)),
                    release("1.9.0", script("foo", "1.9.0")),
                ],
                description="foo does things",
            )
        )
        yield fake, mark


@pytest.fixture
def home(world: tuple[FakeGitHub, Path], docker_endpoint: str) -> Iterator[Tsuku]:
    """A fresh home with its daemon started, reading the fake GitHub."""
    path = short_home()
    t = Tsuku(path, {**base_env(path), **world[0].env()})
    try:
        t.start()
        yield t
    finally:
        t.stop_all()
        shutil.rmtree(path, ignore_errors=True)


def create(home: Tsuku) -> subprocess.CompletedProcess[str]:
    """``create foo`` from the repository, by the matcher alone, with ``--yes``."""
    return home.ctl("create", "foo", "--from", f"github:{REPO}", "--deterministic-only", "--yes")


def pinned(home: Tsuku) -> dict[str, Any]:
    """The written recipe's metadata: the version validated and its assets' sha256."""
    recipe = tomllib.loads((home.home / "recipes" / "foo.toml").read_text())
    meta: dict[str, Any] = recipe["metadata"]
    return meta


def test_install_installs_the_release_create_validated(
    home: Tsuku, world: tuple[FakeGitHub, Path]
) -> None:
    fake, mark = world
    cp = create(home)
    assert cp.returncode == 0, cp.stderr
    meta = pinned(home)
    assert meta["validated_version"] == "1.9.0"
    assert all("1.9.0" in name for name in meta["asset_sha256"])

    # One rule: install resolves the same release create validated, not the beta.
    cp = home.ctl("install", "foo", "--json")
    assert cp.returncode == 0, cp.stderr
    done = json.loads(cp.stdout)
    assert done["version"] == meta["validated_version"] == "1.9.0"
    assert "recipe" in done["assets"][0]["checked_against"]  # the pinned sha256
    assert not mark.exists()
    assert fake.requests_to("/foo_1.9.0_linux_")  # downloads are seen by name...
    assert not fake.requests_to("/foo_2.0.0-beta.1_")  # ...and the beta's never was

    # Asked for by name, the beta is refused before anything is fetched or run.
    cp = home.ctl("install", "foo@2.0.0-beta.1")
    assert cp.returncode == ExitCode.FORBIDDEN, cp.stderr
    assert "foo 2.0.0-beta.1 was never validated" in cp.stderr
    assert "pinned at 1.9.0" in cp.stderr
    assert f"tsukuctl create foo --from github:{REPO} --version 2.0.0-beta.1 --force" in cp.stderr
    assert not mark.exists()
    assert not fake.requests_to("/foo_2.0.0-beta.1_")
    listed = json.loads(home.ctl("list", "--json", check=True).stdout)
    assert [(t["tool"], t["version"]) for t in listed["tools"]] == [("foo", "1.9.0")]

    # outdated and upgrade use the same rule: the tool just created is current.
    rows = json.loads(home.ctl("outdated", "--json", check=True).stdout)["tools"]
    assert [(r["tool"], r["newest"], r["outdated"]) for r in rows] == [("foo", "1.9.0", False)]


@pytest.mark.slow  # two daemons, two container validations; its siblings here stay
def test_a_newer_stable_release_needs_validation_before_upgrade(
    home: Tsuku, world: tuple[FakeGitHub, Path]
) -> None:
    fake, mark = world
    assert create(home).returncode == 0
    home.ctl("install", "foo", check=True)
    # The publisher ships 2.0.0 (stable, flagged or not, it was never validated).
    fake.repos[REPO].releases.insert(0, release("2.0.0", marking("2.0.0", mark)))
    home.stop_all()  # a fresh daemon: no cached resolution
    home.start()

    cp = home.ctl("outdated")
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.splitlines()[1].split() == ["foo", "1.9.0", "2.0.0", "validate", "first"]
    assert "foo: 2.0.0 was never validated (its recipe is pinned at 1.9.0)" in cp.stdout
    assert "--version 2.0.0 --force" in cp.stdout

    cp = home.ctl("upgrade", "foo")
    assert cp.returncode == ExitCode.FORBIDDEN  # the one tool's failure: as install's below
    assert "foo was not upgraded: 2.0.0 was never validated" in cp.stderr
    assert "hint: Install the validated version (`tsukuctl install foo@1.9.0`)" in cp.stderr
    cp = home.ctl("install", "foo@2.0.0")
    assert cp.returncode == ExitCode.FORBIDDEN and "foo 2.0.0 was never validated" in cp.stderr
    assert not mark.exists()
    assert not fake.requests_to("/foo_2.0.0_")


def test_one_install_command_creates_and_installs_the_same_release(
    home: Tsuku, world: tuple[FakeGitHub, Path]
) -> None:
    fake, mark = world
    cp = home.ctl("install", "foo", "--from", f"github:{REPO}", "--yes", "--json")
    assert cp.returncode == 0, cp.stderr
    done = json.loads(cp.stdout)
    meta = pinned(home)
    assert done["version"] == meta["validated_version"] == "1.9.0"
    assert done["created"]
    assert not mark.exists()
    assert not fake.requests_to("/foo_2.0.0-beta.1_")


def test_a_pre_release_asked_for_is_validated_at_that_release(home: Tsuku) -> None:
    """``install foo@2.0.0-beta.1`` with no recipe: the recipe is created and validated
    at the release asked for, so the beta installs as the person asked."""
    cp = home.ctl("install", "foo@2.0.0-beta.1", "--from", f"github:{REPO}", "--yes", "--json")
    assert cp.returncode == 0, cp.stderr
    meta = pinned(home)
    assert json.loads(cp.stdout)["version"] == meta["validated_version"]
    assert meta["validated_version"] == "2.0.0-beta.1"
