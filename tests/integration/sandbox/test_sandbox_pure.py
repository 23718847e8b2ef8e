"""Sandbox logic that needs no container runtime: endpoints, specs, rootfs, output cap."""

from __future__ import annotations

import io
import socket
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

from tsukud.errors import SandboxError
from tsukud.sandbox.image import build_busybox_rootfs, find_busybox, is_static_elf
from tsukud.sandbox.runtime import (
    ImageMissing,
    RunSpec,
    RuntimeUnavailable,
    _cap_output,
    _TailBuffer,
    candidate_endpoints,
    choose_endpoint,
    find_endpoint,
    open_runtime,
)


async def test_docker_host_is_honoured() -> None:
    env = {"DOCKER_HOST": "tcp://127.0.0.1:2375", "HOME": "/nonexistent"}
    assert candidate_endpoints(env) == ["tcp://127.0.0.1:2375"]
    assert await find_endpoint(env) == "tcp://127.0.0.1:2375"
    env = {"DOCKER_HOST": "unix:///some/where.sock"}
    assert await find_endpoint(env) == "unix:///some/where.sock"


def test_candidate_order_without_docker_host() -> None:
    env = {"HOME": "/home/u", "XDG_RUNTIME_DIR": "/run/user/1000", "DOCKER_HOST": ""}
    assert candidate_endpoints(env) == [  # Podman first: rootless by default
        "unix:///run/user/1000/podman/podman.sock",
        "unix:///run/podman/podman.sock",
        "unix:///var/run/docker.sock",
        "unix:///home/u/.docker/run/docker.sock",
        "unix:///home/u/.colima/default/docker.sock",
    ]
    # Without XDG_RUNTIME_DIR the rootless podman socket is not a candidate.
    assert candidate_endpoints({"HOME": "/h"})[0] == "unix:///run/podman/podman.sock"


async def test_podman_is_chosen_when_both_answer_and_a_stale_socket_is_passed_by() -> None:
    """Issue 29, point 14: with Podman's rootless socket and Docker's both answering,
    Podman is used and Docker named as passed over; a Podman socket left by a stopped
    service (nothing listening) does not win over an engine that answers."""
    with tempfile.TemporaryDirectory(dir="/tmp") as run_dir:  # short path: AF_UNIX limit
        podman = Path(run_dir, "podman", "podman.sock")
        podman.parent.mkdir()
        docker = Path(run_dir, ".docker", "run", "docker.sock")
        docker.parent.mkdir(parents=True)
        env = {"HOME": run_dir, "XDG_RUNTIME_DIR": run_dir}
        with socket.socket(socket.AF_UNIX) as p_sock, socket.socket(socket.AF_UNIX) as d_sock:
            p_sock.bind(str(podman))
            d_sock.bind(str(docker))
            d_sock.listen()
            # Podman's socket exists but nothing listens: a stale file.
            choice = await choose_endpoint(env)
            assert choice.endpoint != f"unix://{podman}"
            assert choice.endpoint is not None and f"unix://{docker}" in (
                choice.endpoint,
                *choice.passed_over,
            )
            p_sock.listen()
            choice = await choose_endpoint(env)
            assert choice.endpoint == f"unix://{podman}" == await find_endpoint(env)
            assert f"unix://{docker}" in choice.passed_over


def _first_existing(candidates: list[str]) -> str | None:
    for url in candidates:
        if Path(url.removeprefix("unix://")).exists():
            return url
    return None


async def test_find_endpoint_finds_a_socket_in_home() -> None:
    with tempfile.TemporaryDirectory(dir="/tmp") as home:  # short path: AF_UNIX limit
        sock_path = Path(home, ".colima", "default", "docker.sock")
        sock_path.parent.mkdir(parents=True)
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(sock_path))
            env = {"HOME": home}
            found = await find_endpoint(env)
            # The system sockets come first when this host has one of them.
            assert found == _first_existing(candidate_endpoints(env))
            assert found is not None
            assert found.startswith("unix://")


