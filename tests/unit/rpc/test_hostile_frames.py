"""Every method of the real registry, served by a real daemon's state (ledger, budget,
config, services) over in-memory streams, against hostile frames: each gets one final
frame that is not ``internal``, and the daemon serves on. Hypothesis draws them, so a
failure is shrunk to its smallest frame; the slow set's 100,000 go over the real socket
to a real ``tsukud`` (tests/integration/test_rpc_hostile_socket.py)."""

from __future__ import annotations

import os
import queue
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings

from tests import hostile_rpc as hostile
from tests.conftest import base_env, short_home
from tests.hypothesis_profiles import examples
from tsukud import config as configmod
from tsukud.daemon import Daemon
from tsukud.net.http import Settings
from tsukud.net.retry import RetryPolicy
from tsukud.rpc.registry import load_methods
from tsukud.rpc.server import RpcServer

METHODS = load_methods()


# An exchange that gets neither its final frame nor a hang-up fails with its frame after
# ANSWER_S; WATCHDOG_S catches a loop that takes nothing up at all.
ANSWER_S = 60
WATCHDOG_S = 120


class InProcessDaemon:
    """A daemon's state and RPC server on a trio loop in a thread of its own, so
    hypothesis (synchronous) can hand it one frame per example without a new loop."""

    def __init__(self, home: Path) -> None:
        self.env = base_env(home)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self.failure: BaseException | None = None

    def __enter__(self) -> InProcessDaemon:
        self._thread.start()
        assert self._ready.wait(60), "the in-process daemon did not start"
        return self

    def __exit__(self, *exc: object) -> None:
        trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
        self._thread.join(30)

    async def _main(self) -> None:
        try:
            d = Daemon(config=configmod.resolve(env=self.env), env=self.env)
            d.open()
            # Endpoints outside point at a closed loopback port, refused at once: trying
            # again after a backoff would change no answer, only add seconds per case.
            d.services.http.settings = Settings(retry=RetryPolicy(max_tries=1))
            self.daemon = d
            self.server = RpcServer(METHODS, d, peer=lambda _s: None, scope=d.request_scope)
            d.server = self.server
            self._stop = trio.Event()
            async with trio.open_nursery() as nursery:
                await nursery.start(d.store.run)
                d.nursery = self.nursery = nursery
                self.token = trio.lowlevel.current_trio_token()
                self._ready.set()
                await self._stop.wait()
                nursery.cancel_scope.cancel()
            d.store.close()
            d.store.close_connection()
        except BaseException as e:  # seen by the tests
            self.failure = e
            raise

    def exchange(self, body: bytes) -> list[dict[str, Any]]:
        (frames,) = self.exchange_all([body])
        return frames

    def exchange_all(self, bodies: list[bytes]) -> list[list[dict[str, Any]]]:
        """Each body on a connection of its own, all at once (as many clients would),
        in one trip to the loop; waited for at most WATCHDOG_S, so an exchange that
        never ends fails the example with its bodies instead of hanging the run."""
        assert self.failure is None, self.failure
        result: queue.Queue[tuple[bool, Any]] = queue.Queue()

        def call() -> None:
            try:
                result.put(
                    (True, trio.from_thread.run(self._exchange_all, bodies, trio_token=self.token))
                )
            except BaseException as e:
                result.put((False, e))

        threading.Thread(target=call, daemon=True).start()
        try:
            ok, value = result.get(timeout=WATCHDOG_S)
        except queue.Empty:
            raise AssertionError(
                f"no answer within {WATCHDOG_S} s (daemon failure: {self.failure!r}): "
                f"{[b[:300] for b in bodies]!r}"
            ) from None
        if not ok:
            raise value
        out: list[list[dict[str, Any]]] = value
        return out

    async def _exchange_all(self, bodies: list[bytes]) -> list[list[dict[str, Any]]]:
        out: list[list[dict[str, Any]]] = [[] for _ in bodies]

        async def one(i: int) -> None:
            out[i] = await self._exchange(bodies[i])

        async with trio.open_nursery() as nursery:
            for i in range(len(bodies)):
                nursery.start_soon(one, i)
        return out

    async def _exchange(self, body: bytes) -> list[dict[str, Any]]:
        """Send one frame on a new connection; read until its final frame or a hang-up."""
        client, server_end = trio.testing.memory_stream_pair()
        self.nursery.start_soon(self.server.handle, server_end)
        talk = hostile.Conversation()
        with trio.move_on_after(ANSWER_S) as waited:
            await client.send_all(hostile.frame(body))
            while not talk.done and (chunk := await client.receive_some(65536)):
                if reply := talk.feed(bytes(chunk)):
                    await client.send_all(reply)
        await client.aclose()
        if waited.cancelled_caught:
            raise AssertionError(f"no final frame within {ANSWER_S} s: {body[:300]!r}")
        return talk.frames

    def still_serving(self) -> None:
        frames = self.exchange(hostile.encode({"id": "s", "method": "status"}))
        (final,) = [f for f in frames if hostile.is_final(f)]
        assert final["result"]["pid"] > 0
        assert self.failure is None


class Daemons:
    """The in-process daemon under test, replaced by a fresh one (new TSUKU_HOME) once
    its ledger is large: ``events.verify`` and ``events.list`` read all of it, and a
    long run must not slow down as it goes."""

    MAX_EVENTS = 3000

    def __init__(self) -> None:
        self.current: InProcessDaemon | None = None
        self.home: Path | None = None

    def get(self) -> InProcessDaemon:
        if self.current is not None and self.current.daemon.store.last_id > self.MAX_EVENTS:
            self.current.still_serving()
            self.close()
        if self.current is None:
            self.home = short_home()
            self.current = InProcessDaemon(self.home).__enter__()
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.__exit__()
        if self.home is not None:
            shutil.rmtree(self.home, ignore_errors=True)
        self.current = self.home = None


@pytest.fixture(scope="module")
def daemons() -> Iterator[Daemons]:
    # The sandbox finds its runtime through the process environment: none answers here,
    # so sandbox methods refuse at once instead of starting containers by the thousand.
    old = os.environ.get("DOCKER_HOST")
    os.environ["DOCKER_HOST"] = "unix:///nonexistent/docker.sock"
    ds = Daemons()
    try:
        yield ds
    finally:
        ds.close()
        if old is None:
            del os.environ["DOCKER_HOST"]
        else:
            os.environ["DOCKER_HOST"] = old


def hit(ds: Daemons, *bodies: bytes) -> None:
    sendable = [b for b in bodies if hostile.sendable(b)]
    if sendable:
        for body, frames in zip(sendable, ds.get().exchange_all(sendable), strict=True):
            hostile.check_answer(body, frames)


FAST = settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@FAST
@given(hostile.non_requests)
def test_bodies_that_are_not_requests(daemons: Daemons, body: bytes) -> None:
    hit(daemons, body)


# Among the slowest tests (issue 26): 400 examples of hostile params for every registered
# method (examples(400): 80 under the dev profile).
@FAST
@given(hostile.requests(METHODS))
def test_every_method_with_hostile_params(daemons: Daemons, body: bytes) -> None:
    hit(daemons, body)


def test_still_serving_after_the_hostile_input(daemons: Daemons) -> None:
    daemons.get().still_serving()
