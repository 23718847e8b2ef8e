"""Container runtime adapter: the only module of tsuku that touches aiodocker and asyncio.

The daemon is trio; aiodocker is asyncio. :func:`open_runtime` opens a trio-asyncio loop
for the lifetime of one :class:`ContainerRuntime`, and every Docker API call is bridged
with ``trio_asyncio.aio_as_trio``. Callers only ever see trio-flavoured coroutines, the
frozen :class:`RunSpec` / :class:`RunResult` dataclasses and typed errors that subclass
:class:`tsukud.errors.SandboxError`.

Both Docker and Podman (its Docker-compatible API socket) are supported; the endpoint is
found by :func:`find_endpoint` (``DOCKER_HOST`` first, then the usual sockets, Podman's
before Docker's: rootless by default).

A validation run (:meth:`ContainerRuntime.run`) creates one container with every
isolation knob of the architecture's "Container validation" contract set (no network, no
IPC, read-only rootfs, tmpfs ``/tmp``, non-root user, all capabilities dropped,
no-new-privileges, memory/CPU/pids limits), waits for it with a timeout (then kills it),
collects its combined output with a size cap, and always removes the container, also
when the caller is cancelled.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import io
import os
import secrets
import stat
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import trio

from tsukud.config import CONTAINER_CPUS, CONTAINER_MEMORY_BYTES
from tsukud.errors import SandboxError
from tsukud.groups import single_leaf

__all__ = [
    "BUILD_IMAGE",
    "BUSYBOX_IMAGE",
    "DEBIAN_IMAGE",
    "DEFAULT_IMAGE",
    "DEFAULT_OUTPUT_CAP",
    "ROLE_LABEL",
    "ROLE_LABEL_KEY",
    "ROLE_LABEL_VALUE",
    "ContainerFailed",
    "ContainerRuntime",
    "EndpointChoice",
    "ImageMissing",
    "RunResult",
    "RunSpec",
    "RuntimeUnavailable",
    "candidate_endpoints",
    "choose_endpoint",
    "find_endpoint",
    "labelled_containers",
    "open_runtime",
]

P = ParamSpec("P")
T = TypeVar("T")

MiB = 1024**2

#: Label every tsuku validation container carries (orphans are found by it).
ROLE_LABEL_KEY = "dev.tsuku.role"
ROLE_LABEL_VALUE = "validation"
ROLE_LABEL = f"{ROLE_LABEL_KEY}={ROLE_LABEL_VALUE}"

#: The default validation image: a Debian minbase userland (glibc, coreutils, bash),
#: built offline with debootstrap and imported (``bash scripts/dev setup`` or
#: ``tsukuctl sandbox prepare``: :func:`tsukud.sandbox.image.prepare_debian_image`).
DEBIAN_IMAGE = "tsuku/validate-debian:local"
DEFAULT_IMAGE = DEBIAN_IMAGE

#: The build image: the Debian minbase with gcc, make, libc6-dev, patchelf, cmake, perl
#: and cpanminus. Builds from source (``configure_make``, ``cmake_build``,
#: ``cpan_install``'s cpanm) run in it, never on the host
#: (:func:`tsukud.sandbox.image.prepare_build_image`). The tag names its contents'
#: version: an image is built only when its tag is missing, so a machine holding an
#: older build image builds this one when the tag changes with what it carries.
BUILD_IMAGE = "tsuku/validate-build:local-v2"

#: The static fallback: the host's busybox-static alone. It cannot run glibc-linked
#: binaries, only static ones and scripts (:func:`tsukud.sandbox.image.prepare_busybox_image`).
BUSYBOX_IMAGE = "tsuku/validate-busybox:local"

#: Cap on the combined output kept from a run; the tail is kept.
DEFAULT_OUTPUT_CAP = 1 * MiB

#: PATH given to the container when the spec does not set one.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: How long cleanup calls (kill, remove) may take after a timeout or a cancellation.
_CLEANUP_TIMEOUT_S = 30.0

_CONTAINER_NAME_PREFIX = "tsuku-validate-"

# --------------------------------------------------------------------------- errors


class RuntimeUnavailable(SandboxError):
    """No Docker or Podman API answers (no socket, daemon down, permission denied)."""

    code = "sandbox_unavailable"


class ImageMissing(SandboxError):
    """The validation image is not present in the runtime's image store."""

    code = "sandbox_image_missing"


