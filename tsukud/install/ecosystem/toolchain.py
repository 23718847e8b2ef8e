"""Finding an ecosystem's toolchain on PATH.

A missing toolchain is the user's to install (tsuku does not bootstrap language
runtimes), so the error says exactly which program is missing, the Debian package that
provides it and the upstream way to get it.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from tsukud.errors import TsukuError


class ToolchainMissing(TsukuError):
    code = "toolchain_missing"


@dataclass(frozen=True)
class Toolchain:
    """One program an ecosystem action runs (``npm``, ``python3``, ``cargo``, ...)."""

    program: str
    ecosystem: str  # what it is for, in words: "npm packages"
    debian_package: str
    upstream: str  # how to get it without Debian
    # Run with these arguments, it must exit 0 (python3 without the venv module does not).
    probe: tuple[str, ...] = ()

    def hint(self) -> str:
        return (
            f"On Debian or Ubuntu: sudo apt-get install {self.debian_package}. "
            f"Otherwise: {self.upstream}. Then run the command again."
        )


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


NPM = Toolchain(
    program="npm",
    ecosystem="npm packages",
    debian_package="npm",
    upstream="install Node.js (which includes npm) from https://nodejs.org/en/download",
)
PYTHON = Toolchain(
    program="python3",
    ecosystem="PyPI packages (a venv per tool)",
    debian_package="python3-venv",
    upstream="install Python 3 from https://www.python.org/downloads/",
    probe=("-c", "import venv, ensurepip"),
)
CARGO = Toolchain(
    program="cargo",
    ecosystem="Rust crates",
    debian_package="cargo",
    upstream="install Rust with rustup from https://rustup.rs",
)
GEM = Toolchain(
    program="gem",
    ecosystem="Ruby gems",
    debian_package="ruby",
    upstream="install Ruby from https://www.ruby-lang.org/en/downloads/",
)
GO = Toolchain(
    program="go",
    ecosystem="Go modules",
    debian_package="golang-go",
    upstream="install Go from https://go.dev/dl/",
)


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
