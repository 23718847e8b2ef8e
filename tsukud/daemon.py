"""The daemon's state and lifecycle, independent of how it was started.

``Daemon`` owns the ledger, the projections, the policy objects and the feature
services (built in ``tsukud.services``). ``run`` is the whole life of one daemon: writer
task, RPC serving, start-up repairs, and an orderly stop (in-flight requests cancelled,
``daemon.stopped`` durable, writer flushed).
"""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud import __version__, log, paths
from tsukud import config as configmod
from tsukud.clock import Clock, SystemClock
from tsukud.errors import DiskFull, LedgerCorrupt
from tsukud.events import integrity
from tsukud.events.projections import State, rebuild
from tsukud.events.store import EventStore
from tsukud.policy.breaker import BreakerSettings, CircuitBreakers
from tsukud.policy.budget import Budget, BudgetLimits
from tsukud.policy.locks import ContainerLock
from tsukud.policy.ratelimit import GenerationLimit
from tsukud.secrets import REDACTOR
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.rpc.server import RpcServer


@dataclass
class Daemon:
    config: configmod.Config
    env: Mapping[str, str]
    clock: Clock = field(default_factory=SystemClock)
    socket_path: Path | None = None
    activation: str = "direct"

    def __post_init__(self) -> None:
        REDACTOR.update(self.config.secret_values())
        self.home = Path(paths.tsuku_home(self.env))
        self.store = EventStore(Path(paths.db_path(self.env)), clock=self.clock)
        self.state = State()
        self.started_wall = self.clock.now()
        self.started_mono = time.monotonic()
        self._stop = trio.Event()
        self.nursery: trio.Nursery | None = None  # services' background tasks, once serving
        self.server: RpcServer | None = None
        self._make_policy()

    def _make_policy(self) -> None:
        cfg = self.current
        self.budget = Budget(
            self.store,
            self.state.spend,
            self.clock,
            lambda: BudgetLimits(cfg()["llm.daily_budget"], cfg()["llm.confirm_threshold"]),
        )
        self.generations = GenerationLimit(
            self.store, self.state.generations, self.clock, lambda: int(cfg()["llm.hourly_limit"])
        )
        self.breakers = CircuitBreakers(
            self.store,
            self.state.breakers,
            self.clock,
            lambda: BreakerSettings(
                cfg()["breaker.failure_threshold"], cfg()["breaker.reset_seconds"]
            ),
        )
        self.container_lock = ContainerLock(
            self.store, self.clock, int(self.config["sandbox.max_concurrent"])
        )
        # Features keep their long-lived state (caches, per-tool locks, HTTP clients) in
        # service objects built on first use, from explicit parts rather than this class.
        self.services = Services(
            home=self.home,
            env=self.env,
            config=self.current,
            clock=self.clock,
            store=self.store,
            installed=lambda: self.state.installed.tools,
            budget=self.budget,
            generations=self.generations,
            breakers=self.breakers,
            container_lock=self.container_lock,
            nursery=lambda: self.nursery,
        )

    def current(self) -> configmod.Config:
        return self.config

    # ---- configuration ---------------------------------------------------------------

    def reload_config(self) -> None:
        self.config = configmod.resolve(env=self.env, path=self.config.path)
        REDACTOR.update(self.config.secret_values())

    # ---- lifecycle -------------------------------------------------------------------

    def open(self) -> None:
        """Open the ledger and rebuild state. Blocking; runs before the event loop.

        A damaged ledger (rows lost since the checkpoint, a rewritten chain, a database
        SQLite cannot read) raises ``LedgerCorrupt`` here: the daemon does not start on it.
        """
        self.store.open()
        with integrity.reading(self.store.path):
            self.state = self.store.read_sync(lambda conn: rebuild(conn, self.clock.now()))
        self._make_policy()  # policy objects (and services) fold into the new projections
        from tsukud.install.layout import reconcile

        # Before anything reads bin/: drop staging left by a killed install, re-link
        # what the ledger says is installed.
        reconcile(self.home, self.state.installed.tools)
        self.store.subscribe(self.state.apply)

    def request_stop(self) -> None:
        self._stop.set()

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self.started_mono

    async def _settle_abandoned(self, left_open: list[str]) -> None:
        """Reservations a dead daemon left open are settled at what was actually spent.

        ``left_open`` is taken before the server accepts anything: a request served
        while the start-up is still being recorded may already hold a reservation of its
        own, which is live, not abandoned.
        """
        for rid in left_open:
            r = self.state.spend.open[rid]
            session = r.session

            def spent(conn: sqlite3.Connection, session: str | None = session) -> float:
                if session is None:
                    return 0.0
                # What the run was charged: its priced turns and its paid web searches.
                row = conn.execute(
                    "SELECT coalesce(sum(json_extract(payload, '$.cost_usd')), 0) FROM events"
                    " WHERE session = ? AND type IN ('llm.turn', 'discovery.search')",
                    (session,),
                ).fetchone()
                return float(row[0])

            actual = await self.store.read(spent)
            await self.budget.settle(rid, actual, session=session)
            log.get().info("budget.abandoned_settled", reservation=rid, actual_usd=actual)

    async def run(
        self,
        server: RpcServer,
        listeners: list[trio.SocketListener],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve ``server`` (whose handlers get this daemon) on ``listeners`` until stopped."""
        self.server = server
        async with trio.open_nursery() as outer:
            await outer.start(self.store.run)
            # Signals are watched for the daemon's whole life: a second SIGTERM during
            # the orderly stop must not fall back to the default (killing) handler.
            signals_scope = await outer.start(self._watch_signals)
            async with trio.open_nursery() as services:
                self.nursery = services  # services' background tasks; cancelled on stop
                if (self.home / "share" / "hooks").is_dir():
                    # Shell hooks are installed: bring the command index up to date with
                    # the ledger, and keep it current from now on.
                    self.services.hook_index.request_rebuild()
                left_open = self.budget.abandoned()
                async with trio.open_nursery() as serving:
                    serving.start_soon(server.serve, listeners)
                    try:
                        await self.store.append(
                            "daemon.started",
                            {
                                "pid": os.getpid(),
                                "version": __version__,
                                "activation": self.activation,
                                "socket": str(self.socket_path) if self.socket_path else None,
                                "startup_ms": round(self.uptime_s * 1000, 1),
                            },
                        )
                    except DiskFull as e:
                        # Started all the same: reads work, and the event is written
                        # once there is space (writes are refused until then).
                        log.get().error("daemon.started_not_written", error=e.message)
                    log.get().info("daemon.started", pid=os.getpid(), socket=str(self.socket_path))
                    task_status.started()
                    services.start_soon(self.services.after_start)
                    try:
                        await self._settle_abandoned(left_open)
                    except DiskFull as e:
                        # Still open on disk: the next start settles them. Until then
                        # they keep holding their budget, which errs on the safe side.
                        log.get().error("budget.abandoned_not_settled", error=e.message)
                    await self._stop.wait()
                    server.stopping = True
                    serving.cancel_scope.cancel()
                await self.services.before_stop()
                services.cancel_scope.cancel()
            with trio.CancelScope(shield=True):
                try:
                    await self.store.append(
                        "daemon.stopped",
                        {"pid": os.getpid(), "uptime_s": round(self.uptime_s, 3)},
                    )
                except (DiskFull, LedgerCorrupt) as e:
                    # A full disk or a failed writer must not turn a stop into a crash
                    # (or a hang): say what was not recorded and stop all the same.
                    log.get().error("daemon.stop_not_recorded", error=e.message)
                self.store.close()
            signals_scope.cancel()
        self.store.close_connection()
        log.get().info("daemon.stopped")

    async def _watch_signals(
        self, *, task_status: trio.TaskStatus[trio.CancelScope] = trio.TASK_STATUS_IGNORED
    ) -> None:
        with (
            trio.CancelScope() as scope,
            trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals,
        ):
            task_status.started(scope)
            async for signum in signals:
                log.get().info("daemon.signal", signal=signal.Signals(signum).name)
                self.request_stop()

    def status(self) -> dict[str, Any]:
        return {
            "version": __version__,
            "pid": os.getpid(),
            "uptime_s": round(self.uptime_s, 3),
            "started_at": self.started_wall,
            "socket": str(self.socket_path) if self.socket_path else None,
            "activation": self.activation,
            "home": str(self.home),
            "database": str(self.store.path),
            "budget": self.budget.snapshot(),
            "generations": self.generations.snapshot(),
            "breakers": self.breakers.snapshot(),
            "events": {
                "count": self.store.last_id,
                "durable": self.store.durable_id,
                "disk_full": self.store.disk_full,
            },
            "sandbox": {"slots": self.container_lock.slots, "busy": self.container_lock.busy},
            "connections": self.server.connections if self.server is not None else 0,
        }
