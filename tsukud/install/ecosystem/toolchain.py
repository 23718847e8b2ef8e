"""Finding an ecosystem's toolchain on PATH.

A missing toolchain is the user's to install (tsuku does not bootstrap language
runtimes), so the error says exactly which program is missing, the Debian package that
provides it and the upstream way to get it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from tsukud.errors import TsukuError
from tsukud.registries.ecosystems import Toolchain

__all__ = ["Toolchain", "ToolchainMissing", "find"]


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