async def test_unreachable_endpoint_is_typed_error() -> None:
    with pytest.raises(RuntimeUnavailable) as info:
        async with open_runtime("unix:///nonexistent/tsuku-test/docker.sock"):
            pass
    assert isinstance(info.value, SandboxError)
    assert "DOCKER_HOST" in info.value.hint
    assert info.value.retryable


async def test_unsupported_endpoint_scheme() -> None:
    with pytest.raises(RuntimeUnavailable, match="unsupported"):
        async with open_runtime("ssh://someone@somewhere"):
            pass


def test_error_codes_are_stable() -> None:
    assert RuntimeUnavailable.code == "sandbox_unavailable"
    assert ImageMissing.code == "sandbox_image_missing"
    assert "scripts/dev setup" in ImageMissing("x").hint


def test_spec_defaults_follow_the_isolation_contract(tmp_path: Path) -> None:
    spec = RunSpec(
        image="img",
        command=["tool", "--version"],
        mounts=[(tmp_path, "/stage", True)],
        env={"A": "1"},
        labels={"x": "y"},
    )
    config = spec.container_config()
    host = config["HostConfig"]
    assert config["Cmd"] == ["tool", "--version"]
    assert config["User"] == "65534:65534"
    assert config["Labels"] == {"x": "y", "dev.tsuku.role": "validation"}
    assert "A=1" in config["Env"]
    assert any(e.startswith("PATH=") for e in config["Env"])
    assert host["NetworkMode"] == "none"
    assert host["IpcMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["Tmpfs"] == {"/tmp": "rw,noexec,nosuid,size=64m"}
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["Memory"] == 2 * 1024**3
    assert host["NanoCpus"] == 2_000_000_000
    assert host["PidsLimit"] == 256
    assert host["Mounts"] == [
        {"Type": "bind", "Source": str(tmp_path), "Target": "/stage", "ReadOnly": True}
    ]
    assert spec.timeout_s == 300.0


def test_tail_buffer_and_cap() -> None:
    buf = _TailBuffer(10)
    for i in range(10_000):
        buf.feed(f"{i:05d}\n".encode())
    assert buf.total == 60_000
    assert buf.value() == b"09998\n09999\n"[-10:]
    out, truncated = _cap_output(buf.value(), buf.total, 10)
    assert truncated
    assert out.endswith(b"09999\n")
    assert b"59990 of 60000 bytes dropped" in out
    assert _cap_output(b"abc", 3, 10) == (b"abc", False)


def test_busybox_rootfs_layout(tmp_path: Path) -> None:
    fake = tmp_path / "busybox"
    fake.write_bytes(b"\x7fELF fake busybox")
    data = build_busybox_rootfs(fake, applets=["sh", "ls", "busybox", "env"])
    assert data == build_busybox_rootfs(fake, applets=["env", "ls", "sh"])  # deterministic
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = {m.name.removeprefix("./"): m for m in tar.getmembers()}
        assert members["bin/busybox"].isfile()
        assert members["bin/busybox"].mode == 0o755
        for applet in ("sh", "ls", "env"):
            assert members[f"bin/{applet}"].issym()
            assert members[f"bin/{applet}"].linkname == "busybox"
        assert members["usr/bin/env"].issym()
        assert members["tmp"].isdir()
        assert members["tmp"].mode == 0o1777
        passwd = tar.extractfile("etc/passwd")
        assert passwd is not None
        assert b"nobody:x:65534:65534:" in passwd.read()
        assert all(m.uid == 0 and m.gid == 0 for m in members.values())


def test_static_elf_detection() -> None:
    assert not is_static_elf(Path(__file__))
    busybox = find_busybox()
    if busybox is not None:
        assert is_static_elf(busybox)
    python = Path(sys.executable).resolve()
    if python.exists() and not is_static_elf(python):
        assert find_busybox() != python
