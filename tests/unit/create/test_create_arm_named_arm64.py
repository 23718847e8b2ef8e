"""A Linux build named plain ``arm`` in a release without 32-bit builds is the arm64
build (``tool-linux-arm`` beside ``tool-linux-x86_64``, built on an ARM runner): the
matcher takes it for linux/arm64, the recipe says so, the static checks accept it
there and nowhere else, and the pipeline's payload check decides. A refused payload
leaves the same recipe without linux/arm64 in front, never the whole recipe refused.
Where the release has any 32-bit build, or spells ``arm64``, ``arm`` stays 32-bit.
All names are made up."""

from __future__ import annotations

import msgspec

from tests.unit.test_binfmt import elf
from tsukud.binfmt import inspect
from tsukud.create.assets import arm_means_arm64, filter_release
from tsukud.create.matcher import ARM_NOTE, CONFIDENT, candidate_to_recipe, match_releases
from tsukud.create.payload_check import Probe, confirm_guesses, guessed_choices
from tsukud.create.static_checks import check_recipe
from tsukud.create.tools import Payload
from tsukud.recipe import dump_recipe
from tsukud.recipe.release import Release
from tsukud.validation.findings import errors

EM_ARM = 0x28
EM_AARCH64 = 0xB7
VERSIONS = ("3.2.0", "3.1.1", "3.1.0")


def _releases(*extra: str, builds: tuple[str, ...] = ()) -> list[Release]:
    names = builds or (
        "quill-{v}-linux-x86_64.tar.gz",
        "quill-{v}-linux-arm.tar.gz",
        "quill-{v}-macos-x86_64.tar.gz",
        "quill-{v}-macos-arm.tar.gz",
        "quill-{v}-windows-arm.zip",
    )
    return [
        Release(tag=f"v{v}", assets=tuple(n.format(v=v) for n in (*names, *extra)))
        for v in VERSIONS
    ]


def _picks(releases: list[Release]) -> dict[str, str]:
    match = match_releases(releases, repo="acme/quill")
    assert match.best is not None
    return {c.platform: c.asset for c in match.best.choices}


def test_arm_in_a_release_without_32_bit_builds_is_the_arm64_build() -> None:
    releases = _releases()
    assert arm_means_arm64(releases[0])
    match = match_releases(releases, repo="acme/quill")
    best = match.best
    assert best is not None and match.confident
    assert {c.platform: c.asset for c in best.choices}["linux/arm64"] == (
        "quill-3.2.0-linux-arm.tar.gz"
    )
    assert any("says 'arm'" in r for r in best.reasons)
    recipe = candidate_to_recipe(best, repo="acme/quill", name="quill", releases=releases)
    assert errors(check_recipe(recipe, releases, expected=best.expected)) == []
    text = dump_recipe(recipe)
    assert ARM_NOTE in text and 'arm64 = "arm"' in text
    # Behind it, should the payload say otherwise: the same recipe without linux/arm64.
    second = match.candidates[1]
    assert [c.platform for c in second.choices] == ["linux/amd64", "darwin/amd64", "darwin/arm64"]
    assert second.unsupported == ("linux/arm64",)
    assert CONFIDENT <= second.confidence <= best.confidence


def test_any_32_bit_build_or_an_arm64_spelling_keeps_arm_32_bit() -> None:
    for extra in (
        "quill-{v}-linux-386.tar.gz",
        "quill-{v}-linux-armv7.tar.gz",
        "quill-{v}-windows-i686.zip",
        "quill-{v}-freebsd-arm64.tar.gz",
    ):
        releases = _releases(extra)
        assert not arm_means_arm64(releases[0]), extra
        assert "quill-3.2.0-linux-arm.tar.gz" not in filter_release(releases[0]).kept
        assert "linux/arm64" not in _picks(releases), extra
    # An explicit arm64 build wins outright.
    releases = _releases("quill-{v}-linux-aarch64.tar.gz")
    assert _picks(releases)["linux/arm64"] == "quill-3.2.0-linux-aarch64.tar.gz"


def test_the_static_checks_accept_arm_for_arm64_only() -> None:
    releases = _releases()
    match = match_releases(releases, repo="acme/quill")
    assert match.best is not None
    recipe = candidate_to_recipe(match.best, repo="acme/quill", name="quill", releases=releases)
    # The same recipe where 386 builds exist: arm is 32-bit there, not an arm64 build.
    with_386 = _releases("quill-{v}-linux-386.tar.gz")
    found = errors(check_recipe(recipe, with_386))
    assert any(f.platform == "linux/arm64" and "unsupported_arch" in f.message for f in found)
    # An amd64 platform rendering the arm build is the wrong platform.
    step = recipe.steps[0]
    assert hasattr(step, "arch_mapping")
    crossed = msgspec.structs.replace(
        recipe, steps=(msgspec.structs.replace(step, arch_mapping={"amd64": "arm"}),)
    )
    found = errors(check_recipe(crossed, releases))
    assert any(f.platform == "linux/amd64" and "arm64 build" in f.message for f in found)


async def test_the_payload_decides_and_a_32_bit_arm_leaves_the_rest_standing() -> None:
    releases = _releases()
    match = match_releases(releases, repo="acme/quill")
    assert match.best is not None
    assert guessed_choices(match.best, "3.2.0") == [
        ("linux/arm64", "quill-3.2.0-linux-arm.tar.gz", "arm64")
    ]

    def probe_with(machine: int) -> Probe:
        async def probe(asset: str, binary: str | None) -> Payload:
            return Payload(info=inspect(elf(machine, interp=True)), path="quill")

        return probe

    confirmed = await confirm_guesses(match, "3.2.0", probe_with(EM_AARCH64))
    assert confirmed.confident and confirmed.best is not None
    assert "linux/arm64" in {c.platform for c in confirmed.best.choices}
    assert any("names 'arm'; its payload is an ELF for arm64" in r for r in confirmed.best.reasons)

    refused = await confirm_guesses(match, "3.2.0", probe_with(EM_ARM))
    best = refused.best
    assert refused.confident and best is not None
    assert best.unsupported == ("linux/arm64",)
    assert "linux/arm64" not in {c.platform for c in best.choices}
    loser = refused.candidates[1]
    assert loser.reasons[0].endswith("not taken as the arm64 build")
