"""RPC methods for the container sandbox: status, image preparation, a smoke run."""

from __future__ import annotations

import msgspec

from tsukud.errors import InvalidParams
from tsukud.rpc.registry import NoParams, method
from tsukud.rpc.server import Call
from tsukud.sandbox.service import SandboxStatus
from tsukud.services import Services


class Prepared(msgspec.Struct, frozen=True):
    image: str
    imported: bool  # False: the image was already there


class Checked(msgspec.Struct, frozen=True, kw_only=True):
    """``sandbox.check``: the probe's output and what it shows of the isolation."""

    exit_code: int
    output: str
    duration_s: float
    uid: str | None  # the user the probe ran as
    network_interfaces: list[str]
    rootfs_read_only: bool
    ok: bool


@method("sandbox.status", NoParams)
async def sandbox_status(s: Services, p: NoParams, call: Call) -> SandboxStatus:
    """Which runtime answers, its version, and whether the validation image is there."""
    return await s.sandbox.status()


class PrepareParams(msgspec.Struct, forbid_unknown_fields=True):
    force: bool = False
    busybox: bool = False  # the static-only fallback instead of Debian minbase
    build: bool = False  # the build image (builds from source) instead


@method("sandbox.prepare", PrepareParams)
async def sandbox_prepare(s: Services, p: PrepareParams, call: Call) -> Prepared:
    """Build the validation image offline: Debian minbase (debootstrap), busybox, or
    the build image."""
    sb = s.sandbox
    if p.busybox and p.build:
        raise InvalidParams(
            "busybox and build name two different images; prepare one at a time",
            hint="Run `tsukuctl sandbox prepare --build` and `--busybox` separately.",
        )

    async def progress(message: str) -> None:
        await call.progress({"stage": "preparing", "message": message})

    image, imported = await sb.prepare(
        force=p.force,
        busybox=p.busybox,
        build=p.build,
        progress=progress,
        workdir=s.home,
    )
    return Prepared(image, imported)


@method("sandbox.check", NoParams)
async def sandbox_check(s: Services, p: NoParams, call: Call) -> Checked:
    """Run a probe in the validation container with the full isolation settings."""
    from tsukud.sandbox.runtime import RunSpec

    sb = s.sandbox
    rt = await sb.runtime()
    probe = "id -u; ls /sys/class/net; touch /bin/x 2>/dev/null && echo rootfs-writable; echo ok"
    async with s.container_lock.hold(session=None):
        res = await rt.run(RunSpec(image=sb.image, command=["/bin/sh", "-c", probe], timeout_s=60))
    lines = res.text.split()
    return Checked(
        exit_code=res.exit_code,
        output=res.text,
        duration_s=round(res.duration_s, 3),
        uid=lines[0] if lines else None,
        network_interfaces=[x for x in lines[1:-1] if x != "rootfs-writable"],
        rootfs_read_only="rootfs-writable" not in lines,
        ok=res.exit_code == 0 and lines[-1:] == ["ok"],
    )
