"""Finding an ecosystem's toolchain: from its registry recipe, or on the host's PATH.

When the registry holds the recipe that installs the toolchain (the record's
``Toolchain.recipe``, as tsuku's actions declare it), it is planned and
installed first like any dependency, and the runner finds the program in that tool's
directory, first on PATH (:func:`path_first`). Otherwise the host's program is used and
a missing one is the user's to install, so the error says exactly which program is
missing, the Debian package that provides it and the upstream way to get it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from tsukud.errors import TsukuError
from tsukud.install.registry import ManifestInvalid, Registry
from tsukud.registries.ecosystems import Toolchain

__all__ = ["Toolchain", "ToolchainMissing", "find", "path_first", "recipe_held"]


class ToolchainMissing(TsukuError):
    code = "toolchain_missing"


def find(toolchain: Toolchain, env: Mapping[str, str]) -> Path:
    """The toolchain's program on ``env``'s PATH, or :class:`ToolchainMissing`."""
    path = env.get("PATH") or os.defpath
    found = shutil.which(toolchain.program, path=path)
    if found is None:
        raise ToolchainMissing(
            f"{toolchain.program} is not on PATH: it is needed to install {toolchain.ecosystem}",
            hint=toolchain.hint(),
            program=toolchain.program,
            debian_package=toolchain.debian_package,
        )
    return Path(found)


async def check_works(toolchain: Toolchain, program: Path, env: Mapping[str, str]) -> None:
    """Run the toolchain's probe (if it has one): Debian's python3 without
    ``python3-venv`` is on PATH but cannot make a venv."""
    if not toolchain.probe:
        return
    import subprocess

    import trio

    proc = await trio.run_process(
        [str(program), *toolchain.probe],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    if proc.returncode != 0:
        raise ToolchainMissing(
            f"{program} cannot install {toolchain.ecosystem}: "
            f"`{toolchain.program} {' '.join(toolchain.probe)}` failed",
            hint=toolchain.hint(),
            program=toolchain.program,
            debian_package=toolchain.debian_package,
        )


async def recipe_held(registry: Registry, toolchain: Toolchain) -> bool:
    """Whether a local recipe or the registry's manifest holds the recipe that installs
    ``toolchain``: then it is installed first and used; else the host's is. The cached
    manifest answers when there is one (stale or not: ``update-registry`` refreshes
    it), so an install from a local recipe does not wait on an unreachable registry
    each time; with no manifest at all, the host's is used, as before there were
    toolchain recipes."""
    name = toolchain.recipe
    if name is None:
        return False
    if registry.local_path(name).is_file():
        return True
    cached = registry.cached_manifest()
    try:
        manifest = cached[0] if cached is not None else (await registry.manifest())[0]
    except ManifestInvalid:  # a registry answering garbage holds nothing usable
        return False
    return manifest is not None and name in manifest.names()


def path_first(env: Mapping[str, str], bin_dirs: list[Path]) -> dict[str, str]:
    """``env`` with ``bin_dirs`` (an installed toolchain's) before its PATH: the
    toolchain's own program is found, not the host's of the same name."""
    rest = (env.get("PATH") or os.defpath).split(os.pathsep)
    return {**env, "PATH": os.pathsep.join(dict.fromkeys([*map(str, bin_dirs), *rest]))}
