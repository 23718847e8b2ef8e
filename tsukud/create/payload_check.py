"""Names without an OS are Linux (or, by elimination, macOS) builds only when their
payload says so, and a Linux build named plain ``arm`` is the arm64 build only when
its payload is an arm64 ELF.

The matcher takes ``nix-portable-x86_64`` or ``conmon.amd64`` as the Linux build of
that arch when no asset names Linux for it: the convention, read from names alone (the
matcher stays pure, and the benchmark never downloads). Before a create run relies on
it, the pipeline looks inside: an ELF for the platform's arch (a Mach-O with its slice,
for macOS) confirms the guess; the other kind, another CPU, or nothing executable
refuses it. A refused guess
leaves the candidate unconfident, its reasons first saying why, so a model decides or
``--deterministic-only`` stops with the candidates listed; a refused ``arm`` build
leaves the matcher's next candidate, the same recipe without linux/arm64, in front.
"""

from __future__ import annotations

import posixpath
from collections.abc import Awaitable, Callable

import msgspec

from tsukud.binfmt import platform_problem
from tsukud.create.answer import BinaryAnswer
from tsukud.create.assets import is_bare_arm
from tsukud.create.matcher import CONFIDENT, Candidate, MatchResult
from tsukud.create.tokens import parse_asset
from tsukud.create.tools import Payload

Probe = Callable[[str, str | None], Awaitable[Payload]]

# A refused guess caps the candidate's confidence here: below CONFIDENT, so it is never
# written without a model, yet still ranked among the rest.
REFUSED_CONFIDENCE = CONFIDENT / 2


def guessed_choices(candidate: Candidate, version: str) -> list[tuple[str, str, str]]:
    """``(platform, asset, arch)`` of the choices that rest on a guess the payload
    settles: a linux choice named with an arch but no OS, or plain ``arm``; a darwin
    choice named with no OS beside builds that name theirs."""
    parsed = {c.asset: parse_asset(c.asset, version) for c in candidate.choices}
    # Some build names its OS: an OS-less darwin choice was placed by elimination (when
    # none does, every platform got the one platform-less asset, as assumed).
    named = any(p.os is not None for p in parsed.values())
    out = []
    for choice in candidate.choices:
        os, _, arch = choice.platform.partition("/")
        name = parsed[choice.asset]
        on_linux = (name.os is None and name.arch is not None) or is_bare_arm(name)
        on_darwin = name.os is None and named
        if (os == "linux" and on_linux) or (os == "darwin" and on_darwin):
            out.append((choice.platform, choice.asset, arch))
    return out


def _guess(asset: str, version: str, os: str) -> tuple[str, str]:
    """What the name left unsaid, and what the guess made of it."""
    if is_bare_arm(parse_asset(asset, version)):
        return "names 'arm'", "not taken as the arm64 build"
    return "names no OS", "not taken as macOS" if os == "darwin" else "not taken as Linux"


def _binary(candidate: Candidate) -> str | None:
    """The basename the candidate installs from the archive, when it is literal."""
    entries = candidate.answer.binaries or ()
    if not entries:
        return None
    first = entries[0]
    src = first.src if isinstance(first, BinaryAnswer) else first
    name = posixpath.basename(src.rstrip("/"))
    return None if "{" in name else name or None


def verdict(
    payload: Payload, asset: str, platform: str, arch: str, version: str = ""
) -> str | None:
    """Why ``asset`` is not the ``platform`` build its name was taken for, or ``None``."""
    os = platform.partition("/")[0]
    said, refused = _guess(asset, version, os)
    if payload.info is None:
        return (
            f"{platform}: {asset} {said} and its payload could not be checked "
            f"({payload.error or 'unknown'}): {refused}"
        )
    problem = platform_problem(payload.info, os, arch)
    if problem is None:
        return None
    return f"{platform}: {asset} {said} and its binary {payload.path} {problem}: {refused}"


async def confirm_guesses(match: MatchResult, version: str, probe: Probe) -> MatchResult:
    """``match`` with every candidate's OS-less linux choices checked against their
    payload (``version``: the newest release's, which the choices name)."""
    if not any(guessed_choices(c, version) for c in match.candidates):
        return match
    checked: list[Candidate] = []
    for candidate in match.candidates:
        refused: list[str] = []
        confirmed: list[str] = []
        for platform, asset, arch in guessed_choices(candidate, version):
            payload = await probe(asset, _binary(candidate))
            why = verdict(payload, asset, platform, arch, version)
            if why is None:
                what = "a static ELF" if payload.info and payload.info.static else "an ELF"
                what = "a Mach-O" if payload.info and payload.info.kind == "macho" else what
                said, _ = _guess(asset, version, platform.partition("/")[0])
                confirmed.append(f"{platform}: {asset} {said}; its payload is {what} for {arch}")
            else:
                refused.append(why)
        if refused:
            candidate = msgspec.structs.replace(
                candidate,
                confidence=min(candidate.confidence, REFUSED_CONFIDENCE),
                reasons=(*refused, *confirmed, *candidate.reasons),
            )
        elif confirmed:
            candidate = msgspec.structs.replace(candidate, reasons=(*candidate.reasons, *confirmed))
        checked.append(candidate)
    checked.sort(key=lambda c: -c.confidence)
    return msgspec.structs.replace(match, candidates=tuple(checked))


__all__ = ["REFUSED_CONFIDENCE", "confirm_guesses", "guessed_choices", "verdict"]
