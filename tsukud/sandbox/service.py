"""The daemon's one connection to the container runtime.

aiodocker and its asyncio loop are heavy to import and to open, so the runtime is opened
on first use and then held for the daemon's life by a task in the services nursery.
The first open also removes validation containers a previous daemon left behind: no
validation of ours can be running at that point. That first open is made at start, in
the background once the daemon is serving (:meth:`Sandbox.open_at_start`), when a
runtime answers; and the containers of this daemon are removed again at a clean stop.
"""

from __future__ import annotations

import hashlib
import importlib
import os
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import msgspec
import trio
from msgspec import UNSET, UnsetType

from tsukud import log
from tsukud.errors import SandboxError
from tsukud.progress import Say

if TYPE_CHECKING:
    from tsukud.events.store import EventStore
    from tsukud.sandbox.runtime import ContainerRuntime

# Runs a task in the daemon's services nursery (``nursery.start``): the runtime
# connection is held there, for the daemon's life.
StartTask = Callable[[Callable[..., Awaitable[Any]]], Awaitable[Any]]


OWNER_LABEL_KEY = "dev.tsuku.owner"

#: How long start-up waits for a runtime to list this owner's containers before it
#: decides there is none (and imports nothing for it).
PROBE_S = 1.0
#: How long a clean stop spends removing this daemon's containers.
STOP_SWEEP_S = 5.0


def _import(*modules: str) -> None:
    for name in modules:
        importlib.import_module(name)


class SandboxStatus(msgspec.Struct, frozen=True, kw_only=True):
    """``sandbox.status``: the runtime that answers (its endpoint, version, how it was
    chosen and the sockets passed over), or why none does (``error``, ``hint``); and
    whether the validation image is there. What one answer lacks is not sent."""

    available: bool
    error: str | UnsetType = UNSET
    hint: str | UnsetType | None = UNSET
    endpoint: str | UnsetType = UNSET
    version: str | UnsetType = UNSET
    image: str
    image_present: bool | UnsetType = UNSET
    chosen_by: str | UnsetType = UNSET
    passed_over: list[str] | UnsetType = UNSET


