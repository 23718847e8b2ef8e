"""A generated recipe installs only what it validated (``install/pins.py``): its
``validated_version`` and the files its ``asset_sha256`` pins; a recipe people wrote
keeps tsuku's usual trust."""

from __future__ import annotations

import re

import pytest

from tsukud.errors import ExitCode
from tsukud.install.errors import VersionNotValidated
from tsukud.install.pins import is_validated, require_pinned_asset, require_validated
from tsukud.recipe import Recipe, parse_recipe

ASSET = "foo_1.9.0_linux_amd64.tar.gz"


def recipe(pins: str = "") -> Recipe:
    return parse_recipe(
        f'[metadata]\nname = "foo"\n{pins}\n[[steps]]\naction = "github_archive"\n'
        'repo = "acme/foo"\nasset_pattern = "foo_{version}_{os}_{arch}.tar.gz"\n'
        'binaries = ["foo"]\n'
    )


GENERATED = recipe(
    f'validated_version = "1.9.0"\nvalidation_platform = "linux/amd64"\n\n'
    f'[metadata.asset_sha256]\n"{ASSET}" = "{"ab" * 32}"\n'
)
HUMAN = recipe()


@pytest.mark.parametrize(
    ("r", "version", "ok"),
    [
        (HUMAN, "2.0.0-beta.1", True),  # the registry's trust model: any release
        (GENERATED, "1.9.0", True),
        (GENERATED, "v1.9.0", True),
        (GENERATED, "2.0.0-beta.1", False),
        (GENERATED, "2.0.0", False),
        (GENERATED, "1.8.0", False),
    ],
)
def test_is_validated(r: Recipe, version: str, ok: bool) -> None:
    assert is_validated(r, version) is ok


def test_another_version_is_refused_with_the_command_that_validates_it() -> None:
    with pytest.raises(VersionNotValidated) as info:
        require_validated(GENERATED, "2.0.0-beta.1")
    exc = info.value
    assert exc.code == "version_not_validated" and exc.exit_code == ExitCode.FORBIDDEN
    assert exc.message.startswith("foo 2.0.0-beta.1 was never validated")
    assert "pinned at 1.9.0" in exc.message
    assert "`tsukuctl install foo@1.9.0`" in exc.hint
    assert "`tsukuctl create foo --from github:acme/foo --version 2.0.0-beta.1 --force`" in exc.hint
    assert exc.data == {"tool": "foo", "version": "2.0.0-beta.1", "validated_version": "1.9.0"}
    require_validated(HUMAN, "2.0.0-beta.1")  # no refusal


def test_only_pinned_files_install() -> None:
    assert require_pinned_asset(GENERATED, "1.9.0", ASSET) == "ab" * 32
    assert require_pinned_asset(HUMAN, "1.9.0", ASSET) is None
    with pytest.raises(
        VersionNotValidated, match=re.escape("foo_1.9.0_darwin_arm64.tar.gz was never")
    ):
        require_pinned_asset(GENERATED, "1.9.0", "foo_1.9.0_darwin_arm64.tar.gz")
    with pytest.raises(VersionNotValidated, match=re.escape("foo 2.0.0 was never validated")):
        require_pinned_asset(GENERATED, "2.0.0", "foo_2.0.0_linux_amd64.tar.gz")


@pytest.mark.parametrize(
    ("steps", "source"),
    [
        ('action = "npm_install"\npackage = "@acme/foo"\nexecutables = ["foo"]', "npm:@acme/foo"),
        ('action = "cargo_install"\ncrate = "foo"\nexecutables = ["foo"]', "crates:foo"),
        ('action = "homebrew"\nformula = "foo"', "homebrew:foo"),
        (
            'action = "github_file"\nrepo = "acme/foo"\nasset_pattern = "foo"\nbinary = "foo"',
            "github:acme/foo",
        ),
    ],
)
def test_the_hint_names_the_source_to_validate_from(steps: str, source: str) -> None:
    r = parse_recipe(
        f'[metadata]\nname = "foo"\nvalidated_version = "1.0.0"\n\n[[steps]]\n{steps}\n'
    )
    with pytest.raises(VersionNotValidated) as info:
        require_validated(r, "2.0.0")
    assert f"`tsukuctl create foo --from {source} --version 2.0.0 --force`" in info.value.hint
