"""``scripts/dev setup`` puts tsukuctl and tsukud on PATH (``scripts/dev links`` is that
step alone): symlinks to this checkout's venv, never over a name that is taken."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = REPO / ".venv" / "bin"  # what `scripts/dev setup` made


def links(link_dir: Path) -> str:
    cp = subprocess.run(
        ["bash", str(REPO / "scripts" / "dev"), "links"],
        env={**os.environ, "TSUKU_LINK_DIR": str(link_dir)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return cp.stdout


def test_links_point_at_the_venv_and_run(tmp_path: Path) -> None:
    out = links(tmp_path)
    for name in ("tsukuctl", "tsukud"):
        assert os.readlink(tmp_path / name) == str(VENV_BIN / name)
        assert f"{tmp_path / name} -> {VENV_BIN / name}" in out
    version = subprocess.run(
        [str(tmp_path / "tsukuctl"), "--version"], capture_output=True, text=True, check=True
    )
    assert version.stdout.startswith("tsukuctl ")
    assert "(present)" in links(tmp_path)  # idempotent


def test_a_taken_name_is_left_alone_and_the_venv_named(tmp_path: Path) -> None:
    (tmp_path / "tsukuctl").write_text("#!/bin/sh\necho someone else's\n")
    (tmp_path / "tsukud").symlink_to(tmp_path / "gone")  # dangling: replaced
    out = links(tmp_path)
    assert (tmp_path / "tsukuctl").read_text() == "#!/bin/sh\necho someone else's\n"
    assert (
        f"is taken (-> {tmp_path / 'tsukuctl'}); this checkout's is {REPO}/.venv/bin/tsukuctl"
        in out
    )
    assert os.readlink(tmp_path / "tsukud") == f"{REPO}/.venv/bin/tsukud"
