"""Where the daemon binds: a directory it creates is 0700; one it finds must already be
private, and is never re-moded (``TSUKU_SOCKET=/tmp/x.sock`` must not chmod /tmp)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from tsukud.__main__ import bind_socket, private_socket_dir
from tsukud.errors import ConfigError


def mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_a_missing_directory_is_created_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        sock = bind_socket(tmp_path / "a" / "run" / "tsukud.sock")
    finally:
        os.umask(old)
    try:
        assert mode(tmp_path / "a" / "run") == 0o700
        assert mode(tmp_path / "a" / "run" / "tsukud.sock") == 0o600
    finally:
        sock.close()


def test_an_existing_private_directory_is_used_as_it_is(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    private_socket_dir(d)
    assert mode(d) == 0o700


@pytest.mark.parametrize("shared", [0o1777, 0o755, 0o710, 0o701])
def test_a_directory_open_to_others_is_refused_and_left_alone(tmp_path: Path, shared: int) -> None:
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(shared)
    with pytest.raises(ConfigError, match="is open to other users") as e:
        bind_socket(d / "x.sock")
    assert f"mode {shared:04o}" in e.value.message and "owned by you" in e.value.message
    assert "TSUKU_SOCKET" in e.value.hint
    assert mode(d) == shared  # never changed
    assert not (d / "x.sock").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a directory away")
def test_a_private_directory_of_another_user_is_refused(tmp_path: Path) -> None:
    d = tmp_path / "theirs"
    d.mkdir(mode=0o700)
    os.chown(d, 65534, 65534)
    with pytest.raises(ConfigError, match="owned by uid 65534"):
        private_socket_dir(d)
    assert mode(d) == 0o700


def test_a_file_where_the_directory_should_be_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(ConfigError, match="cannot create the socket's directory"):
        private_socket_dir(tmp_path / "f" / "run")