class ContainerFailed(SandboxError):
    """The runtime refused or failed an operation on a container or image."""

    code = "sandbox_failed"


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class RunSpec:
    """What to run in a validation container and under which limits.

    ``mounts`` are ``(host_path, container_path, read_only)`` bind mounts; the host path
    must exist. The defaults are the architecture's isolation contract: change them only
    to loosen a limit on purpose.
    """

    image: str
    command: Sequence[str]
    mounts: Sequence[tuple[str | os.PathLike[str], str, bool]] = ()
    network: str = "none"
    ipc: str = "none"
    read_only: bool = True
    tmpfs: Mapping[str, str] = field(
        default_factory=lambda: {"/tmp": "rw,noexec,nosuid,size=64m"}  # noqa: S108
    )
    user: str = "65534:65534"
    cap_drop: Sequence[str] = ("ALL",)
    security_opt: Sequence[str] = ("no-new-privileges",)
    memory_bytes: int = CONTAINER_MEMORY_BYTES
    nano_cpus: int = CONTAINER_CPUS * 1_000_000_000
    pids_limit: int = 256
    timeout_s: float = 300.0
    env: Mapping[str, str] = field(default_factory=dict)
    labels: Mapping[str, str] = field(default_factory=dict)
    workdir: str | None = None
    output_cap: int = DEFAULT_OUTPUT_CAP

    def container_config(self) -> dict[str, Any]:
        """The Docker Engine API ``POST /containers/create`` body for this spec."""
        env = dict(self.env)
        env.setdefault("PATH", DEFAULT_PATH)
        labels = dict(self.labels)
        labels[ROLE_LABEL_KEY] = ROLE_LABEL_VALUE
        host_config: dict[str, Any] = {
            "NetworkMode": self.network,
            "IpcMode": self.ipc,
            "ReadonlyRootfs": self.read_only,
            "Tmpfs": dict(self.tmpfs),
            "CapDrop": list(self.cap_drop),
            "SecurityOpt": list(self.security_opt),
            "Memory": self.memory_bytes,
            # Same as Memory: no swap on top of the memory limit.
            "MemorySwap": self.memory_bytes,
            "NanoCpus": self.nano_cpus,
            "PidsLimit": self.pids_limit,
            "Mounts": [
                {
                    "Type": "bind",
                    "Source": os.fspath(host),
                    "Target": target,
                    "ReadOnly": read_only,
                }
                for host, target, read_only in self.mounts
            ],
            "AutoRemove": False,
            "Privileged": False,
        }
        config: dict[str, Any] = {
            "Image": self.image,
            "Cmd": list(self.command),
            "Env": [f"{k}={v}" for k, v in sorted(env.items())],
            "Labels": labels,
            "User": self.user,
            "Tty": False,
            "OpenStdin": False,
            "AttachStdin": False,
            "AttachStdout": False,
            "AttachStderr": False,
            "NetworkDisabled": self.network == "none",
            "HostConfig": host_config,
        }
        if self.workdir is not None:
            config["WorkingDir"] = self.workdir
        return config


@dataclass(frozen=True)
class RunResult:
    """Outcome of one validation run.

    ``output`` is stdout and stderr interleaved as the runtime recorded them, capped to
    the spec's ``output_cap``: when longer, the tail is kept behind a marker line and
    ``truncated`` is set. ``exit_code`` is the container's (137 after a timeout kill).
    """

    exit_code: int
    output: bytes
    duration_s: float
    timed_out: bool
    truncated: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")


# --------------------------------------------------------------------------- endpoint


