"""The daemon's one connection to the container runtime.

aiodocker and its asyncio loop are heavy to import and to open, so the runtime is opened
on first use and then held for the daemon's life by a task in the services nursery.
The first open also removes validation containers a previous daemon left behind: no
validation of ours can be running at that point.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import trio

from tsukud import log
from tsukud.errors import SandboxError

if TYPE_CHECKING:
    from tsukud.events.store import EventStore
    from tsukud.sandbox.runtime import ContainerRuntime

# Runs a task in the daemon's services nursery (``nursery.start``): the runtime
# connection is held there, for the daemon's life.
StartTask = Callable[[Callable[..., Awaitable[Any]]], Awaitable[Any]]


OWNER_LABEL_KEY = "dev.tsuku.owner"


class Sandbox:
    def __init__(
        self, *, home: Path, image: Callable[[], str], store: EventStore, start: StartTask
    ) -> None:
        key = f"{os.getuid()}:{home.resolve()}".encode()
        self.owner = hashlib.sha256(key).hexdigest()[:16]
        self._image = image
        self._store = store
        self._start = start
        self._rt: ContainerRuntime | None = None
        self._holder: trio.CancelScope | None = None
        self._lock = trio.Lock()

    @property
    def image(self) -> str:
        return self._image()

    async def runtime(self) -> ContainerRuntime:
        async with self._lock:
            if self._rt is not None:
                return self._rt
            rt, scope = cast(
                "tuple[ContainerRuntime, trio.CancelScope]", await self._start(self._hold)
            )
            # Only this daemon's containers: one engine may serve several users and
            # several TSUKU_HOMEs, whose validations must not be killed as "orphans".
            rt.labels[OWNER_LABEL_KEY] = self.owner
            removed = await rt.remove_orphans(f"{OWNER_LABEL_KEY}={self.owner}")
            if removed:
                log.get().info("sandbox.orphans_removed", count=removed)
                await self._store.append("sandbox.orphans_removed", {"count": removed})
            self._rt, self._holder = rt, scope
            return rt

    def forget(self) -> None:
        """Drop a runtime that stopped answering; the next call reconnects."""
        if self._holder is not None:
            self._holder.cancel()
        self._rt = self._holder = None

    async def _hold(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        from tsukud.sandbox.runtime import open_runtime

        with trio.CancelScope() as scope:
            async with open_runtime() as rt:
                task_status.started((rt, scope))
                await trio.sleep_forever()

    async def status(self) -> dict[str, Any]:
        try:
            rt = await self.runtime()
            version = await rt.ping()
            image = await rt.image_exists(self.image)
        except SandboxError as e:
            self.forget()
            return {"available": False, "error": e.message, "hint": e.hint, "image": self.image}
        return {
            "available": True,
            "endpoint": rt.endpoint,
            "version": version,
            "image": self.image,
            "image_present": image,
        }
