"""The container sandbox against a real Docker/Podman (marker ``docker``).

Each test runs one or two tiny busybox containers; the module takes a few seconds.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import pytest
import trio

from tsukud.sandbox.image import build_busybox_rootfs, find_busybox, import_image
from tsukud.sandbox.runtime import (
    ROLE_LABEL,
    ContainerRuntime,
    ImageMissing,
    RunSpec,
    labelled_containers,
)

pytestmark = pytest.mark.docker


@pytest.fixture
def image(busybox_image: str) -> str:
    """These isolation checks use busybox's applets (``cp /bin/busybox``): the static
    fallback image, which has the same isolation as the default one."""
    return busybox_image


def unique_label() -> tuple[str, str]:
    """A label unique to one test, so checks never see other tests' containers."""
    return "dev.tsuku.test", secrets.token_hex(6)


async def test_echo_returns_zero_and_output(runtime: ContainerRuntime, image: str) -> None:
    result = await runtime.run(RunSpec(image=image, command=["echo", "hi"], timeout_s=30))
    assert result.exit_code == 0
    assert result.output == b"hi\n"
    assert not result.timed_out
    assert not result.truncated
    assert result.ok
    assert 0 < result.duration_s < 30


async def test_nonzero_exit_and_stderr_propagate(runtime: ContainerRuntime, image: str) -> None:
    spec = RunSpec(image=image, command=["sh", "-c", "echo out; echo err >&2; exit 7"])
    result = await runtime.run(spec)
    assert result.exit_code == 7
    assert not result.ok
    assert b"out\n" in result.output
    assert b"err\n" in result.output


async def test_missing_command_is_exit_127(runtime: ContainerRuntime, image: str) -> None:
    result = await runtime.run(RunSpec(image=image, command=["/no/such/tool", "--version"]))
    assert result.exit_code == 127
    assert not result.timed_out


async def test_network_is_none(runtime: ContainerRuntime, image: str) -> None:
    script = "ls /sys/class/net; echo ---; cat /proc/net/dev"
    result = await runtime.run(RunSpec(image=image, command=["sh", "-c", script]))
    assert result.exit_code == 0, result.text
    interfaces, _, dev = result.text.partition("---\n")
    assert interfaces.split() == ["lo"]
    # /proc/net/dev: two header lines, then one line per interface.
    names = [line.split(":")[0].strip() for line in dev.splitlines()[2:] if line.strip()]
    assert names == ["lo"]


async def test_rootfs_read_only_tmp_writable_noexec(runtime: ContainerRuntime, image: str) -> None:
    script = (
        "touch /bin/evil 2>&1; echo bin=$?; "
        "touch /evil 2>&1; echo root=$?; "
        "echo data > /tmp/f && cat /tmp/f; echo tmp=$?; "
        "cp /bin/busybox /tmp/bb && /tmp/bb true; echo exec=$?"
    )
    result = await runtime.run(RunSpec(image=image, command=["sh", "-c", script]))
    text = result.text
    assert "bin=1" in text
    assert "root=1" in text
    assert "Read-only file system" in text
    assert "data\ntmp=0" in text
    assert "exec=0" not in text  # /tmp is mounted noexec


async def test_runs_as_nobody_without_capabilities(runtime: ContainerRuntime, image: str) -> None:
    script = (
        "id -u; id -g; grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status; "
        "grep NoNewPrivs /proc/self/status"
    )
    result = await runtime.run(RunSpec(image=image, command=["sh", "-c", script]))
    assert result.exit_code == 0, result.text
    lines = result.text.splitlines()
    assert lines[0] == "65534"
    assert lines[1] == "65534"
    caps = {line.split(":")[0]: line.split(":")[1].strip() for line in lines[2:5]}
    assert caps == {
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
    }
    assert lines[5].split() == ["NoNewPrivs:", "1"]


