"""The demo's tiny programs are what binfmt and the kernel take them for."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.sandbox.conftest import unavailable
from tsukud import binfmt
from tsukud.recipe.platform import host_platform
from tsukud.testing.tiny_elf import program
from tsukud.validation.validator import binfmt_handler_registered


@pytest.mark.parametrize("arch", ["amd64", "arm64"])
def test_a_tiny_program_is_a_static_executable_that_prints_its_line(
    arch: str, tmp_path: Path
) -> None:
    data = program(arch, "stern v1.32.0")
    info = binfmt.inspect(data)
    assert (info.kind, info.os, info.archs, info.executable, info.static) == (
        "elf",
        "linux",
        (arch,),
        True,
        True,
    )
    assert binfmt.platform_problem(info, "linux", arch, mode=0o755) is None
    path = tmp_path / "stern"
    path.write_bytes(data)
    os.chmod(path, 0o755)
    if arch != host_platform().arch and not binfmt_handler_registered(arch):
        unavailable(f"no qemu binfmt handler for {arch} (bash scripts/dev setup registers it)")
    cp = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
    assert (cp.returncode, cp.stdout) == (0, "stern v1.32.0\n")
