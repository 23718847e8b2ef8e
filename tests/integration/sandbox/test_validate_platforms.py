"""Every platform proven as far as this machine can, with real binaries in real containers.

- a glibc-linked binary (this host's coreutils ``base64``) validates in the default
  Debian image, and fails in the busybox fallback: that is why Debian is the default;
- busybox-static for amd64 (the host's) and for arm64 (Debian's arm64 package, fetched
  by ``bash scripts/dev setup``) run in the container, the arm64 one under qemu-user;
- darwin archives hold synthesised Mach-O headers: the right CPU passes by inspection,
  an x86_64 Mach-O where the recipe maps arm64 is reported as wrong;
- the proven platforms' four assets come back for the recipe to pin.
"""

from __future__ import annotations

import re
import struct
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.integration.create import conftest as create
from tests.integration.create.helpers import make_validator
from tests.integration.sandbox.conftest import unavailable
from tsukud.net.http import Http
from tsukud.recipe import Recipe, Verify, host_platform, parse_recipe
from tsukud.recipe.release import Release
from tsukud.sandbox.image import find_busybox
from tsukud.sandbox.runtime import ContainerRuntime
from tsukud.testing.github import FakeGitHub
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo, tar_gz
from tsukud.validation.validator import ValidationRun, binfmt_handler_registered

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[3]
ARM64_BUSYBOX = ROOT / ".venv" / "share" / "tsuku-test" / "busybox-arm64"
BASE64 = Path("/usr/bin/base64")

CPU_X86_64 = 0x01000007
CPU_ARM64 = 0x0100000C


def macho(cputype: int) -> bytes:
    """A 64-bit Mach-O executable header: what a darwin build's binary starts with."""
    return struct.pack("<IiiIIIII", 0xFEEDFACF, cputype, 3, 2, 0, 0, 0, 0) + bytes(256)


def host_busybox() -> tuple[bytes, str]:
    busybox = find_busybox()
    if busybox is None:
        unavailable("no static busybox on this host (apt-get install busybox-static)")
    head = subprocess.run([str(busybox), "--help"], capture_output=True, text=True).stdout
    match = re.search(r"BusyBox v(\d+\.\d+\.\d+)", head)
    assert match, head
    return busybox.read_bytes(), match.group(1)


def bb_archive(version: str, binary: bytes) -> bytes:
    return tar_gz({f"bb-{version}/busybox": (binary, 0o755)})


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[FakeGitHub, str]]:
    if host_platform().arch != "amd64":
        unavailable("the emulation tests expect an amd64 host (arm64 runs under qemu-user)")
    if not ARM64_BUSYBOX.is_file():
        unavailable(f"{ARM64_BUSYBOX} missing: `bash scripts/dev setup` fetches it")
    if not BASE64.is_file():
        unavailable(f"{BASE64} (coreutils) missing")
    amd64, version = host_busybox()
    arm64 = ARM64_BUSYBOX.read_bytes()
    assets = {
        "linux-amd64": amd64,
        "linux-arm64": arm64,
        "darwin-amd64": macho(CPU_X86_64),
        "darwin-arm64": macho(CPU_ARM64),
    }
    good = [
        FakeAsset(f"bb-{version}-{k}.tar.gz", bb_archive(version, b)) for k, b in assets.items()
    ]
    # The wrong release: its darwin-arm64 archive holds the x86_64 build.
    wrong = dict(assets, **{"darwin-arm64": macho(CPU_X86_64)})
    bad = [FakeAsset(f"bb-{version}-{k}.tar.gz", bb_archive(version, b)) for k, b in wrong.items()]
    tar = tar_gz({"b64-1.0/base64": (BASE64.read_bytes(), 0o755)})
    with FakeGitHub() as fake:
        fake.add_repo(FakeRepo("o/bb", [FakeRelease(f"v{version}", good)]))
        fake.add_repo(FakeRepo("o/wrong", [FakeRelease(f"v{version}", bad)]))
        fake.add_repo(
            FakeRepo("o/b64", [FakeRelease("v1.0", [FakeAsset("b64-1.0-linux-amd64.tar.gz", tar)])])
        )
        yield fake, version


@pytest.fixture(scope="module")
def gh(world: tuple[FakeGitHub, str]) -> FakeGitHub:
    return world[0]


http = create.http
workdir = create.workdir


@pytest.fixture
async def run(
    http: Http, gh: FakeGitHub, runtime: ContainerRuntime, image: str, workdir: Path
) -> AsyncIterator[ValidationRun]:
    async with make_validator(http, gh, runtime, image, workdir).session("platforms") as vrun:
        yield vrun


def bb_recipe(repo: str) -> Recipe:
    return parse_recipe(
        f'[metadata]\nname = "busybox"\n\n[[steps]]\naction = "github_archive"\nrepo = "{repo}"\n'
        'asset_pattern = "bb-{version}-{os}-{arch}.tar.gz"\nstrip_dirs = 1\n'
        'binaries = ["busybox"]\n\n[verify]\ncommand = "busybox --help"\n'
        'pattern = "BusyBox v{version}"\n'
    )


def bb_release(version: str) -> Release:
    return Release(
        tag=f"v{version}",
        assets=tuple(f"bb-{version}-{k}.tar.gz" for k in ("linux-amd64", "linux-arm64",
                                                           "darwin-amd64", "darwin-arm64")),
    )  # fmt: skip