def candidate_endpoints(env: Mapping[str, str] | None = None) -> list[str]:
    """Endpoints to try, in order, as ``unix://`` or ``tcp://`` URLs (pure: no I/O).

    ``DOCKER_HOST``, when set and non-empty, is the only candidate: the user asked for it.
    Otherwise Podman's sockets come first (rootless, then the system's): Podman runs
    containers without a root daemon by default, so when both answer it is the one
    that gives untrusted builds the least.
    """
    env = os.environ if env is None else env
    docker_host = env.get("DOCKER_HOST", "").strip()
    if docker_host:
        return [docker_host]
    home = Path(env["HOME"]) if env.get("HOME") else Path.home()
    paths: list[Path] = []
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg:
        paths.append(Path(xdg) / "podman" / "podman.sock")
    paths += [
        Path("/run/podman/podman.sock"),
        Path("/var/run/docker.sock"),
        home / ".docker" / "run" / "docker.sock",
        home / ".colima" / "default" / "docker.sock",
    ]
    return [f"unix://{p}" for p in paths]


def _is_socket(path: str) -> bool:
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


#: How long a socket may take to accept a connection before the next is tried.
ANSWER_S = 0.5


async def _accepts(path: str) -> bool:
    """Whether something listens on the socket (a stale file left by a stopped engine
    refuses the connection at once)."""
    with trio.move_on_after(ANSWER_S):
        try:
            stream = await trio.open_unix_socket(path)
        except OSError:
            return False
        await stream.aclose()
        return True
    return False


@dataclasses.dataclass(frozen=True)
class EndpointChoice:
    """Which endpoint validation uses, and why: ``sandbox status`` says so."""

    endpoint: str | None
    reason: str  # "DOCKER_HOST", "the first that answers", "none answers"
    passed_over: tuple[str, ...] = ()  # later candidates that answer too


async def choose_endpoint(env: Mapping[str, str] | None = None) -> EndpointChoice:
    """``DOCKER_HOST`` as given; otherwise the first of the usual sockets (Podman's
    first) that accepts a connection, with the others that do; when none accepts, the
    first that exists, so the error names it; None when there is no socket at all."""
    await trio.lowlevel.checkpoint()
    candidates = candidate_endpoints(env)
    env = os.environ if env is None else env
    if env.get("DOCKER_HOST", "").strip():
        return EndpointChoice(candidates[0], "DOCKER_HOST")
    existing = [u for u in candidates if _is_socket(u.removeprefix("unix://"))]
    answering = [u for u in existing if await _accepts(u.removeprefix("unix://"))]
    if answering:
        return EndpointChoice(answering[0], "the first that answers", tuple(answering[1:]))
    return EndpointChoice(existing[0] if existing else None, "none answers")


async def find_endpoint(env: Mapping[str, str] | None = None) -> str | None:
    """The container API endpoint to use, or ``None`` when none is found
    (:func:`choose_endpoint`). Whether it speaks the API is checked by
    :func:`open_runtime`."""
    return (await choose_endpoint(env)).endpoint


_SUPPORTED_SCHEMES = ("unix://", "tcp://", "http://", "https://")


#: ``labelled_containers`` reads at most this much of the runtime's answer.
_LIST_CAP = 4 * MiB


async def labelled_containers(endpoint: str, label: str, within_s: float) -> list[str] | None:
    """Ids of the containers carrying ``label``, asked with one plain HTTP request.

    With trio alone, no aiodocker: the daemon checks for orphans at every start, and
    nearly always there are none, so it imports and opens the real client only when
    there is something to remove. ``None``: no answer within ``within_s`` (no engine
    behind the socket, an ``https`` endpoint, an answer we cannot read).
    """
    import json
    from urllib.parse import urlencode, urlsplit

    query = urlencode({"all": "1", "filters": json.dumps({"label": [label]})})
    request = f"GET /containers/json?{query} HTTP/1.0\r\nHost: docker\r\n\r\n".encode()
    url = urlsplit(endpoint)
    data = bytearray()
    with trio.move_on_after(within_s):
        try:
            if url.scheme == "unix":
                stream: trio.abc.Stream = await trio.open_unix_socket(url.path)
            elif url.scheme in ("tcp", "http") and url.hostname:
                stream = await trio.open_tcp_stream(url.hostname, url.port or 2375)
            else:
                return None
            async with stream:
                await stream.send_all(request)
                while chunk := await stream.receive_some(65536):
                    data += chunk
                    if len(data) > _LIST_CAP:
                        return None
        except (OSError, ValueError, trio.BrokenResourceError):
            return None
        head, _, body = bytes(data).partition(b"\r\n\r\n")
        if head.split(b" ", 2)[1:2] != [b"200"]:
            return None
        try:
            listed = json.loads(body)
            return [str(c["Id"]) for c in listed]
        except (ValueError, TypeError, KeyError):
            return None
    return None