async def test_limits_are_applied(runtime: ContainerRuntime, image: str) -> None:
    label = unique_label()
    spec = RunSpec(
        image=image,
        command=["sleep", "30"],
        labels=dict([label]),
        memory_bytes=256 * 1024 * 1024,
        pids_limit=64,
        timeout_s=30,
    )
    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.run, spec)
        ids: list[str] = []
        with trio.fail_after(10):
            while not ids:
                await trio.sleep(0.1)
                ids = await runtime.list_containers("=".join(label))
        info = await runtime.inspect_container(ids[0])
        nursery.cancel_scope.cancel()
    host = info["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["IpcMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["Memory"] == 256 * 1024 * 1024
    assert host["NanoCpus"] == 2_000_000_000
    assert host["PidsLimit"] == 64
    assert host["CapDrop"] == ["ALL"]
    assert "no-new-privileges" in host["SecurityOpt"]
    assert info["Config"]["User"] == "65534:65534"
    assert info["Config"]["Labels"]["dev.tsuku.role"] == "validation"
    assert await runtime.list_containers("=".join(label)) == []


@pytest.fixture
def stage(tmp_path: Path) -> Path:
    """A host directory with a verify script, readable by uid 65534."""
    tmp_path.chmod(0o755)
    script = tmp_path / "verify.sh"
    script.write_text('#!/bin/sh\necho from-script "$@"\n')
    script.chmod(0o755)
    return tmp_path


async def test_read_only_mount_visible_not_writable(
    runtime: ContainerRuntime, image: str, stage: Path
) -> None:
    spec = RunSpec(
        image=image,
        command=["sh", "-c", "/stage/verify.sh 1.2.3; touch /stage/new 2>&1; echo write=$?"],
        mounts=[(stage, "/stage", True)],
    )
    result = await runtime.run(spec)
    assert "from-script 1.2.3" in result.text
    assert "write=1" in result.text
    assert "Read-only file system" in result.text
    assert sorted(p.name for p in stage.iterdir()) == ["verify.sh"]  # noqa: ASYNC240


async def test_timeout_kills_and_removes(runtime: ContainerRuntime, image: str) -> None:
    label = unique_label()
    spec = RunSpec(image=image, command=["sleep", "100"], timeout_s=1, labels=dict([label]))
    with trio.fail_after(20):
        result = await runtime.run(spec)
    assert result.timed_out
    assert not result.ok
    assert result.exit_code != 0
    assert 1 <= result.duration_s < 15
    assert await runtime.list_containers("=".join(label)) == []


async def test_container_removed_after_run(runtime: ContainerRuntime, image: str) -> None:
    label = unique_label()
    await runtime.run(RunSpec(image=image, command=["true"], labels=dict([label])))
    assert await runtime.list_containers("=".join(label)) == []


async def test_container_removed_on_cancellation(runtime: ContainerRuntime, image: str) -> None:
    label = unique_label()
    spec = RunSpec(image=image, command=["sleep", "100"], labels=dict([label]))
    with trio.move_on_after(1.5) as scope:
        await runtime.run(spec)
    assert scope.cancelled_caught
    assert await runtime.list_containers("=".join(label)) == []


async def test_remove_orphans(runtime: ContainerRuntime, image: str) -> None:
    label = unique_label()
    config = RunSpec(image=image, command=["true"], labels=dict([label])).container_config()
    # Leave a container behind on purpose, as a crashed daemon would.
    await runtime._call("create", runtime._impl.create, config, "tsuku-orphan-" + label[1])
    selector = "=".join(label)
    assert len(await runtime.list_containers(selector)) == 1
    assert len(await runtime.list_containers(ROLE_LABEL)) >= 1
    assert await runtime.remove_orphans(selector) == 1
    assert await runtime.list_containers(selector) == []
    assert await runtime.remove_orphans(selector) == 0


async def test_labelled_containers_without_aiodocker(
    runtime: ContainerRuntime, image: str, tmp_path: Path
) -> None:
    """The start-up check's plain HTTP request lists what aiodocker lists."""
    label = unique_label()
    selector = "=".join(label)
    assert await labelled_containers(runtime.endpoint, selector, 5) == []
    config = RunSpec(image=image, command=["true"], labels=dict([label])).container_config()
    await runtime._call("create", runtime._impl.create, config, "tsuku-orphan-" + label[1])
    try:
        listed = await labelled_containers(runtime.endpoint, selector, 5)
        assert listed == await runtime.list_containers(selector) and len(listed) == 1
    finally:
        await runtime.remove_orphans(selector)
    # Nobody behind the socket, or an endpoint it cannot ask: no answer, at once.
    with trio.fail_after(2):
        assert await labelled_containers(f"unix://{tmp_path}/none.sock", selector, 5) is None
        assert await labelled_containers("https://127.0.0.1:1", selector, 5) is None


async def test_output_is_capped_keeping_the_tail(runtime: ContainerRuntime, image: str) -> None:
    script = "i=0; while [ $i -lt 400 ]; do echo line-$i; i=$((i+1)); done"
    spec = RunSpec(image=image, command=["sh", "-c", script], output_cap=1000)
    result = await runtime.run(spec)
    assert result.exit_code == 0
    assert result.truncated
    assert result.output.startswith(b"[tsuku: output truncated")
    assert result.output.endswith(b"line-399\n")
    assert b"line-0\n" not in result.output
    assert len(result.output) < 1100


async def test_missing_image_raises(runtime: ContainerRuntime) -> None:
    with pytest.raises(ImageMissing) as info:
        await runtime.run(
            RunSpec(image="tsuku/no-such-image:" + secrets.token_hex(4), command=["true"])
        )
    assert "scripts/dev setup" in info.value.hint


async def test_image_import_from_busybox(runtime: ContainerRuntime) -> None:
    busybox = find_busybox()
    if busybox is None:
        pytest.skip("no static busybox on this host (apt-get install busybox-static)")
    name = f"tsuku/test-import-{secrets.token_hex(4)}:t"
    tar_bytes = await trio.to_thread.run_sync(build_busybox_rootfs, busybox)
    try:
        await import_image(runtime, tar_bytes, name)
        assert await runtime.image_exists(name)
        result = await runtime.run(
            RunSpec(image=name, command=["sh", "-c", "echo $PATH; cat /etc/passwd; env true"])
        )
        assert result.exit_code == 0, result.text
        assert "/bin" in result.text.splitlines()[0]
        assert "nobody:x:65534:65534:" in result.text
    finally:
        await runtime.remove_image(name)
    assert not await runtime.image_exists(name)


async def test_ping_reports_version(runtime: ContainerRuntime) -> None:
    version = await runtime.ping()
    assert version.split()[0] in {"Docker", "Podman"}
    assert runtime.server_version
