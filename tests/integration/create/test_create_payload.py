"""Names without an OS are taken as Linux only when the payload agrees (issue 13, item 4),
as are a Linux build named plain ``arm`` (for arm64) and a macOS build placed by
elimination (issue 30, item 4).

The matcher guesses from names alone; the pipeline then downloads each such asset once
(the real HTTP client against the fake GitHub on loopback), unpacks it with the
installer's limits and reads its executable's header: an ELF for the arch confirms, a
Mach-O or an ELF for another CPU refuses the guess, and ``--deterministic-only`` stops
with the reason instead of writing the recipe.
"""

from __future__ import annotations

import msgspec
import pytest

from tests.fakes.github import FakeGitHub
from tests.integration.create.helpers import Sink, create_in_process
from tests.unit.test_binfmt import CPU_ARM64, CPU_X86_64, elf, fat, macho
from tsukud.create.errors import DeterministicUncertain
from tsukud.create.pipeline import CreateResult
from tsukud.github.client import GitHub
from tsukud.net.http import Http
from tsukud.recipe import parse_recipe
from tsukud.testing.releases import FakeAsset, FakeRelease, FakeRepo

EM_X86_64 = 0x3E
EM_AARCH64 = 0xB7
EM_ARM = 0x28


def _repo(gh: FakeGitHub, repo: str, amd64: bytes, arm64: bytes) -> None:
    """Three releases whose builds name an arch but no OS (as nix-portable's do)."""
    _builds(gh, repo, {"{tool}-x86_64": amd64, "{tool}-aarch64": arm64})


def _downloads(gh: FakeGitHub, name: str) -> int:
    return len([r for r in gh.requests_to(f"/{name}") if r.role == "assets"])


async def _create(gh: FakeGitHub, github: GitHub, http: Http, repo: str) -> CreateResult:
    return await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool=repo.rpartition("/")[2],
        repo=repo,
        sink=Sink(),
        deterministic_only=True,
        skip_validation=True,
    )


async def test_an_elf_of_the_arch_confirms_linux(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    repo = "acme/portable"
    _repo(gh, repo, elf(EM_X86_64, interp=False), elf(EM_AARCH64, interp=True))
    result = await _create(gh, github, http, repo)
    recipe = parse_recipe(result.recipe)
    linux = {
        d["platform"]: d.get("assets") for d in msgspec.to_builtins(result.preview)["downloads"]
    }
    assert linux["linux/amd64"] == ["portable-x86_64"]
    assert linux["linux/arm64"] == ["portable-aarch64"]
    reasons = result.matcher["reasons"]
    assert any(
        "portable-x86_64 names no OS; its payload is a static ELF for amd64" in r for r in reasons
    ), reasons
    assert recipe.metadata.name == "portable"
    # One download per asset for the run, whatever the number of candidates.
    assert (_downloads(gh, "portable-x86_64"), _downloads(gh, "portable-aarch64")) == (1, 1)


async def test_a_mach_o_refuses_linux(gh: FakeGitHub, github: GitHub, http: Http) -> None:
    repo = "acme/misnamed"
    _repo(gh, repo, macho(CPU_X86_64), elf(EM_AARCH64, interp=True))
    with pytest.raises(DeterministicUncertain) as info:
        await _create(gh, github, http, repo)
    assert (
        "misnamed-x86_64 names no OS and its binary misnamed-x86_64 is a Mach-O (macOS) "
        "binary, not a linux one: not taken as Linux" in info.value.message
    )


async def test_an_elf_for_another_cpu_refuses_linux(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    repo = "acme/crossed"
    _repo(gh, repo, elf(EM_AARCH64, interp=True), elf(EM_AARCH64, interp=True))
    with pytest.raises(DeterministicUncertain) as info:
        await _create(gh, github, http, repo)
    assert (
        "crossed-x86_64 names no OS and its binary crossed-x86_64 is built for arm64, "
        "not amd64" in info.value.message
    )


def _builds(gh: FakeGitHub, repo: str, builds: dict[str, bytes]) -> None:
    """Three releases of raw builds, ``{tool}`` in each name standing for the tool."""
    if gh.repos.get(repo) is not None:
        return
    tool = repo.rpartition("/")[2]
    gh.add_repo(
        FakeRepo(
            repo,
            [
                FakeRelease(
                    tag,
                    [FakeAsset(name.format(tool=tool), data) for name, data in builds.items()],
                    created_at=f"2024-02-0{9 - n}T00:00:00Z",
                )
                for n, tag in enumerate(("v1.2.0", "v1.1.0", "v1.0.0"))
            ],
            files={"README.md": b"# tool\n"},
        )
    )


@pytest.mark.parametrize(
    ("arm", "linux_arm64"),
    [(EM_AARCH64, ["quill-linux-arm"]), (EM_ARM, None)],
    ids=["aarch64", "arm32"],
)
async def test_a_build_named_arm_is_arm64_only_when_its_payload_is(
    gh: FakeGitHub, github: GitHub, http: Http, arm: int, linux_arm64: list[str] | None
) -> None:
    repo = f"acme/quill-{arm}"
    _builds(
        gh,
        repo,
        {
            "quill-linux-x86_64": elf(EM_X86_64, interp=True),
            "quill-linux-arm": elf(arm, interp=True),
            "quill-macos-x86_64": macho(CPU_X86_64),
        },
    )
    result = await create_in_process(
        http=http,
        github=github,
        github_url=gh.web_url,
        tool="quill",
        repo=repo,
        sink=Sink(),
        deterministic_only=True,
        skip_validation=True,
    )
    downloads = {
        d["platform"]: d.get("assets") for d in msgspec.to_builtins(result.preview)["downloads"]
    }
    assert downloads["linux/amd64"] == ["quill-linux-x86_64"]
    # An arm32 ELF refuses the guess; the recipe is written without linux/arm64.
    assert downloads["linux/arm64"] == linux_arm64
    assert _downloads(gh, f"{repo}/v1.2.0/quill-linux-arm") == 1


async def test_the_macos_build_placed_by_elimination_is_held_to_a_mach_o(
    gh: FakeGitHub, github: GitHub, http: Http
) -> None:
    universal = fat((CPU_X86_64, macho(CPU_X86_64)), (CPU_ARM64, macho(CPU_ARM64)))
    linux = {"{tool}-linux-amd64": elf(EM_X86_64, interp=True)}
    _builds(gh, "acme/lumen", {**linux, "{tool}-portable": universal})
    result = await _create(gh, github, http, "acme/lumen")
    downloads = {
        d["platform"]: d.get("assets") for d in msgspec.to_builtins(result.preview)["downloads"]
    }
    assert downloads["darwin/amd64"] == downloads["darwin/arm64"] == ["lumen-portable"]
    assert _downloads(gh, "lumen-portable") == 1
    # The same name holding a Linux ELF is not taken as macOS.
    _builds(gh, "acme/lumix", {**linux, "{tool}-portable": elf(EM_X86_64, interp=True)})
    with pytest.raises(DeterministicUncertain) as info:
        await _create(gh, github, http, "acme/lumix")
    assert "lumix-portable names no OS and its binary" in info.value.message
    assert "not taken as macOS" in info.value.message
