"""URL recipes in validation. A recipe whose ``checksum`` does not match the file the
URL serves fails at the download with the checksum finding (``checksum_mismatch``),
before anything is unpacked or run; the right checksum, written ``sha256:<hex>`` as
registry recipes do, validates in the container. A ``run_command`` runs there (and
only there without a person's yes): in the container, on the unpacked asset."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import pytest

from tests.integration.create import conftest as create
from tests.integration.sandbox import test_validate_tree as validate_tree
from tsukud.create.repair import validation_feedback
from tsukud.recipe import Verify, parse_recipe
from tsukud.recipe.release import Release
from tsukud.testing.download_host import FakeDownloadHost
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import script, tar_gz
from tsukud.validation.validator import ValidationRun, container_platform

ARCH = container_platform().arch
NAME = f"t-1.0.0-linux-{ARCH}.tar.gz"
ARCHIVE = tar_gz({"t-1.0.0/t": (script("t", "1.0.0"), 0o755)})
RELEASE = Release(tag="v1.0.0", assets=())


@pytest.fixture(scope="module")
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        yield fake


@pytest.fixture(scope="module")
def host() -> Iterator[FakeDownloadHost]:
    with FakeDownloadHost() as fake:
        fake.add(f"/dl/{NAME}", ARCHIVE, sha256_file=False)
        yield fake


# The create tests' real HTTP client, workdir and validator, and the tree tests' run.
http = create.http
workdir = create.workdir
validator = create.validator
run = validate_tree.run


def recipe(host: FakeDownloadHost, checksum: str) -> str:
    return f"""[metadata]
name = "t"

[[steps]]
action = "download_file"
url = "{host.url}/dl/t-{{version}}-{{os}}-{{arch}}.tar.gz"
checksum = "{checksum}"

[[steps]]
action = "extract"
archive = "t-{{version}}-{{os}}-{{arch}}.tar.gz"
strip_dirs = 1

[[steps]]
action = "install_binaries"
binaries = ["t"]
"""


async def test_a_checksum_that_does_not_match_fails_with_the_checksum_finding(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    wrong = "sha256:" + hashlib.sha256(b"another file").hexdigest()
    prepared = await run.prepare(parse_recipe(recipe(host, wrong)), RELEASE)
    failure = prepared.failure
    assert failure is not None and failure.failed
    assert (failure.stage, failure.category) == ("download", "checksum_mismatch")
    assert "the recipe's checksum" in failure.message
    assert hashlib.sha256(ARCHIVE).hexdigest() in failure.message
    assert [a.name for a in failure.assets] == [NAME]
    assert not list(run.dir.glob("tree-*/root/*"))  # nothing assembled
    feedback = validation_feedback(failure, attempt=1, max_repairs=2)
    assert "Error category: checksum_mismatch" in feedback
    assert "never drop a checksum" in feedback


async def test_the_right_checksum_validates_in_the_container(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    right = "sha256:" + hashlib.sha256(ARCHIVE).hexdigest()
    prepared = await run.prepare(parse_recipe(recipe(host, right)), RELEASE)
    assert prepared.failure is None, prepared.failure
    verdict = await prepared.verify(Verify(command="t", pattern="v{version}"))
    assert verdict.passed, verdict
    assert verdict.assets[0].sha256 == right.removeprefix("sha256:")


def run_command_recipe(host: FakeDownloadHost, command: str) -> str:
    right = "sha256:" + hashlib.sha256(ARCHIVE).hexdigest()
    step = f'\n[[steps]]\naction = "run_command"\ncommand = """{command}"""\n'
    text = recipe(host, right).replace("strip_dirs = 1\n", "strip_dirs = 1\n" + step)
    return text.replace('binaries = ["t"]', 'binaries = ["bin/t"]\ninstall_mode = "directory"')


async def test_a_run_command_runs_in_the_container_on_the_unpacked_asset(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    # TSUKU_VALIDATION is set only in the container's environment, never on the host.
    command = 'mkdir bin && mv t bin/t && echo "$TSUKU_VALIDATION {work_dir}" > ran-in'
    prepared = await run.prepare(parse_recipe(run_command_recipe(host, command)), RELEASE)
    assert prepared.failure is None, prepared.failure
    assert prepared.root is not None
    assert (prepared.root / "ran-in").read_text() == "1 /tsuku/work\n"
    assert prepared.binaries == {"t": "bin/t"}
    verdict = await prepared.verify(Verify(command="t", pattern="v{version}"))
    assert verdict.passed, verdict


async def test_a_failing_run_command_fails_validation_with_its_output(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    command = "echo moving; mv no-such-file bin/t"
    prepared = await run.prepare(parse_recipe(run_command_recipe(host, command)), RELEASE)
    failure = prepared.failure
    assert failure is not None and failure.failed
    assert failure.stage == "run_command"
    assert "run_command exited with 1" in failure.message
    assert "moving" in failure.message and "no-such-file" in failure.message


async def test_validation_takes_the_mirror_the_install_would(
    run: ValidationRun, host: FakeDownloadHost
) -> None:
    """``fallback_urls``: the primary URL failing, validation tries the mirrors in the
    install's order and proves the file the install would get, under the same checksum."""
    right = "sha256:" + hashlib.sha256(ARCHIVE).hexdigest()
    text = recipe(host, right).replace("/dl/t-", "/gone/t-", 1)
    mirror = f"{host.url}/dl/t-{{version}}-{{os}}-{{arch}}.tar.gz"
    mirrors = f'checksum = "{right}"\nfallback_urls = ["{mirror}"]'
    prepared = await run.prepare(
        parse_recipe(text.replace(f'checksum = "{right}"', mirrors)), RELEASE
    )
    assert prepared.failure is None, prepared.failure
    (asset,) = prepared.assets
    assert asset.url == f"{host.url}/dl/{NAME}"  # the mirror that served
    verdict = await prepared.verify(Verify(command="t", pattern="v{version}"))
    assert verdict.passed, verdict
