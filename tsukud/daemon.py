"""The daemon's state and lifecycle, independent of how it was started.

``Daemon`` owns the ledger, the projections, the policy objects and the feature
services (built in ``tsukud.services``). ``run`` is the whole life of one daemon: writer
task, RPC serving, start-up repairs, and an orderly stop (in-flight requests cancelled,
``daemon.stopped`` durable, writer flushed).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import signal
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from msgspec import UNSET

from tsukud import __version__, log, paths
from tsukud import config as configmod
from tsukud.batch.queue import Queue as BatchQueue
from tsukud.batch.queue import load as load_batch_queue
from tsukud.caller_env import accept
from tsukud.clock import Clock, SystemClock
from tsukud.errors import (
    ConfigError,
    DiskFull,
    LedgerCorrupt,
    LedgerUnavailable,
    NotFound,
    WrongDaemon,
)
from tsukud.events import integrity
from tsukud.events.projections import State, rebuild
from tsukud.events.store import EventStore
from tsukud.policy.backend import LocalPolicy, PolicyBackend
from tsukud.policy.breaker import BreakerSettings
from tsukud.policy.budget import Budget, BudgetLimits
from tsukud.policy.locks import ContainerLock
from tsukud.policy.ratelimit import GenerationLimit
from tsukud.rpc.control import (
    DaemonStatus,
    LedgerShown,
    ProblemShown,
    SettingShown,
    SlotsShown,
)
from tsukud.secrets import REDACTOR
from tsukud.services import Services

if TYPE_CHECKING:
    from tsukud.rpc.control import DaemonControl
    from tsukud.rpc.protocol import Request
    from tsukud.rpc.server import RpcServer

#: The allowlisted environment of the caller whose request this task serves (None
#: outside requests). Trio tasks inherit it, so work a request starts sees it too.
CALLER_ENV: ContextVar[Mapping[str, str] | None] = ContextVar("CALLER_ENV", default=None)

#: How often the settlement of a dead predecessor's reservations is tried again while
#: a shared ledger is out of reach.
ABANDONED_RETRY_S = 2.0
# The scope of a request that names no home and carries no environment (reusable).
_NO_SCOPE: contextlib.nullcontext[None] = contextlib.nullcontext()


def same_home(named: str, home: Path) -> bool:
    """Whether a request's home is this daemon's (spelt alike, or the same directory)."""
    if named == str(home):
        return True
    try:
        return os.path.samefile(named, home)
    except (OSError, ValueError):  # missing, unreadable, or not a path at all (a NUL)
        return False


class CallerConfigs:
    """Settings for callers' environments, built once per environment and config.

    A shell sends the same environment with each command, so a handful of entries
    serve nearly every request; a reload (a new daemon config) starts afresh."""

    SIZE = 16

    def __init__(self) -> None:
        self._base: configmod.Config | None = None
        self._built: dict[tuple[tuple[str, str], ...], configmod.Config] = {}

    def get(self, base: configmod.Config, sent: Mapping[str, str]) -> configmod.Config:
        if base is not self._base:
            self._base, self._built = base, {}
        key = tuple(sorted(sent.items()))
        cfg = self._built.get(key)
        if cfg is None:
            cfg = base.with_caller_env(sent)
            if len(self._built) >= self.SIZE:
                self._built.pop(next(iter(self._built)))
            self._built[key] = cfg
        return cfg


@dataclass
class Daemon:
    config: configmod.Config
    env: Mapping[str, str]
    clock: Clock = field(default_factory=SystemClock)
    socket_path: Path | None = None
    activation: str = "direct"

    def __post_init__(self) -> None:
        REDACTOR.update(self.config.secret_values())
        self._config_stamp = configmod.file_stamp(self.config.path)
        # The settings as `status` shows them, for the last Config asked (they are immutable).
        self._shown: tuple[configmod.Config, list[SettingShown]] | None = None
        self.home = Path(paths.tsuku_home(self.env))
        self._recipes_dir = str(self.home / "recipes")  # a str: stat'ed per request
        self._recipes_stamp = _mtime(self._recipes_dir)
        self.store = self._make_store()
        self.state = State()
        self.batch_queue = BatchQueue()
        self.started_wall = self.clock.now()
        self.started_mono = time.monotonic()
        self._stop = trio.Event()
        self.nursery: trio.Nursery | None = None  # services' background tasks, once serving
        self.server: RpcServer | None = None
        self._callers = CallerConfigs()
        self._make_policy()

    def _make_store(self) -> EventStore:
        """SQLite in the home, or the shared ledger ``ledger.url`` names (read at start;
        psycopg is loaded only then), with where the policy is decided: this daemon's
        projections, or the shared database (the budget, the hourly limit)."""
        url = str(self.config.value_or_default("ledger.url"))
        if not url:
            self.policy_backend: PolicyBackend = LocalPolicy()
            return EventStore(Path(paths.db_path(self.env)), clock=self.clock)
        from tsukud.events.pg_store import PgEventStore
        from tsukud.policy.pg_policy import SharedPolicy

        store = PgEventStore(url, Path(paths.tsuku_home(self.env)), clock=self.clock)
        self.policy_backend = SharedPolicy(url, lambda: store.origin)
        return store

    def _make_policy(self) -> None:
        cfg = self.current
        self.budget = Budget(
            self.store,
            self.state.spend,
            self.clock,
            lambda: BudgetLimits(cfg()["llm.daily_budget"], cfg()["llm.confirm_threshold"]),
            self.policy_backend.days(self.state),
        )
        self.generations = GenerationLimit(
            self.store,
            self.state.generations,
            self.clock,
            lambda: int(cfg()["llm.hourly_limit"]),
            self.policy_backend.hours(self.state),
        )
        self.breakers = self.policy_backend.breakers(
            self.store,
            self.state,
            self.clock,
            lambda: BreakerSettings(
                cfg()["breaker.failure_threshold"], cfg()["breaker.reset_seconds"]
            ),
        )
        self.container_lock = ContainerLock(
            self.store, self.clock, int(self.config.value_or_default("sandbox.max_concurrent"))
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
            batch_queue=self.batch_queue,
            nursery=lambda: self.nursery,
            caller_path=self.caller_path,
            settings_for=self.settings_for,
        )

    @property
    def control(self) -> DaemonControl:
        """What the RPC methods about the daemon itself receive (``rpc/control.py``);
        the feature methods receive :attr:`services`. Both are handed to the server once,
        when it is built, after :meth:`open`."""
        return self

    def current(self) -> configmod.Config:
        """The settings in force for the request being served: the daemon's, with the
        caller's environment (``caller_env``) on top while a request carries one."""
        sent = CALLER_ENV.get()
        if not sent:
            return self.config
        return self._callers.get(self.config, sent)

    @contextlib.contextmanager
    def settings_for(self, variables: Mapping[str, str]) -> Iterator[None]:
        """Inside the block, the request's settings with ``variables`` (settings'
        variables, as a caller's environment carries them) on top: a command's own
        choice of a setting for its run (``eval create --replay DIR`` is
        ``llm.replay_dir``), seen by every service it calls and by no other request."""
        if not variables:
            yield
            return
        token = CALLER_ENV.set({**(CALLER_ENV.get() or {}), **variables})
        try:
            yield
        finally:
            CALLER_ENV.reset(token)

    def caller_path(self) -> str:
        """The PATH of the shell whose request is being served (``caller_env.FACTS``),
        else the daemon's own: where the caller's commands are found."""
        sent = CALLER_ENV.get() or {}
        return sent.get("PATH") or self.env.get("PATH") or os.defpath

    def request_scope(self, req: Request) -> contextlib.AbstractContextManager[None]:
        """Around one request: refuse it if it names another home, apply its caller's
        environment to it alone, and redact the secrets in that environment from
        whatever the request leaves behind (log lines, events, its error frame). A
        request that names neither (a script's, a benchmark's) gets a shared empty
        scope: this runs for every request."""
        if req.home is None and not req.env:
            return _NO_SCOPE
        return self._caller_scope(req)

    @contextlib.contextmanager
    def _caller_scope(self, req: Request) -> Iterator[None]:
        if req.home is not None and not same_home(req.home, self.home):
            raise WrongDaemon(
                f"the tsukud on {self.socket_path or 'this socket'} serves {self.home}, "
                f"not {req.home}",
                daemon_home=str(self.home),
            )
        key_envs = self.config.key_env_names()
        sent = accept(req.env, key_envs)
        if not sent:
            yield
            return
        token = CALLER_ENV.set(sent)
        try:
            secret_names = configmod.SECRET_ENV | key_envs
            with REDACTOR.scoped(sent[n] for n in secret_names if n in sent):
                yield
        finally:
            CALLER_ENV.reset(token)

    # ---- configuration ---------------------------------------------------------------

    def reload_config(self) -> None:
        # The stamp is taken first but kept only once the file was read: a file refused
        # whole (readable by others) is refused again at every request until it is
        # fixed, instead of the old settings being served silently from the second on.
        stamp = configmod.file_stamp(self.config.path)
        self.config = configmod.resolve(env=self.env, path=self.config.path)
        self._config_stamp = stamp
        REDACTOR.update(self.config.secret_values())

    def before_request(self) -> None:
        """Before each request: the config file (:meth:`refresh_config`), and the local
        recipes directory: a recipe put there by hand reaches the shell hook's command
        index at the next command, not only at the next ``hook install``. A ``stat``
        each when nothing changed."""
        self.refresh_config()
        stamp = _mtime(self._recipes_dir)
        if stamp != self._recipes_stamp:
            self._recipes_stamp = stamp
            if (self.home / "share" / "hooks").is_dir():
                self.services.hook_index.request_rebuild()

    def refresh_config(self) -> None:
        """Before each request: pick up an edit of config.toml (``tsukuctl config``,
        which needs no daemon, an editor, a dotfile sync) and record each changed
        setting as ``config.changed``. One ``stat`` when nothing changed."""
        if configmod.file_stamp(self.config.path) == self._config_stamp:
            return
        old = self.config
        self.reload_config()
        for s in configmod.changed_settings(old, self.config):
            unset = not s.source.startswith("file")
            self.store.append_nowait(
                "config.changed", {"key": s.key.name, "unset": unset, "source": s.source}
            )
        for problem in self.config.problems:
            log.get().warning("config.problem", error=problem.error.message)

    # ---- lifecycle -------------------------------------------------------------------

    def open(self, *, accept_ledger: bool = False) -> None:
        """Open the ledger and rebuild state. Blocking; runs before the event loop.

        A damaged ledger (rows lost since the checkpoint, the checkpoint itself gone, a
        rewritten chain, a database SQLite cannot read) raises ``LedgerCorrupt`` here:
        the daemon does not start on it. ``accept_ledger`` (``tsukud --accept-ledger``)
        adopts a loss as it is and records it.
        """
        self.store.open(accept=accept_ledger)
        with integrity.reading(self.store.path):
            self.state = self.store.read_sync(lambda conn: rebuild(conn, self.clock.now()))
            self.batch_queue = self.store.read_sync(load_batch_queue)
        self.batch_queue.lease_seconds = float(self.config.value_or_default("batch.lease_seconds"))
        self._make_policy()  # policy objects (and services) fold into the new projections
        self.budget.release_unrecorded()
        from tsukud.install.layout import reconcile

        # Before anything reads bin/: drop staging left by a killed install, re-link
        # what the ledger says is installed.
        reconcile(self.home, self.state.installed.tools)
        self.store.subscribe(self.state.apply, self.state.types)
        self.store.subscribe(self.batch_queue.apply, self.batch_queue.types)

    def request_stop(self) -> None:
        self._stop.set()

    @property
    def uptime_s(self) -> float:
        return time.monotonic() - self.started_mono

    async def _settle_abandoned(self, left_open: list[str]) -> None:
        """Reservations a dead daemon left open are settled at what was actually spent.

        A run's reservations (its first and the extensions naming it) are settled
        together, at its ``llm.turn``/``llm.cut_off`` costs and paid searches, plus every
        ``llm.call_started`` that never got an answer: that request may have been billed
        and its usage is lost, so it is charged at its worst case as an estimated
        ``llm.cut_off`` (the ledger never undercounts). A paid search's
        ``discovery.search_started`` without its ``discovery.search`` is charged its fee
        the same way, as an estimated ``discovery.search`` (``abandoned``). A create run
        the dead daemon never finished gets its terminal ``generation.failed`` (``abandoned``) with
        that total, as every run's last event carries what the run cost.

        ``left_open`` is taken before the server accepts anything: a request served
        while the start-up is still being recorded may already hold a reservation of its
        own, which is live, not abandoned.
        """
        from tsukud.llm.ceiling import allocate

        def extends(conn: sqlite3.Connection) -> dict[str, str]:
            rows = conn.execute(
                "SELECT json_extract(payload, '$.reservation'),"
                " json_extract(payload, '$.extends') FROM events"
                " WHERE type = 'budget.reserved' AND json_extract(payload, '$.extends') IS NOT NULL"
            ).fetchall()
            return {str(r): str(first) for r, first in rows}

        first_of = await self.store.read(extends)
        runs: dict[str, list[str]] = {}
        for rid in left_open:
            if rid in self.state.spend.open:  # a client that knew its id may have settled it
                runs.setdefault(first_of.get(rid, rid), []).append(rid)
        for first, rids in runs.items():
            # Taken now: a client may settle one of them while this sweep awaits below.
            held = {r: self.state.spend.open[r] for r in rids if r in self.state.spend.open}
            if not held:
                continue
            session = next(iter(held.values())).session
            found = await self.store.read(
                functools.partial(_abandoned_costs, first=first, session=session)
            )
            for call in found.unanswered:
                payload = {**call, "reason": "abandoned", "estimated": True}
                await self.store.append("llm.cut_off", payload, session)
            for search in found.unanswered_searches:
                await self.store.append("discovery.search", search, session)
            actual = found.spent + sum(
                (
                    Decimal(str(c["cost_usd"]))
                    for c in (*found.unanswered, *found.unanswered_searches)
                    if "cost_usd" in c
                ),
                Decimal(0),
            )
            # The run's end first, then its money: a kill between the two leaves the
            # reservation open, so the next start settles it and the run keeps its end.
            # (Settled first, the end was lost: only open reservations lead to a run.)
            if session is not None:
                await self._end_unfinished_discovery(session, actual)
                run = await self.store.read(functools.partial(_unfinished_create, session=session))
                if run is not None:
                    await self.store.append(
                        "generation.failed",
                        {
                            "tool": run.tool,
                            "repo": run.repo,
                            "stage": "unknown",
                            "error_code": "abandoned",
                            "message": "tsukud stopped during the run (killed or crashed); "
                            "the next start settled what it had spent",
                            "repairs": 0,
                            "run_cost_usd": float(actual),
                        },
                        session,
                    )
            amounts = [Decimal(r.amount) / 1_000_000 for r in held.values()]
            for rid, share in zip(held, allocate(actual, amounts), strict=True):
                try:
                    await self.budget.settle(rid, float(share), session=session)
                except NotFound:
                    continue  # settled by a client while this sweep added up its cost
            log.get().info("budget.abandoned_settled", reservation=first, actual_usd=float(actual))

    async def _settle_abandoned_once_writable(self, left_open: list[str]) -> None:
        """:meth:`_settle_abandoned`, tried again as soon as the ledger takes writes
        again when a full disk or an unreachable database (a shared ledger restarting
        as the daemon starts) stopped it: until settled, the reservations hold their
        budget (the safe side), but no longer than that, and the calls a dead
        predecessor left unanswered reach the ledger while this daemon lives. A sweep
        cut short leaves what it wrote on disk before it is tried again, and each part
        of it skips what is already recorded (a settled reservation, a call with its
        cut-off, a run with its terminal event), so nothing is counted twice."""
        while True:
            try:
                await self._settle_abandoned(left_open)
                return
            except DiskFull as e:
                log.get().error("budget.abandoned_not_settled", error=e.message)
            except LedgerUnavailable as e:
                log.get().warning("budget.abandoned_waiting", error=e.message)
                # A read that failed leaves the writer unaware: do not spin on it.
                await trio.sleep(ABANDONED_RETRY_S)
            await self.store.wait_writable()

    async def _end_unfinished_discovery(self, session: str, actual: Decimal) -> None:
        """A discovery the daemon died in gets its terminal event, with what it spent."""
        tool = await self.store.read(functools.partial(_unfinished_discovery, session=session))
        if tool is None:
            return
        await self.store.append(
            "discovery.failed",
            {
                "tool": tool,
                "stage": "unknown",
                "error_code": "abandoned",
                "retryable": True,
                "message": "tsukud stopped during discovery (killed or crashed); "
                "the next start settled what it had spent",
                "spent_usd": float(actual),
                "ms": 0,
            },
            session,
        )

    async def run(
        self,
        server: RpcServer,
        listeners: list[trio.SocketListener],
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve ``server`` (whose handlers get this daemon's :attr:`services` or its
        :attr:`control`) on ``listeners`` until stopped."""
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
                    except (DiskFull, LedgerUnavailable) as e:
                        # Started all the same: reads work, and the event is written
                        # once there is space (writes are refused until then).
                        log.get().error("daemon.started_not_written", error=e.message)
                    log.get().info(
                        "daemon.started",
                        pid=os.getpid(),
                        socket=str(self.socket_path),
                        # Objects kept out of the collector's full passes (``__main__``
                        # freezes what start-up loaded): 0 says a pass walks it all again.
                        gc_frozen=gc.get_freeze_count(),
                    )
                    task_status.started()
                    # Jobs a dead daemon left running go back to the queue (their
                    # reservations are settled below, by their sessions).
                    try:
                        await self.services.batch.requeue_orphans()
                    except LedgerUnavailable as e:  # a shared queue: its leases run out
                        log.get().error("batch.orphans_not_requeued", error=e.message)
                    services.start_soon(self.services.after_start)
                    services.start_soon(self._anchor_periodically)
                    # A shared ledger: this daemon's liveness lease, and the holds of
                    # daemons silent past theirs settled (policy/pg_leases.py).
                    services.start_soon(
                        self.policy_backend.keep,
                        self.store,
                        lambda: float(self.config.value_or_default("policy.hold_lease_seconds")),
                    )
                    services.start_soon(self._settle_abandoned_once_writable, left_open)
                    await self._stop.wait()
                    server.stopping = True
                    serving.cancel_scope.cancel()
                await self.services.before_stop()
                services.cancel_scope.cancel()
            with trio.CancelScope(shield=True):
                await self._record_anchor()
                try:
                    await self.store.append(
                        "daemon.stopped",
                        {"pid": os.getpid(), "uptime_s": round(self.uptime_s, 3)},
                    )
                except (DiskFull, LedgerCorrupt, LedgerUnavailable) as e:
                    # A full disk or a failed writer must not turn a stop into a crash
                    # (or a hang): say what was not recorded and stop all the same.
                    log.get().error("daemon.stop_not_recorded", error=e.message)
                self.store.close()
            signals_scope.cancel()
        self.store.close_connection()
        self.policy_backend.close()
        log.get().info("daemon.stopped")

    async def _anchor_periodically(self) -> None:
        """A shared ledger: every ``ledger.anchor_seconds`` (read each time, so a change
        applies at the next one), every origin's head into this chain."""
        if self.store.origin is None:
            return
        while (every := float(self.current()["ledger.anchor_seconds"])) > 0:
            await trio.sleep(every)
            await self._record_anchor()

    async def _record_anchor(self) -> None:
        if self.store.origin is None or self.store.unreachable is not None:
            return  # out of reach: the append would be refused after a read that waits
        try:
            await self.store.record_anchor()
        except (DiskFull, LedgerCorrupt, LedgerUnavailable) as e:
            # The next one (or the next start's) anchors what this one missed.
            log.get().error("ledger.anchor_not_recorded", error=e.message)

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

    async def refresh_shared(self) -> None:
        """Before ``status``: the numbers every daemon on a shared ledger sees (nothing
        to do on SQLite, where the projections are current)."""
        await self.budget.refresh()
        await self.generations.refresh()
        await self.breakers.refresh()
        await self.store.refresh_team()

    def status(self) -> DaemonStatus:
        """The daemon's state. A setting the config file spoils (a typo, a bad value)
        shows its default here and the file's problem is listed: status is where a user
        looks first, so it must answer. A bad value in the caller's own environment
        still fails, as for every command."""
        cfg = self.current()
        problems = [p.error for p in cfg.problems]

        def read(name: str) -> Any:
            try:
                return cfg[name]
            except ConfigError as e:
                if not any(e is p for p in problems):
                    raise  # not the file's: the caller's shell gave it
                return cfg.value_or_default(name)

        budget = self.budget.snapshot(
            BudgetLimits(read("llm.daily_budget"), read("llm.confirm_threshold"))
        )
        generations = self.generations.snapshot(int(read("llm.hourly_limit")))
        breakers = self.breakers.snapshot(
            BreakerSettings(read("breaker.failure_threshold"), read("breaker.reset_seconds"))
        )
        store = self.store
        return DaemonStatus(
            version=__version__,
            pid=os.getpid(),
            uptime_s=round(self.uptime_s, 3),
            started_at=self.started_wall,
            socket=str(self.socket_path) if self.socket_path else None,
            activation=self.activation,
            home=str(self.home),
            database=store.location,
            budget=budget,
            generations=generations,
            breakers=breakers,
            events=LedgerShown(
                count=store.last_id,
                durable=store.durable_id,
                disk_full=store.disk_full,
                ledger=store.backend,
                unreachable=store.unreachable,
                origin=store.origin,
                origins=store.team if store.origin is not None else UNSET,
            ),
            sandbox=SlotsShown(slots=self.container_lock.slots, busy=self.container_lock.busy),
            connections=self.server.connections if self.server is not None else 0,
            settings=self._shown_settings(cfg),
            problems=[ProblemShown(message=e.message, hint=e.hint) for e in problems],
        )

    def _shown_settings(self, config: configmod.Config) -> list[SettingShown]:
        """Built once per configuration, not per ``status``: status is the request a
        busy daemon must answer at once, and the settings are most of its work."""
        if self._shown is None or self._shown[0] is not config:
            self._shown = (config, [_shown_source(s) for s in config.settings()])
        return self._shown[1]


def _shown_source(s: configmod.Setting) -> SettingShown:
    """A setting as ``status`` shows it: where its value came from, and the value
    itself only when it is not a secret (a secret is just set or not)."""
    return SettingShown(
        key=s.key.name,
        value=None if s.key.secret else s.value,
        set=bool(s.value) if s.key.secret else True,
        secret=s.key.secret,
        source=s.source,
    )


@dataclass
class _Abandoned:
    spent: Decimal  # what the run's turns, cut-offs and paid searches cost
    unanswered: list[dict[str, Any]]  # llm.cut_off payloads for calls without an answer
    # discovery.search payloads for paid searches sent and never answered
    unanswered_searches: list[dict[str, Any]]


def _abandoned_costs(conn: sqlite3.Connection, first: str, session: str | None) -> _Abandoned:
    """What a crash-abandoned run (first reservation ``first``) is known to have cost."""
    spent = Decimal(
        str(
            conn.execute(
                "SELECT coalesce(sum(json_extract(payload, '$.cost_usd')), 0) FROM events"
                " WHERE type IN ('llm.turn', 'llm.cut_off')"
                " AND json_extract(payload, '$.reservation') = ?",
                (first,),
            ).fetchone()[0]
        )
    )
    if session is not None:
        # Paid searches name the session, not the reservation.
        spent += Decimal(
            str(
                conn.execute(
                    "SELECT coalesce(sum(json_extract(payload, '$.cost_usd')), 0) FROM events"
                    " WHERE session = ? AND type = 'discovery.search'",
                    (session,),
                ).fetchone()[0]
            )
        )
    unanswered = []
    for started in _unanswered(conn, first, "llm.call_started", "call"):
        cut: dict[str, Any] = {
            k: started[k]
            for k in ("provider", "model", "purpose", "reservation", "call")
            if started.get(k) is not None
        }
        if started.get("worst_case_usd") is not None:
            cut["cost_usd"] = started["worst_case_usd"]
        unanswered.append(cut)
    return _Abandoned(spent, unanswered, _abandoned_searches(conn, first))


def _abandoned_searches(conn: sqlite3.Connection, first: str) -> list[dict[str, Any]]:
    """``discovery.search`` payloads for the paid searches of the run (first reservation
    ``first``) that were written ahead and never answered: charged their fee, estimated."""
    found = []
    for started in _unanswered(conn, first, "discovery.search_started", "search"):
        found.append(
            {
                "tool": started["tool"],
                "provider": started["provider"],
                "reservation": first,
                "search": started["search"],
                "ok": False,
                "error": "tsukud stopped before the search answered",
                "reason": "abandoned",
                "estimated": True,
                "cost_usd": started["worst_case_usd"],
            }
        )
    return found


#: What answers each write-ahead event: the types that end it, by the same number.
_ANSWERED_BY = {
    "llm.call_started": ("llm.turn", "llm.failed", "llm.cut_off"),
    "discovery.search_started": ("discovery.search",),
}


def _unanswered(
    conn: sqlite3.Connection, first: str, ahead: str, number: str
) -> list[dict[str, Any]]:
    """The ``ahead`` write-ahead payloads of the run (first reservation ``first``) that no
    event of :data:`_ANSWERED_BY` with the same ``number`` field ended, in order."""
    answers = _ANSWERED_BY[ahead]
    marks = ", ".join("?" * len(answers))
    # Compared as text: a shared ledger's json_extract answers text (events_pg.sql),
    # SQLite's the JSON type; the numbers are the same either way.
    answered = {
        str(row[0])
        for row in conn.execute(
            f"SELECT json_extract(payload, '$.{number}') FROM events"  # noqa: S608 - our names
            f" WHERE type IN ({marks}) AND json_extract(payload, '$.reservation') = ?",
            (*answers, first),
        )
    }
    return [
        started
        for (raw,) in conn.execute(
            "SELECT payload FROM events WHERE type = ?"
            " AND json_extract(payload, '$.reservation') = ? ORDER BY id",
            (ahead, first),
        )
        if str((started := json.loads(raw))[number]) not in answered
    ]


def _unfinished_discovery(conn: sqlite3.Connection, session: str) -> str | None:
    """The tool of ``session``'s discovery when it has no terminal event."""
    ended = conn.execute(
        "SELECT 1 FROM events WHERE session = ?"
        " AND type IN ('discovery.completed', 'discovery.failed') LIMIT 1",
        (session,),
    ).fetchone()
    row = conn.execute(
        "SELECT json_extract(payload, '$.tool') FROM events"
        " WHERE session = ? AND type = 'discovery.started' LIMIT 1",
        (session,),
    ).fetchone()
    return None if ended is not None or row is None else str(row[0])


@dataclass(frozen=True)
class _Unfinished:
    tool: str
    repo: str  # the repository, or the page an instructions build read


def _unfinished_create(conn: sqlite3.Connection, session: str) -> _Unfinished | None:
    """The tool and repo of ``session``'s create run (or the tool and page of its
    instructions build) when it has no terminal event."""
    ended = conn.execute(
        "SELECT 1 FROM events WHERE session = ?"
        " AND type IN ('generation.completed', 'generation.failed') LIMIT 1",
        (session,),
    ).fetchone()
    row = conn.execute(
        "SELECT payload FROM events WHERE session = ?"
        " AND type IN ('create.started', 'instructions.started') LIMIT 1",
        (session,),
    ).fetchone()
    if ended is not None or row is None:
        return None
    started = json.loads(row[0])
    return _Unfinished(started["tool"], started.get("repo") or started.get("url", ""))


def _mtime(path: str) -> int | None:
    """A directory's mtime (it changes when an entry is added, removed or renamed, as an
    editor's save does); None when it does not exist."""
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None
