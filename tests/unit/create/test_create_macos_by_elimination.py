"""Where the Linux builds name their OS and no asset names macOS, the one name with
neither an OS nor an arch (``portable_lumen.zip`` beside ``lumen_linux_amd64.zip``) is
the macOS build: the matcher places it on darwin instead of doubting the whole
recipe, and the pipeline's payload check holds it to a Mach-O with the platform's
slice. Where a darwin build is named, or no build names any OS, nothing changes. All
names are made up."""

from __future__ import annotations

from tests.unit.test_binfmt import CPU_ARM64, CPU_X86_64, elf, fat, macho
from tsukud.binfmt import inspect
from tsukud.create.matcher import CONFIDENT, candidate_to_recipe, match_releases
from tsukud.create.payload_check import Probe, confirm_guesses, guessed_choices
from tsukud.create.static_checks import check_recipe
from tsukud.create.tools import Payload
from tsukud.recipe.release import Release
from tsukud.validation.findings import errors

EM_X86_64 = 0x3E
VERSIONS = ("0.8.2", "0.8.1", "0.8.0")
LINUX = ("lumen_linux_amd64.zip", "lumen_linux_arm64.zip")


def _releases(*names: str) -> list[Release]:
    return [Release(tag=f"v{v}", assets=(*LINUX, *names, "checksums.txt")) for v in VERSIONS]


def _probe(payload: bytes) -> Probe:
    async def probe(asset: str, binary: str | None) -> Payload:
        return Payload(info=inspect(payload), path=binary or asset)

    return probe


def test_the_os_less_name_is_the_macos_build_when_only_linux_is_named() -> None:
    releases = _releases("portable_lumen.zip")
    match = match_releases(releases, repo="acme/lumen")
    best = match.best
    assert best is not None and match.confident
    picks = {c.platform: c.asset for c in best.choices}
    assert picks == {
        "linux/amd64": "lumen_linux_amd64.zip",
        "linux/arm64": "lumen_linux_arm64.zip",
        "darwin/amd64": "portable_lumen.zip",
        "darwin/arm64": "portable_lumen.zip",
    }
    assert any("taken as the macOS build" in r for r in best.reasons)
    recipe = candidate_to_recipe(best, repo="acme/lumen", name="lumen", releases=releases)
    assert errors(check_recipe(recipe, releases, expected=best.expected)) == []
    assert sorted(guessed_choices(best, "0.8.2")) == [
        ("darwin/amd64", "portable_lumen.zip", "amd64"),
        ("darwin/arm64", "portable_lumen.zip", "arm64"),
    ]


async def test_a_universal_mach_o_confirms_it_and_anything_else_refuses_it() -> None:
    match = match_releases(_releases("portable_lumen.zip"), repo="acme/lumen")
    universal = fat((CPU_X86_64, macho(CPU_X86_64)), (CPU_ARM64, macho(CPU_ARM64)))
    confirmed = await confirm_guesses(match, "0.8.2", _probe(universal))
    assert confirmed.confident and confirmed.best is not None
    assert any("its payload is a Mach-O for arm64" in r for r in confirmed.best.reasons)

    for payload, why in (
        (elf(EM_X86_64, interp=True), "is an ELF (Linux) binary, not a darwin one"),
        (macho(CPU_X86_64), "is built for amd64, not arm64"),
    ):
        refused = await confirm_guesses(match, "0.8.2", _probe(payload))
        best = refused.best
        assert best is not None and best.confidence < CONFIDENT and not refused.confident
        assert why in best.reasons[0] and best.reasons[0].endswith("not taken as macOS")


def test_nothing_is_placed_by_elimination_beside_a_named_darwin_build() -> None:
    releases = _releases("lumen_darwin_arm64.zip", "portable_lumen.zip")
    match = match_releases(releases, repo="acme/lumen")
    assert match.best is not None
    picks = {c.platform: c.asset for c in match.best.choices}
    assert picks["darwin/arm64"] == "lumen_darwin_arm64.zip"
    assert "portable_lumen.zip" not in picks.values()
    assert "portable_lumen.zip" in match.unplaced


def test_without_any_named_os_the_one_asset_still_serves_every_platform() -> None:
    releases = [Release(tag=f"v{v}", assets=("lumen.pyz",)) for v in VERSIONS]
    match = match_releases(releases, repo="acme/lumen")
    assert match.best is not None
    assert {c.asset for c in match.best.choices} == {"lumen.pyz"}
    assert guessed_choices(match.best, "0.8.2") == []  # no download: nothing was placed
