"""Which matcher choices rest on a name without an OS, and how a payload settles them
(:mod:`tsukud.create.payload_check`): headers synthesised byte by byte, read by
:mod:`tsukud.binfmt`; the downloads themselves are tested in
tests/integration/create/test_create_payload.py."""

from __future__ import annotations

from tests.unit.test_binfmt import CPU_ARM64, elf, macho
from tsukud.binfmt import inspect
from tsukud.create.matcher import CONFIDENT, match_releases
from tsukud.create.payload_check import confirm_guesses, guessed_choices, verdict
from tsukud.create.tools import Payload
from tsukud.recipe.release import Release

EM_X86_64 = 0x3E
EM_AARCH64 = 0xB7


def _releases() -> list[Release]:
    """Linux builds without an OS in their names, darwin builds with one."""
    return [
        Release(
            tag=f"v{v}",
            assets=(f"tool-{v}-x86_64", f"tool-{v}-aarch64", f"tool-{v}-darwin-arm64"),
        )
        for v in ("1.3.0", "1.2.0", "1.1.0")
    ]


async def test_only_linux_choices_without_an_os_are_checked() -> None:
    match = match_releases(_releases(), repo="acme/tool")
    assert match.best is not None and match.confident
    assert sorted(guessed_choices(match.best, "1.3.0")) == [
        ("linux/amd64", "tool-1.3.0-x86_64", "amd64"),
        ("linux/arm64", "tool-1.3.0-aarch64", "arm64"),
    ]
    asked: list[tuple[str, str | None]] = []
    payloads = {
        "tool-1.3.0-x86_64": elf(EM_X86_64, interp=True),
        "tool-1.3.0-aarch64": macho(CPU_ARM64),
    }

    async def probe(asset: str, binary: str | None) -> Payload:
        asked.append((asset, binary))
        return Payload(info=inspect(payloads[asset]), path=asset)

    checked = await confirm_guesses(match, "1.3.0", probe)
    assert {a for a, _ in asked} == set(payloads)  # never the darwin build
    best = checked.best
    assert best is not None and best.confidence < CONFIDENT and not checked.confident
    assert best.reasons[0] == (
        "linux/arm64: tool-1.3.0-aarch64 names no OS and its binary tool-1.3.0-aarch64 is a "
        "Mach-O (macOS) binary, not a linux one: not taken as Linux"
    )
    assert "linux/amd64: tool-1.3.0-x86_64 names no OS; its payload is an ELF for amd64" in (
        best.reasons
    )


async def test_names_with_an_os_need_no_payload() -> None:
    releases = [
        Release(tag=f"v{v}", assets=(f"tool-{v}-linux-amd64", f"tool-{v}-darwin-arm64"))
        for v in ("1.3.0", "1.2.0", "1.1.0")
    ]
    match = match_releases(releases, repo="acme/tool")

    async def probe(asset: str, binary: str | None) -> Payload:
        raise AssertionError(f"{asset} was downloaded")

    assert await confirm_guesses(match, "1.3.0", probe) is match


def test_an_unreadable_payload_is_not_taken_as_linux() -> None:
    why = verdict(Payload(error="larger than 64 MB"), "tool-x86_64", "linux/amd64", "amd64")
    assert why == (
        "linux/amd64: tool-x86_64 names no OS and its payload could not be checked "
        "(larger than 64 MB): not taken as Linux"
    )
    elf_arm = Payload(info=inspect(elf(EM_AARCH64, interp=False)), path="bin/tool")
    assert verdict(elf_arm, "tool-aarch64", "linux/arm64", "arm64") is None
