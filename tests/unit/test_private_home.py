"""``make_home_private``: umask 077, the home 0700, loose modes inside tightened, and
nothing outside the home touched through a symlink."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from tsukud.private_home import make_home_private


def mode(p: Path) -> int:
    return stat.S_IMODE(p.lstat().st_mode)


def test_loose_modes_are_tightened_and_symlinks_not_followed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "tools" / "age-1.2.0" / "bin").mkdir(parents=True)
    binary = home / "tools" / "age-1.2.0" / "bin" / "age"
    binary.write_text("#!/bin/sh\n")
    os.chmod(binary, 0o755)
    ledger = home / "tsuku.db-wal"
    ledger.write_text("")
    os.chmod(ledger, 0o644)
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours")
    os.chmod(outside, 0o644)
    (home / "link").symlink_to(outside)
    os.chmod(home, 0o755)
    old = os.umask(0o022)
    try:
        assert make_home_private(str(home)) == 6  # home, tools, age-1.2.0, bin, age, wal
        assert os.umask(0o077) == 0o077  # (set back to what it was)
        created = home / "new.txt"
        created.touch()  # under the daemon's umask
    finally:
        os.umask(old)
    assert mode(home) == 0o700 and mode(home / "tools") == 0o700
    assert mode(binary) == 0o700  # still the owner's to run
    assert mode(ledger) == 0o600
    assert mode(created) == 0o600
    assert mode(outside) == 0o644  # the symlink's target is not the home's


def test_a_missing_home_is_created_private(tmp_path: Path) -> None:
    home = tmp_path / "fresh" / ".tsuku"
    old = os.umask(0o022)
    try:
        assert make_home_private(str(home)) == 0
    finally:
        os.umask(old)
    assert mode(home) == 0o700


def test_the_persons_config_file_keeps_the_mode_they_gave_it(tmp_path: Path) -> None:
    """An editor's 0644 config.toml is not quietly made private at start: its keys are
    then unused, and the error says why, whether the daemon was running or not."""
    home = tmp_path / "home"
    home.mkdir()
    cfg = home / "config.toml"
    cfg.write_text("")
    os.chmod(cfg, 0o644)
    other = home / "tsuku.log"
    other.write_text("")
    os.chmod(other, 0o644)
    old = os.umask(0o022)
    try:
        make_home_private(str(home), leave=str(tmp_path / "home" / "." / "config.toml"))
    finally:
        os.umask(old)
    assert mode(cfg) == 0o644 and mode(other) == 0o600