async def test_every_platform_is_proven_and_pinned(
    run: ValidationRun, world: tuple[FakeGitHub, str]
) -> None:
    if not binfmt_handler_registered("arm64"):
        unavailable("no qemu-aarch64 binfmt handler (bash scripts/dev setup registers it)")
    version = world[1]
    recipe, release = bb_recipe("o/bb"), bb_release(version)
    prepared = await run.prepare(recipe, release)
    verdict = await prepared.verify(recipe.verify)
    assert verdict.passed and verdict.platform == "linux/amd64", verdict
    proven = await run.prove_platforms(recipe, release, verdict)
    assert proven.passed, proven
    got = {p.platform: (p.status, p.how) for p in proven.platforms}
    assert got == {
        "linux/amd64": ("passed", "run"),
        "linux/arm64": ("passed", "emulated"),
        "darwin/amd64": ("passed", "inspected"),
        "darwin/arm64": ("passed", "inspected"),
    }
    assert sorted(a.name for a in proven.assets) == sorted(release.assets)
    assert all(len(a.sha256) == 64 for a in proven.assets)


async def test_the_arm64_build_really_ran_under_emulation(
    run: ValidationRun, world: tuple[FakeGitHub, str]
) -> None:
    """Not a header check: the arm64 busybox answers ``uname -m`` in the container."""
    if not binfmt_handler_registered("arm64"):
        unavailable("no qemu-aarch64 binfmt handler (bash scripts/dev setup registers it)")
    from tsukud.recipe import parse_platform

    recipe = bb_recipe("o/bb")
    prepared = await run.prepare(recipe, bb_release(world[1]), parse_platform("linux/arm64"))
    assert prepared.failure is None
    got = await prepared.run_command("busybox uname -m")
    assert not isinstance(got, type(prepared.failure)) and got is not None
    assert getattr(got, "exit_code", None) == 0 and getattr(got, "output", "").strip() == "aarch64"


async def test_an_x86_64_mach_o_mapped_to_arm64_is_reported_wrong(
    run: ValidationRun, world: tuple[FakeGitHub, str]
) -> None:
    version = world[1]
    recipe, release = bb_recipe("o/wrong"), bb_release(version)
    verdict = await (await run.prepare(recipe, release)).verify(recipe.verify)
    assert verdict.passed
    proven = await run.prove_platforms(recipe, release, verdict)
    assert proven.failed and proven.stage == "platform"
    assert proven.platform == "darwin/arm64"
    assert proven.message == "bin/busybox is built for amd64, not arm64"
    assert proven.category == "exec_format_error"
    assert {p.platform: p.status for p in proven.platforms}["darwin/amd64"] == "passed"


async def test_a_platform_without_an_emulator_is_unproven_never_passed(
    http: Http,
    gh: FakeGitHub,
    runtime: ContainerRuntime,
    image: str,
    workdir: Path,
    world: tuple[FakeGitHub, str],
) -> None:
    validator = make_validator(http, gh, runtime, image, workdir)
    validator.emulates = lambda arch: False
    recipe, release = bb_recipe("o/bb"), bb_release(world[1])
    async with validator.session("no-emulator") as vrun:
        verdict = await (await vrun.prepare(recipe, release)).verify(recipe.verify)
        proven = await vrun.prove_platforms(recipe, release, verdict)
    arm = {p.platform: p for p in proven.platforms}["linux/arm64"]
    assert arm.status == "unproven" and "qemu-user-static" in arm.message
    assert proven.passed  # nothing is wrong; the arm64 build just could not be run


def b64_recipe() -> Recipe:
    return parse_recipe(
        '[metadata]\nname = "base64"\n\n[[steps]]\naction = "github_archive"\nrepo = "o/b64"\n'
        'asset_pattern = "b64-{version}-linux-amd64.tar.gz"\nstrip_dirs = 1\n'
        'binaries = ["base64"]\n\n[verify]\ncommand = "base64 --version"\n'
        'pattern = "GNU coreutils"\n'
    )


async def test_a_glibc_binary_validates_in_debian_and_not_in_busybox(
    http: Http,
    gh: FakeGitHub,
    runtime: ContainerRuntime,
    image: str,
    busybox_image: str,
    workdir: Path,
) -> None:
    release = Release(tag="v1.0", assets=("b64-1.0-linux-amd64.tar.gz",))
    recipe = b64_recipe()
    verdicts = {}
    for name in (image, busybox_image):
        async with make_validator(http, gh, runtime, name, workdir).session("glibc") as vrun:
            verdicts[name] = await (await vrun.prepare(recipe, release)).verify(recipe.verify)
    assert verdicts[image].passed, verdicts[image]
    assert "GNU coreutils" in verdicts[image].output
    failed = verdicts[busybox_image]
    assert failed.failed and failed.exit_code != 0  # no glibc loader in busybox


async def test_additional_verify_commands_run_too(
    run: ValidationRun, world: tuple[FakeGitHub, str]
) -> None:
    from tsukud.recipe import VerifyAdditional

    recipe = bb_recipe("o/bb")
    prepared = await run.prepare(recipe, bb_release(world[1]))
    ok = Verify(
        command="busybox --help",
        pattern="BusyBox v{version}",
        additional=(VerifyAdditional(command="busybox echo second", pattern="second"),),
    )
    assert (await prepared.verify(ok)).passed
    bad = Verify(
        command="busybox --help",
        pattern="BusyBox v{version}",
        additional=(VerifyAdditional(command="busybox false"),),
    )
    verdict = await prepared.verify(bad)
    assert verdict.failed and verdict.command == "busybox false" and verdict.exit_code == 1
