"""The daemon keeps ``$TSUKU_HOME/share/binary-index.tsv`` current for the shell hooks.

The hooks never talk to the daemon (a shell must not wait on it); instead the daemon
rewrites the index whenever what it describes changes:

- installs, removals and recipes written: this service listens to the ledger for
  ``install.completed``, ``install.removed`` and ``recipe.written`` once it exists (its
  builder subscribes :meth:`HookIndex.on_event`); a recipe put in the local recipes
  directory by hand is noticed before the next request (``Daemon.before_request``);
- registry refreshes, and daemon start-up (the ledger may have moved on while no daemon
  ran): whoever does them calls :meth:`HookIndex.request_rebuild`;
- ``tsukuctl hook install`` asks for a rebuild through ``hooks.reindex``.

Rebuilds are coalesced (requests during a rebuild cause exactly one more) and run in a
worker thread; a failed background rebuild is logged, never raised into the caller, so
an install never fails because of the index.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import trio
from msgspec import UNSET, UnsetType

from tsukud import log
from tsukud.clock import Clock, SystemClock
from tsukud.hooks.index import SOURCES, parse_index, plan_index, render_index, write_index
from tsukud.hooks.sources import RecipeReader, installed_binaries

if TYPE_CHECKING:
    from tsukud.events.store import Event

# A recipe written by ``create`` (or saved after its preview) names commands too.
INDEX_EVENTS = frozenset({"install.completed", "install.removed", "recipe.written"})


class IgnoredClaim(msgspec.Struct, frozen=True, kw_only=True):
    """An alias claim on a command another tool provides under its own name: dropped
    from the index, and reported (``hook install``, ``doctor``)."""

    command: str
    tool: str
    source: str
    owner: str


class IndexBuilt(msgspec.Struct, frozen=True, kw_only=True):
    """What a rebuild wrote (``hooks.reindex``): where, how many rows, commands and tools,
    by source, when and how long it took, the recipes that could not be read; the
    ``hooks.reindex`` flow adds whether the registry's manifest was there first."""

    ignored_claims: list[IgnoredClaim]
    ambiguous: int  # commands several tools claim with none named after them
    path: str
    entries: int
    commands: int
    tools: int
    by_source: dict[str, int]
    built_at: float
    duration_ms: float
    recipe_errors: dict[str, str]  # recipe file → why it could not be read
    manifest: str | UnsetType = UNSET  # not asked, cached, fetched or unavailable: ...


class HookIndex:
    def __init__(
        self,
        home: Path,
        installed: Callable[[], Mapping[str, Mapping[str, Any]]],
        spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.home = home
        self._clock = clock or SystemClock()
        self._installed = installed
        self._spawn = spawn
        self._reader = RecipeReader()
        self._lock = trio.Lock()
        self._dirty = False
        self._scheduled = False
        self.last: IndexBuilt | None = None

    def on_event(self, ev: Event) -> None:
        if ev.type in INDEX_EVENTS:
            self.request_rebuild()

    def request_rebuild(self) -> None:
        """Rebuild soon, in the background; returns at once (safe from sync code), never
        raises for index problems. Called after a registry refresh and once the daemon
        is serving; installs and removals are picked up from the ledger without a call."""
        self._dirty = True
        if self._scheduled or self._spawn is None:
            return
        self._scheduled = True
        try:
            self._spawn(self._drain)
        except RuntimeError:
            self._scheduled = False  # not serving yet; the next request will schedule

    async def _drain(self) -> None:
        try:
            while self._dirty:
                self._dirty = False
                try:
                    await self.rebuild()
                except Exception as exc:
                    log.get().warning("hooks.index_failed", error=repr(exc))
        finally:
            self._scheduled = False

    async def rebuild(self) -> IndexBuilt:
        """Rewrite the index now and describe it."""
        async with self._lock:
            # The projection is only touched from the event loop: copy it here.
            installed = installed_binaries(dict(self._installed()))
            stats = await trio.to_thread.run_sync(self._build_sync, installed)
        self.last = stats
        log.get().info(
            "hooks.index_built",
            path=stats.path,
            entries=stats.entries,
            commands=stats.commands,
            tools=stats.tools,
            by_source=stats.by_source,
            built_at=stats.built_at,
            duration_ms=stats.duration_ms,
            ambiguous=stats.ambiguous,
            recipe_errors=len(stats.recipe_errors),
            ignored_claims=len(stats.ignored_claims),
        )
        return stats

    def _build_sync(self, installed: dict[str, list[str]]) -> IndexBuilt:
        t0 = self._clock.now()
        recipes = self._reader.scan(self.home)
        plan = plan_index(recipes, installed)
        text = render_index(plan)
        path = write_index(str(self.home), text)
        rows = parse_index(text)
        return IndexBuilt(
            ignored_claims=[
                IgnoredClaim(command=b, tool=t, source=src, owner=b) for b, t, src in plan.ignored
            ],
            ambiguous=sum(1 for r in plan.rows if r[3]),
            path=path,
            entries=len(rows),
            commands=len({b for b, _, _ in rows}),
            tools=len({t for _, t, _ in rows}),
            by_source={s: sum(1 for r in rows if r[2] == s) for s in SOURCES},
            built_at=(done := self._clock.now()),
            duration_ms=round((done - t0) * 1000, 1),
            recipe_errors=dict(sorted(self._reader.errors.items())),
        )