# --------------------------------------------------------------------------- asyncio side
#
# Everything in _AioDocker is asyncio-flavoured and must only be called through
# ContainerRuntime._aio (trio_asyncio.aio_as_trio). aiodocker's public API decodes logs
# to text and its import_image is `docker load`; for raw bytes and `docker import` we use
# its request helper `_query`, confined here.


class _AioDocker:
    def __init__(self, endpoint: str) -> None:
        self.endpoint = endpoint
        self.docker: Any = None

    async def open(self) -> None:
        import aiodocker
        import aiohttp

        # Connect timeout only: long calls (wait, logs, import) are bounded by trio.
        timeout = aiohttp.ClientTimeout(total=None, connect=10.0, sock_connect=10.0)
        self.docker = aiodocker.Docker(url=self.endpoint, timeout=timeout)

    async def close(self) -> None:
        if self.docker is not None:
            await self.docker.close()
            self.docker = None

    async def version(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.docker.version()
        return result

    async def image_exists(self, name: str) -> bool:
        from aiodocker.exceptions import DockerError

        try:
            await self.docker.images.inspect(name)
        except DockerError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def remove_image(self, name: str, force: bool) -> bool:
        from aiodocker.exceptions import DockerError

        try:
            await self.docker.images.delete(name, force=force)
        except DockerError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    async def create(self, config: dict[str, Any], name: str) -> str:
        container = await self.docker.containers.create(config, name=name)
        container_id: str = container.id
        return container_id

    async def start(self, container_id: str) -> None:
        await self.docker.containers.container(container_id).start()

    async def wait(self, container_id: str) -> int:
        result = await self.docker.containers.container(container_id).wait()
        return int(result.get("StatusCode", -1))

    async def kill(self, container_id: str) -> None:
        from aiodocker.exceptions import DockerError

        try:
            await self.docker.containers.container(container_id).kill(signal="SIGKILL")
        except DockerError as exc:
            # 409: not running any more (exited on its own meanwhile); 404: gone.
            if exc.status not in (404, 409):
                raise

    async def remove(self, name_or_id: str) -> bool:
        from aiodocker.exceptions import DockerError

        try:
            await self.docker.containers.container(name_or_id).delete(force=True, v=True)
        except DockerError as exc:
            if exc.status == 404:
                return False
            # 409 "removal already in progress" counts as removed.
            if exc.status == 409 and "in progress" in str(exc.message):
                return True
            raise
        return True

    async def inspect(self, container_id: str) -> dict[str, Any]:
        container = await self.docker.containers.get(container_id)
        info: dict[str, Any] = container._container
        return info

    async def list_ids(self, label: str) -> list[str]:
        containers = await self.docker.containers.list(all=True, filters={"label": [label]})
        return [str(c.id) for c in containers]

    async def logs(self, container_id: str, cap: int) -> tuple[bytes, int]:
        """Combined stdout+stderr: (tail of at most ``cap`` bytes, total bytes seen)."""
        tail = _TailBuffer(cap)
        async with self.docker._query(
            f"containers/{container_id}/logs",
            method="GET",
            params={"stdout": True, "stderr": True, "follow": False},
            timeout=None,
        ) as response:
            content = response.content
            raw = response.headers.get("Content-Type", "") == "application/vnd.docker.raw-stream"
            if raw:
                # A TTY container (not ours) or a runtime that does not multiplex.
                async for chunk in content.iter_chunked(64 * 1024):
                    tail.feed(chunk)
                return tail.value(), tail.total
            while True:
                try:
                    header = await content.readexactly(8)
                except asyncio.IncompleteReadError:
                    break  # end of the stream
                length = int.from_bytes(header[4:8], "big")
                remaining = length
                while remaining:
                    chunk = await content.read(min(remaining, 64 * 1024))
                    if not chunk:
                        remaining = 0
                        break
                    remaining -= len(chunk)
                    tail.feed(chunk)
        return tail.value(), tail.total

    async def import_rootfs(self, tar: bytes | Path, repo: str, tag: str, changes: str) -> None:
        import json

        params: dict[str, str] = {"fromSrc": "-", "repo": repo, "tag": tag}
        if changes:
            params["changes"] = changes
        # A rootfs of a hundred megabytes is streamed from its file, not held in memory.
        with contextlib.ExitStack() as files:
            data = (
                io.BytesIO(tar) if isinstance(tar, bytes) else files.enter_context(tar.open("rb"))
            )
            async with self.docker._query(
                "images/create",
                method="POST",
                params=params,
                data=data,
                headers={"Content-Type": "application/x-tar"},
                timeout=None,
            ) as response:
                body = await response.read()
        # The answer is a stream of JSON objects; an error arrives as {"error": ...}.
        for line in body.decode("utf-8", errors="replace").splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and item.get("error"):
                raise ContainerFailed(f"image import failed: {item['error']}")


class _TailBuffer:
    """Keeps the last ``cap`` bytes fed to it, and counts them all."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, cap)
        self.total = 0
        self._chunks: list[bytes] = []
        self._size = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        self._chunks.append(chunk)
        self._size += len(chunk)
        if self._size > 2 * self.cap + 64 * 1024:
            self._compact()

    def _compact(self) -> None:
        data = b"".join(self._chunks)
        data = data[-self.cap :] if self.cap else b""
        self._chunks = [data]
        self._size = len(data)

    def value(self) -> bytes:
        self._compact()
        return self._chunks[0] if self._chunks else b""


def _cap_output(tail: bytes, total: int, cap: int) -> tuple[bytes, bool]:
    """Mark a truncated output; ``tail`` holds at most ``cap`` bytes of ``total``."""
    if total <= cap:
        return tail, False
    marker = f"[tsuku: output truncated, first {total - len(tail)} of {total} bytes dropped]\n"
    return marker.encode() + tail, True


# --------------------------------------------------------------------------- trio side


class ContainerRuntime:
    """A connected container runtime (Docker or Podman). Get one from :func:`open_runtime`.

    All methods are trio-flavoured and safe to call concurrently.
    """

    def __init__(self, endpoint: str, loop: Any, aio: _AioDocker) -> None:
        self.endpoint = endpoint
        self._loop = loop
        self._impl = aio
        self.server_version = ""
        self.server_name = ""
        # Added to every container this runtime runs: the daemon sets an owner label so
        # that its orphan clean-up never touches another user's (or daemon's) containers
        # on a shared container engine.
        self.labels: dict[str, str] = {}

    async def _aio(self, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs) -> T:
        import trio_asyncio

        result: T = await trio_asyncio.aio_as_trio(fn, loop=self._loop)(*args, **kwargs)
        return result

    async def _call(
        self, what: str, fn: Callable[P, Awaitable[T]], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Bridge one call and translate aiodocker/aiohttp errors into typed errors."""
        try:
            return await self._aio(fn, *args, **kwargs)
        except SandboxError:
            raise
        except trio.Cancelled:
            raise
        except Exception as exc:
            raise _translate(exc, what, self.endpoint) from exc

    async def ping(self) -> str:
        """Ask the runtime for its version; returns e.g. ``"Docker 24.0.7 (API 1.43)"``."""
        info = await self._call("ping", self._impl.version)
        version = str(info.get("Version", "?"))
        api = str(info.get("ApiVersion", "?"))
        name = "Docker"
        for component in info.get("Components") or []:
            if isinstance(component, dict) and "podman" in str(component.get("Name", "")).lower():
                name = "Podman"
        self.server_version = version
        self.server_name = name
        return f"{name} {version} (API {api})"

    async def image_exists(self, name: str) -> bool:
        return await self._call("image inspect", self._impl.image_exists, name)

    async def remove_image(self, name: str, *, force: bool = True) -> bool:
        """Remove an image; ``False`` when it did not exist."""
        return await self._call("image remove", self._impl.remove_image, name, force)

    async def import_rootfs(
        self, tar: bytes | Path, name: str, *, changes: Sequence[str] = ()
    ) -> None:
        """``docker import``: make image ``name`` (``repo[:tag]``) from a rootfs tarball
        (its bytes, or the path of a tar file, which is streamed).

        ``changes`` are Dockerfile instructions to apply (at most one is portable: the
        Engine API takes a single ``changes`` query value through aiodocker).
        """
        repo, tag = _split_image_name(name)
        if len(changes) > 1:
            raise ValueError("import_rootfs supports at most one change instruction")
        await self._call(
            "image import",
            self._impl.import_rootfs,
            tar,
            repo,
            tag,
            changes[0] if changes else "",
        )

    async def list_containers(self, label: str = ROLE_LABEL) -> list[str]:
        """Ids of all containers (running or not) carrying ``label`` (``key=value``)."""
        return await self._call("container list", self._impl.list_ids, label)

    async def inspect_container(self, name_or_id: str) -> dict[str, Any]:
        """The runtime's ``GET /containers/{id}/json`` answer for a container."""
        return await self._call("container inspect", self._impl.inspect, name_or_id)

    async def remove_container(self, name_or_id: str) -> bool:
        """Force-remove a container; ``False`` when it did not exist."""
        return await self._call("container remove", self._impl.remove, name_or_id)

    async def remove_orphans(self, label: str = ROLE_LABEL) -> int:
        """Force-remove every container carrying ``label``; returns how many were removed.

        Meant for daemon start, when no validation of ours can be running.
        """
        removed = 0
        for container_id in await self.list_containers(label):
            if await self.remove_container(container_id):
                removed += 1
        return removed

    async def run(self, spec: RunSpec) -> RunResult:
        """Run ``spec`` to completion (or its timeout) and return what happened.

        The container is always removed afterwards, also on errors and cancellation.
        Raises :class:`ImageMissing` when the image is not present (never pulls).
        """
        name = _CONTAINER_NAME_PREFIX + secrets.token_hex(8)
        if self.labels:
            spec = dataclasses.replace(spec, labels={**spec.labels, **self.labels})
        config = spec.container_config()
        started = time.monotonic()
        try:
            try:
                container_id = await self._call("container create", self._impl.create, config, name)
            except ContainerFailed as exc:
                if exc.data.get("status") == 404 and "image" in exc.message.lower():
                    raise ImageMissing(
                        f"validation image {spec.image!r} is not present in the "
                        f"container runtime at {self.endpoint}"
                    ) from exc
                raise
            try:
                await self._call("container start", self._impl.start, container_id)
            except ContainerFailed as exc:
                # The command could not be executed at all: report it like a shell does
                # (127 not found, 126 not executable), as the verify command's failure.
                start_code = _start_failure_exit_code(exc.message)
                if start_code is None:
                    raise
                return RunResult(
                    exit_code=start_code,
                    output=(exc.message + "\n").encode(),
                    duration_s=time.monotonic() - started,
                    timed_out=False,
                )
            exit_code = -1
            timed_out = False
            with trio.move_on_after(spec.timeout_s) as scope:
                exit_code = await self._call("container wait", self._impl.wait, container_id)
            if scope.cancelled_caught:
                timed_out = True
                with trio.move_on_after(_CLEANUP_TIMEOUT_S) as kill_scope:
                    await self._call("container kill", self._impl.kill, container_id)
                    exit_code = await self._call("container wait", self._impl.wait, container_id)
                if kill_scope.cancelled_caught:
                    raise ContainerFailed(
                        f"container {name} did not stop within {_CLEANUP_TIMEOUT_S:.0f} s "
                        "of being killed after its timeout"
                    )
            duration = time.monotonic() - started
            tail, total = await self._call(
                "container logs", self._impl.logs, container_id, spec.output_cap
            )
            output, truncated = _cap_output(tail, total, spec.output_cap)
            return RunResult(
                exit_code=exit_code,
                output=output,
                duration_s=duration,
                timed_out=timed_out,
                truncated=truncated,
            )
        finally:
            # Removed by name: also covers a cancellation between create and its answer.
            # Best effort: orphans left by a failure here go at daemon start.
            with (
                trio.CancelScope(shield=True),
                trio.move_on_after(_CLEANUP_TIMEOUT_S),
                contextlib.suppress(Exception),
            ):
                await self._aio(self._impl.remove, name)


def _start_failure_exit_code(message: str) -> int | None:
    lowered = message.lower()
    if "executable file not found" in lowered or "no such file or directory" in lowered:
        return 127
    if "permission denied" in lowered or "exec format error" in lowered:
        return 126
    return None


def _split_image_name(name: str) -> tuple[str, str]:
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repo, tag = name.rsplit(":", 1)
        return repo, tag
    return name, "latest"


def _translate(exc: Exception, what: str, endpoint: str) -> SandboxError:
    from aiodocker.exceptions import DockerError

    if isinstance(exc, DockerError):
        status = int(exc.status)
        message = str(exc.message).strip()
        if status == 900:  # aiodocker: cannot connect
            return RuntimeUnavailable(
                f"cannot reach the container runtime at {endpoint}: {message}",
                endpoint=endpoint,
            )
        return ContainerFailed(
            f"{what} failed: [{status}] {message}", status=status, endpoint=endpoint
        )
    if isinstance(exc, OSError | TimeoutError):
        return RuntimeUnavailable(
            f"cannot reach the container runtime at {endpoint}: {exc}", endpoint=endpoint
        )
    name = type(exc).__module__ + "." + type(exc).__name__
    if name.startswith("aiohttp."):
        return RuntimeUnavailable(
            f"container runtime at {endpoint} failed during {what}: {exc}", endpoint=endpoint
        )
    return ContainerFailed(f"{what} failed: {type(exc).__name__}: {exc}", endpoint=endpoint)


@asynccontextmanager
async def open_runtime(
    endpoint: str | None = None, *, env: Mapping[str, str] | None = None
) -> AsyncIterator[ContainerRuntime]:
    """Connect to the container runtime and yield a ready :class:`ContainerRuntime`.

    ``endpoint`` defaults to :func:`find_endpoint`. The runtime is pinged before it is
    yielded, so a yielded runtime answered at least once. Raises
    :class:`RuntimeUnavailable` (with a hint) when nothing answers.
    """
    import trio_asyncio

    if endpoint is None:
        endpoint = await find_endpoint(env)
        if endpoint is None:
            raise RuntimeUnavailable(
                "no container runtime found: DOCKER_HOST is not set and none of "
                + ", ".join(candidate_endpoints(env))
                + " is a socket"
            )
    if not endpoint.startswith(_SUPPORTED_SCHEMES):
        raise RuntimeUnavailable(
            f"unsupported container runtime endpoint {endpoint!r}: "
            "use unix:///path/to/docker.sock or tcp://host:port",
            endpoint=endpoint,
        )
    # trio-asyncio's loop runs in nurseries, which wrap whatever crosses them (our own
    # errors, and the caller's from the `async with` body) in exception groups. Unwrap a
    # lone exception so that `except ImageMissing:` and the like work for callers.
    leaf: BaseException | None = None
    try:
        async with trio_asyncio.open_loop() as loop:
            impl = _AioDocker(endpoint)
            runtime = ContainerRuntime(endpoint, loop, impl)
            try:
                await runtime._call("connect", impl.open)
                await runtime.ping()
                yield runtime
            finally:
                # Closing a connection to a dead runtime may fail: nothing to do then.
                with (
                    trio.CancelScope(shield=True),
                    trio.move_on_after(5),
                    contextlib.suppress(Exception),
                ):
                    await runtime._aio(impl.close)
    except BaseExceptionGroup as group:
        leaf = single_leaf(group)
        if leaf is None:
            raise
    if leaf is not None:
        raise leaf
