"""``prepare_debian_image`` builds the default validation image from Debian's packages
(debootstrap, no container registry) with progress, and glibc programs run in it."""

from __future__ import annotations

import os
import secrets
import shutil

import pytest

from tests.integration.sandbox.conftest import unavailable
from tsukud.sandbox.image import prepare_debian_image
from tsukud.sandbox.runtime import ContainerRuntime, RunSpec

pytestmark = [pytest.mark.docker, pytest.mark.slow]


# Among the slowest tests (issue 26): debootstrap builds a whole Debian userland and imports
# it into Docker; slow set, scheduled first.
async def test_prepare_builds_a_glibc_userland_with_progress(runtime: ContainerRuntime) -> None:
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        unavailable("debootstrap and root are needed (bash scripts/dev setup installs it)")
    name = f"tsuku/validate-debian:test-{secrets.token_hex(4)}"
    heard: list[str] = []

    async def progress(message: str) -> None:
        heard.append(message)

    try:
        assert await prepare_debian_image(runtime, name, progress=progress) is True
        assert await prepare_debian_image(runtime, name, progress=progress) is False  # present
        assert heard[0].startswith("debootstrap --variant=minbase ")
        assert any(m.startswith("Extracting libc6") for m in heard)
        assert heard[-1].startswith(f"importing {name} (")
        res = await runtime.run(
            RunSpec(image=name, command=["sh", "-c", "ldd --version | head -1; ls /usr/share/doc"])
        )
        assert res.exit_code == 0, res.text
        assert "GLIBC" in res.text.upper() and res.text.strip().splitlines()[-1].startswith("ldd")
    finally:
        await runtime.remove_image(name)
