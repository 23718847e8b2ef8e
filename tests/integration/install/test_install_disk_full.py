"""A full disk during an install is reported as a full disk (``disk_full``, exit 29, the
path and the space left), never as a truncated download or a bug, and leaves nothing.

The tool directory is a real 1 MiB tmpfs: downloads and extraction both happen in its
staging directory, so each of them runs out of space there.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Tsuku
from tests.fakes.github import FakeGitHub
from tests.fakes.releases import FakeAsset, FakeRelease, FakeRepo, archive, script
from tests.integration.install.conftest import installed
from tsukud.recipe.model import ArchiveFormat

MiB = 1024 * 1024
_FILLER = b"0123456789abcdef" * (3 * MiB // 16)


@contextlib.contextmanager
def small_disk(where: Path, size: str = "1m") -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def _recipe(name: str, action: str, asset: str, extra: str) -> str:
    return (
        f'[metadata]\nname = "{name}"\n\n[[steps]]\naction = "{action}"\n'
        f'repo = "k1/{name}"\nasset_pattern = "{asset}"\n{extra}\n'
    )


def _member_big() -> dict[str, tuple[bytes, int]]:
    # A few KiB compressed, 3 MiB once unpacked (not zeros: those could be sparse).
    return {"big/tool": (_FILLER, 0o755), "big/README": (b"x", 0o644)}


CASES = {
    # (action, asset name, asset bytes, recipe lines): which write runs out of space
    "download": (
        "github_file",
        "tool",
        lambda: os.urandom(3 * MiB),
        'binary = "tool"',
    ),
    "streamed tar extraction": (
        "github_archive",
        "tool.tar.gz",
        lambda: archive(ArchiveFormat.TAR_GZ, _member_big()),
        'binaries = ["tool"]\nstrip_dirs = 1',
    ),
    "zip extraction": (
        "github_archive",
        "tool.zip",
        lambda: archive(ArchiveFormat.ZIP, _member_big()),
        'binaries = ["tool"]\nstrip_dirs = 1',
    ),
    "single-file extraction": (
        "github_archive",
        "tool.gz",
        lambda: archive(ArchiveFormat.GZ, {"tool": (_FILLER, 0o755)}),
        'binaries = ["tool"]',
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_full_disk_is_reported_as_such(inst: Tsuku, world: FakeGitHub, case: str) -> None:
    if os.geteuid() != 0:
        pytest.fail("mounting a tmpfs needs root (the CI container runs as root)")
    action, asset, data, lines = CASES[case]
    name = "full" + str(list(CASES).index(case))
    world.add_repo(FakeRepo(f"k1/{name}", [FakeRelease("v1.0.0", [FakeAsset(asset, data())])]))
    (inst.home / "recipes").mkdir(exist_ok=True)
    (inst.home / "recipes" / f"{name}.toml").write_text(_recipe(name, action, asset, lines))
    with small_disk(inst.home / "tools") as tools:
        cp = inst.ctl("install", name)
        assert cp.returncode == 29, (case, cp.returncode, cp.stderr)
        assert "no space left" in cp.stderr and str(tools) in cp.stderr, cp.stderr
        assert "free now" in cp.stderr, cp.stderr
        for wrong in ("truncated", "bug in tsuku", "corrupt"):
            assert wrong not in cp.stderr, (wrong, cp.stderr)
        # The staging directory is gone (renamed to .trash-*, deleted in the background).
        assert [p for p in tools.iterdir() if not p.name.startswith(".trash-")] == []
        # Space comes back: the same install works at once (a small tool).
        world.add_repo(
            FakeRepo("k1/small", [FakeRelease("v1.0.0", [FakeAsset("tool", script("tool", "1"))])])
        )
        (inst.home / "recipes" / "small.toml").write_text(
            _recipe("small", "github_file", "tool", 'binary = "tool"')
        )
        inst.ctl("install", "small", check=True)
        assert set(installed(inst)) == {"small"}
        inst.ctl("remove", "small", check=True)