class Sandbox:
    """The runtime connections, one per endpoint asked for.

    ``endpoint`` is read at each use: a request may name its own ``DOCKER_HOST``
    (the caller's environment), and gets that engine, while other requests keep the
    daemon's; empty means the usual Docker and Podman sockets.
    """

    def __init__(
        self,
        *,
        home: Path,
        image: Callable[[], str],
        store: EventStore,
        start: StartTask,
        endpoint: Callable[[], str] = lambda: "",
    ) -> None:
        key = f"{os.getuid()}:{home.resolve()}".encode()
        self.owner = hashlib.sha256(key).hexdigest()[:16]
        self._image = image
        self._store = store
        self._start = start
        self._endpoint = endpoint
        self._held: dict[str, tuple[ContainerRuntime, trio.CancelScope]] = {}
        self._lock = trio.Lock()

    @property
    def label(self) -> str:
        """``key=value`` of the label every container of this daemon's owner carries."""
        return f"{OWNER_LABEL_KEY}={self.owner}"

    @property
    def image(self) -> str:
        return self._image()

    async def runtime(self) -> ContainerRuntime:
        endpoint = self._endpoint().strip()
        async with self._lock:
            if endpoint in self._held:
                return self._held[endpoint][0]
            rt, scope = cast(
                "tuple[ContainerRuntime, trio.CancelScope]",
                await self._start(partial(self._hold, endpoint or None)),
            )
            # Only this daemon's containers: one engine may serve several users and
            # several TSUKU_HOMEs, whose validations must not be killed as "orphans".
            rt.labels[OWNER_LABEL_KEY] = self.owner
            await self._remove_orphans(rt)
            self._held[endpoint] = (rt, scope)
            return rt

    async def _remove_orphans(self, rt: ContainerRuntime) -> None:
        removed = await rt.remove_orphans(self.label)
        if removed:
            log.get().info("sandbox.orphans_removed", count=removed)
            await self._store.append("sandbox.orphans_removed", {"count": removed})

    async def open_at_start(self) -> None:
        """Remove a previous daemon's orphans, at start, in the background.

        Runs once the daemon serves. Asking whether there are any is one plain HTTP
        request; only when there are is the runtime opened (aiodocker imported, in a
        worker thread so requests keep being answered) and held, as a validation would.
        Without a runtime, or when its socket does not answer within :data:`PROBE_S`,
        nothing more happens (a later validation still opens it on first use).
        """
        try:
            await trio.to_thread.run_sync(_import, "tsukud.sandbox.runtime")
            from tsukud.sandbox.runtime import find_endpoint, labelled_containers

            endpoint = self._endpoint().strip() or await find_endpoint()
            if endpoint is None:
                return
            ours = await labelled_containers(endpoint, self.label, PROBE_S)
            if ours == [] or (ours is None and endpoint.startswith("unix://")):
                return  # nothing to remove, or no engine behind the socket
            await trio.to_thread.run_sync(_import, "aiohttp", "aiodocker", "trio_asyncio")
            await self.runtime()
        except Exception as e:  # best effort, in the background: never the daemon's end
            self.forget()
            message = e.message if isinstance(e, SandboxError) else repr(e)
            log.get().info("sandbox.orphans_not_checked", error=message)

    async def close_at_stop(self) -> None:
        """At a clean stop (requests already cancelled, so none of ours is running):
        remove this daemon's containers, if it ever opened the runtime, within
        :data:`STOP_SWEEP_S` (a stop stays prompt when the engine hangs)."""
        with trio.move_on_after(STOP_SWEEP_S):
            for rt, _scope in list(self._held.values()):
                try:
                    await self._remove_orphans(rt)
                except Exception as e:  # the stop goes on whatever the engine says
                    message = e.message if isinstance(e, SandboxError) else repr(e)
                    log.get().info("sandbox.orphans_not_removed", error=message)

    def forget(self) -> None:
        """Drop the runtimes held (one stopped answering); the next call reconnects."""
        for _rt, scope in self._held.values():
            scope.cancel()
        self._held.clear()

    async def _hold(
        self, endpoint: str | None, *, task_status: Any = trio.TASK_STATUS_IGNORED
    ) -> None:
        from tsukud.sandbox.runtime import open_runtime

        with trio.CancelScope() as scope:
            async with open_runtime(endpoint) as rt:
                task_status.started((rt, scope))
                await trio.sleep_forever()

    async def prepare(
        self,
        *,
        force: bool = False,
        busybox: bool = False,
        build: bool = False,
        progress: Say | None = None,
        workdir: Path | None = None,
    ) -> tuple[str, bool]:
        """Build the validation image offline (Debian minbase, the busybox fallback, or
        with ``build`` the build image where builds from source run); returns the
        image and whether it was imported (``False``: already there)."""
        from tsukud.sandbox.image import (
            PrepareFailed,
            prepare_build_image,
            prepare_busybox_image,
            prepare_debian_image,
        )
        from tsukud.sandbox.runtime import BUILD_IMAGE, BUSYBOX_IMAGE

        rt = await self.runtime()
        image = BUSYBOX_IMAGE if busybox else BUILD_IMAGE if build else self.image
        if build:
            imported = await prepare_build_image(
                rt, image, force=force, progress=progress, workdir=workdir
            )
        elif image == BUSYBOX_IMAGE:
            if progress is not None:
                await progress("importing the host's busybox-static")
            try:
                imported = await prepare_busybox_image(rt, image, force=force)
            except FileNotFoundError as e:
                raise PrepareFailed(str(e), hint="apt-get install busybox-static") from None
        else:
            imported = await prepare_debian_image(
                rt, image, force=force, progress=progress, workdir=workdir
            )
        await self._store.append("sandbox.image_prepared", {"image": image, "imported": imported})
        return image, imported

    async def status(self) -> SandboxStatus:
        try:
            rt = await self.runtime()
            version = await rt.ping()
            image = await rt.image_exists(self.image)
        except SandboxError as e:
            self.forget()
            return SandboxStatus(available=False, error=e.message, hint=e.hint, image=self.image)
        if self._endpoint().strip():
            chosen_by = "the sandbox.docker_host setting (DOCKER_HOST)"
            passed_over: list[str] | UnsetType = UNSET
        else:
            from tsukud.sandbox.runtime import choose_endpoint

            choice = await choose_endpoint()
            chosen_by = "the first of Podman's, then Docker's sockets that answers"
            passed_over = [u for u in choice.passed_over if u != rt.endpoint]
        return SandboxStatus(
            available=True,
            endpoint=rt.endpoint,
            version=version,
            image=self.image,
            image_present=image,
            chosen_by=chosen_by,
            passed_over=passed_over,
        )
