"""Does a GitHub candidate publish something this machine can install? (item checked
before the user is asked)

:func:`assess_release` (pure) reads the latest release's assets with create's own
rules (:func:`tsukud.create.assets.drop_reason` drops checksums, signatures, Windows and
other builds; :func:`tsukud.create.tokens.parse_asset` reads each name's OS and
architecture) and keeps those for this platform. None: the repository publishes no
binary tsuku's GitHub builders can use here, so installing it will need the
instructions builder (a recipe written from its documentation), and discovery says so
before the question, instead of approving it and failing later in create with
``NoBinaryAssets``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tsukud.create.assets import drop_reason
from tsukud.create.tokens import UNIVERSAL, parse_asset
from tsukud.discover.model import ReleaseCheck

if TYPE_CHECKING:
    from tsukud.github.client import GitHub, Release
    from tsukud.recipe.platform import Platform


def assess_release(release: Release | None, os: str, arch: str) -> ReleaseCheck:
    where = f"{os}/{arch}"
    if release is None:
        return ReleaseCheck(
            platform=where,
            installable=False,
            note=f"it has no GitHub releases: installing it on {where} will need the "
            "instructions builder",
        )
    version = release.tag_name.removeprefix("v")
    usable = []
    for asset in release.assets:
        if drop_reason(asset.name, version) is not None:
            continue
        parsed = parse_asset(asset.name, version)
        arch_ok = parsed.arch in (arch, None) or (os == "darwin" and parsed.arch == UNIVERSAL)
        if parsed.os == os and arch_ok:
            usable.append(asset.name)
    if usable:
        return ReleaseCheck(
            platform=where, installable=True, tag=release.tag_name, assets=tuple(usable[:5])
        )
    return ReleaseCheck(
        platform=where,
        installable=False,
        tag=release.tag_name,
        note=f"its latest release ({release.tag_name}, {len(release.assets)} assets) has no "
        f"asset for {where}: installing it will need the instructions builder",
    )


async def check_release(github: GitHub, repo: str, platform: Platform) -> ReleaseCheck:
    """The latest release of ``repo`` through the GitHub client (its typed errors)."""
    from tsukud.github.client import ReleaseNotFound

    try:
        release: Release | None = await github.latest_release(repo)
    except ReleaseNotFound:
        release = None
    return assess_release(release, platform.os, platform.arch)
