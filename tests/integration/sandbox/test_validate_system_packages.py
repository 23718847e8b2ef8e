"""System package steps in validation: the container has no network, so "for real"
means the Debian image's own package database answers (``dpkg-query`` in the
container) and ``require_command`` is looked up on the container's PATH. A package
the image lacks, or a missing command, makes the run ``skipped`` with the reason,
never a pass; a package the image has (``dpkg``) and a command it has (``grep``) are
proven and the validation goes on to verify the tool."""

from __future__ import annotations

import hashlib

from tests.integration.sandbox import test_validate_url_steps as url_steps
from tsukud.recipe import Verify, parse_recipe
from tsukud.testing.download_host import FakeDownloadHost
from tsukud.validation.validator import ValidationRun

gh = url_steps.gh
host = url_steps.host
http = url_steps.http
workdir = url_steps.workdir
validator = url_steps.validator
run = url_steps.run
RELEASE = url_steps.RELEASE


def _recipe(host: FakeDownloadHost, packages: str, command: str) -> str:
    right = "sha256:" + hashlib.sha256(url_steps.ARCHIVE).hexdigest()
    steps = (
        f'[[steps]]\naction = "apt_install"\npackages = {packages}\n\n'
        '[[steps]]\naction = "apk_install"\npackages = ["not-for-this-family"]\n\n'
        f'[[steps]]\naction = "require_command"\ncommand = "{command}"\n\n'
    )
    return url_steps.recipe(host, right).replace("[[steps]]\n", steps + "[[steps]]\n", 1)


async def test_what_the_image_has_is_proven_and_the_tool_validates(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    prepared = await run.prepare(parse_recipe(_recipe(host, '["dpkg"]', "grep")), RELEASE)
    assert prepared.failure is None, prepared.failure
    verdict = await prepared.verify(Verify(command="t", pattern="v{version}"))
    assert verdict.passed, verdict


async def test_what_the_offline_image_lacks_is_not_proven_never_a_pass(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    recipe = parse_recipe(_recipe(host, '["dpkg", "libtsuku-fixture1"]', "grep"))
    failure = (await run.prepare(recipe, RELEASE)).failure
    assert failure is not None and failure.status == "skipped" and not failure.passed
    assert failure.stage == "system_packages"
    assert "package libtsuku-fixture1 is not installed" in failure.message
    assert "did not pass" in failure.message
    recipe = parse_recipe(_recipe(host, '["dpkg"]', "tsuku-no-such-command"))
    failure = (await run.prepare(recipe, RELEASE)).failure
    assert failure is not None and failure.status == "skipped"
    assert "command tsuku-no-such-command is not on PATH" in failure.message
