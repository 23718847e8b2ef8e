"""The daemon's install service: install, list, inspect, verify and remove tools.

One :class:`Installer` per daemon (built by ``tsukud.services``). Each install
is an :class:`~tsukud.install.attempt.InstallAttempt`; installs of one tool are
serialised by a per-tool lock. A crash is repaired by ``layout.reconcile`` when the
service is built, and the installs it interrupted get their ``install.failed`` before
the first new one starts. Events: ``install.started``, ``install.completed``,
``install.failed``, ``install.removed``, ``install.verified``.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio
from msgspec import UNSET, UnsetType

from tsukud.errors import TsukuError
from tsukud.install import layout, shell_init
from tsukud.install.attempt import InstallAttempt
from tsukud.install.checks import integrity_problems, run_checks
from tsukud.install.download import DEFAULT_MAX_BYTES
from tsukud.install.errors import not_installed
from tsukud.install.hidden import orphaned, unused_hidden
from tsukud.install.homebrew.deps import dependents, needs, unneeded
from tsukud.install.homebrew.errors import DependencyInUse
from tsukud.install.registry import Registry, check_name
from tsukud.install.results import (
    Installed,
    Removed,
    RemovedToolchain,
    ToolInfo,
    UnusedRemoved,
    UnusedToolchain,
    Verified,
    VerifyCommand,
)
from tsukud.install.versions import VersionResolver
from tsukud.progress import Progress, no_progress
from tsukud.recipe import (
    Platform,
    RecipeError,
    VerifyCheck,
    VerifyFailed,
    host_platform,
    require_supported,
    step_summary,
)

if TYPE_CHECKING:
    from tsukud.events.store import EventStore
    from tsukud.install.build import BuildSandbox
    from tsukud.install.homebrew.client import HomebrewClient
    from tsukud.net.http import Http
    from tsukud.policy.confirm import Confirmations


class Installer:
    def __init__(
        self,
        *,
        home: Path,
        registry: Registry,
        resolver: VersionResolver,
        http: Http,
        store: EventStore,
        installed: Callable[[], dict[str, dict[str, Any]]],
        github_url: Callable[[], str],
        env: dict[str, str],
        platform: Platform | None = None,
        max_download_bytes: int = DEFAULT_MAX_BYTES,
        confirmations: Confirmations | None = None,
        ecosystem_urls: Callable[[], Mapping[str, str]] = dict,
        package_proxies: Callable[[], Mapping[str, str]] = dict,
        homebrew: HomebrewClient | None = None,
        caller_path: Callable[[], str] | None = None,
        builds: Callable[[], BuildSandbox] | None = None,
    ) -> None:
        self.home = home
        # Where builds from source run: the build container, never this host.
        self.builds = builds
        # The PATH of the request's caller: the system commands a binary must not
        # shadow unasked (``shadowing.py``).
        self.caller_path = caller_path or (lambda: env.get("PATH", ""))
        # The formulae API and bottle registry (None: homebrew steps cannot install).
        self.homebrew = homebrew
        # Who asks the user (a run_command's yes); None: no one can be asked.
        self.confirmations = confirmations
        self.registry = registry
        self.resolver = resolver
        self.http = http
        self.store = store
        self.installed = installed
        self.github_url = github_url
        self.env = env
        self.platform = platform or host_platform()
        self.max_download_bytes = max_download_bytes
        # Version source (an ecosystem record's) -> the registry its package manager uses.
        self.ecosystem_urls = ecosystem_urls
        # The proxy variables package managers get, read per request (prefix.proxy_env).
        self.package_proxies = package_proxies
        self._locks: dict[str, trio.Lock] = {}
        self._recovery = trio.Lock()
        self._recovered = False

    def lock(self, name: str) -> trio.Lock:
        return self._locks.setdefault(name, trio.Lock())

    @asynccontextmanager
    async def _holding(self, name: str) -> AsyncIterator[tuple[dict[str, Any], Path]]:
        """An installed tool's record and directory, with its lock held (no install of
        it can change them meanwhile); :class:`NotInstalled` if there is none."""
        async with self.lock(name):
            rec = self.record(name)
            yield rec, Path(rec["install_dir"])

    # ---- queries -----------------------------------------------------------------------

    def record(self, name: str) -> dict[str, Any]:
        name = check_name(name)
        installed = self.installed()
        rec = installed.get(name)
        if rec is None:
            raise not_installed(name, installed)
        return rec

    async def info(self, name: str) -> ToolInfo:
        name = check_name(name)
        installed = self.installed().get(name)
        try:
            loaded = await self.registry.load(name)
        except TsukuError as exc:
            if installed is None:
                raise
            return ToolInfo(tool=name, installed=installed, recipe_error=exc.message)
        meta = loaded.recipe.metadata
        shown: list[dict[str, Any]] | UnsetType = UNSET
        unsupported: str | UnsetType = UNSET
        try:
            steps = require_supported(loaded.recipe, self.platform)
            shown = [{"index": i, **step_summary(s)} for i, s in steps]
        except RecipeError as exc:
            unsupported = exc.message
        verify = loaded.recipe.verify
        return ToolInfo(
            tool=name,
            installed=installed,
            name=meta.name,
            description=meta.description,
            homepage=meta.homepage,
            recipe_source=loaded.source,
            recipe_path=loaded.path,
            recipe_sha256=loaded.sha256,
            recipe_stale=loaded.stale,
            platform=str(self.platform),
            supported=unsupported is UNSET,
            steps=shown,
            unsupported_reason=unsupported,
            verify=VerifyCommand(command=verify.command, pattern=verify.pattern)
            if verify is not None and verify.command
            else UNSET,
        )

    async def plan(
        self,
        name: str | None,
        *,
        recipe_text: str | None = None,
        version: str | None = None,
        platform: str | None = None,
    ) -> dict[str, Any]:
        """What installing would do (``planning.py``); nothing is downloaded."""
        from tsukud.install.planning import plan_tool

        return await plan_tool(self, name, recipe_text, version, platform)

    # ---- install -----------------------------------------------------------------------

    async def install(
        self,
        name: str,
        version: str | None = None,
        *,
        force: bool = False,
        progress: Progress = no_progress,
        can_ask: bool = False,
        yes: bool = False,
        hidden: bool = False,
    ) -> Installed:
        """``yes``: the request said ``--yes``, which never lets a binary shadow a
        system command (such an install is refused rather than asked). ``hidden``: a
        toolchain installed for another tool's install, not linked into ``bin/``
        (``attempt.py``); a hidden tool installed again without it is linked."""
        name = check_name(name)
        await self.close_interrupted()
        session = "install-" + secrets.token_hex(6)
        attempt = InstallAttempt(
            self, name, version, session, progress, can_ask=can_ask, yes=yes, hidden=hidden
        )
        return await attempt.execute(force=force)

    async def close_interrupted(self) -> list[str]:
        """Installs a previous daemon started and never finished (it was killed) get
        their ``install.failed`` (stage ``interrupted``), so the ledger says how each
        install ended. Runs once, before this daemon's first install starts; the tree
        itself was already repaired by ``layout.reconcile``."""
        async with self._recovery:
            if self._recovered:
                return []
            rows = await self.store.read(_unfinished_installs)
            for session, payload in rows:
                self.store.append_nowait(
                    "install.failed",
                    {
                        "tool": payload.get("tool"),
                        "version": payload.get("version"),
                        "requested": payload.get("requested"),
                        "stage": "interrupted",
                        "error_code": "interrupted",
                        "message": "the daemon stopped before the install finished",
                    },
                    session,
                )
            self._recovered = True
            return [str(session) for session, _payload in rows]

    # ---- remove ------------------------------------------------------------------------

    async def remove(self, name: str) -> Removed:
        """Remove ``name``, then each hidden toolchain it leaves used by no installed
        tool (``hidden.orphaned``: as tsuku removes an orphaned implicit dependency;
        one the user installed by name stays), each with its own ``install.removed``
        (``toolchain_for``: the tool it was there for) in this session. Its other
        dependencies that nothing needs now are named, not removed."""
        name = check_name(name)
        session = "remove-" + secrets.token_hex(6)
        async with self._holding(name) as (rec, install_dir):
            self._check_unneeded(name)
            orphans = orphaned(self.installed(), name)
            links = await self._discard(name, rec, session)
            also: list[RemovedToolchain] = []
            for toolchain, served in orphans:
                gone = await self._discard_orphan(toolchain, served, session)
                if gone is not None:
                    also.append(gone)
            return Removed(
                tool=name,
                version=rec.get("version"),
                removed_links=links,
                install_dir=str(install_dir),
                session=session,
                # Its dependencies nothing else needs now: named, not removed (the user
                # may use them directly; `tsukuctl remove <dep>` is one line).
                unneeded_dependencies=unneeded(self.installed(), name, needs(rec)),
                also_removed=also,
            )

    async def remove_unused(self, names: list[str]) -> UnusedRemoved:
        """``remove --unused``: remove each of ``names`` (the hidden toolchains the person
        was shown as used by no installed tool, and said yes to) that still is one when
        its turn comes, under its lock (``hidden.unused_hidden``); any other name is kept,
        so a yes never takes more than was shown, and never a tool the user installed by
        name. Each is its own ``install.removed`` (``unused: true``) in one session."""
        session = "remove-" + secrets.token_hex(6)
        removed: list[UnusedToolchain] = []
        kept: list[str] = []
        for name in dict.fromkeys(check_name(n) for n in names):
            async with self.lock(name):
                if not unused_hidden(self.installed(), name):
                    kept.append(name)
                    continue
                rec = self.installed()[name]
                await self._discard(name, rec, session, unused=True)
                removed.append(
                    UnusedToolchain(
                        tool=name, version=rec.get("version"), install_dir=str(rec["install_dir"])
                    )
                )
        return UnusedRemoved(session=session, removed=removed, kept=kept)

    async def _discard(
        self,
        name: str,
        rec: dict[str, Any],
        session: str,
        toolchain_for: str | None = None,
        *,
        unused: bool = False,
    ) -> list[str]:
        """Unlink, record (durably) and delete one installed tool; its lock is held.
        Why it went, when not asked for by name: ``toolchain_for`` (with the last tool
        using it) or ``unused`` (``remove --unused``)."""
        links = self._unlink_binaries(rec)
        payload: dict[str, Any] = {"tool": name, "version": rec.get("version")}
        if toolchain_for is not None:
            payload["toolchain_for"] = toolchain_for
        if unused:
            payload["unused"] = True
        ev = self.store.append_nowait("install.removed", payload, session)
        await self.store.wait_durable(ev.id)
        layout.discard(Path(rec["install_dir"]))
        shell_init.discard(self.home, list(rec.get("shell_init") or ()))
        return links

    async def _discard_orphan(
        self, toolchain: str, served: str, session: str
    ) -> RemovedToolchain | None:
        """Remove a hidden toolchain ``served``'s removal left unused, under its own
        lock and only if it still is one: an install that meanwhile asked for it by name
        (no longer hidden) or ran on it keeps it. Checked and recorded with no ``await``
        between (the projection is the truth the next install reads)."""
        async with self.lock(toolchain):
            if not unused_hidden(self.installed(), toolchain):
                return None
            rec = self.installed()[toolchain]
            await self._discard(toolchain, rec, session, toolchain_for=served)
            return RemovedToolchain(
                tool=toolchain,
                version=rec.get("version"),
                toolchain_for=served,
                install_dir=str(rec["install_dir"]),
            )

    def _check_unneeded(self, name: str) -> None:
        """:class:`DependencyInUse` while another installed tool needs ``name``: at run
        time (its binaries load ``name``'s libraries), or built against it from source
        (tsuku refuses the removal of an install-time dependency alike)."""
        needed_by = dependents(self.installed(), name)
        if needed_by:
            raise DependencyInUse(
                f"{name} is needed by {', '.join(needed_by)}",
                hint=f"Remove {', '.join(needed_by)} first; {name} stays installed.",
                tool=name,
                needed_by=needed_by,
            )

    def _unlink_binaries(self, rec: dict[str, Any]) -> list[str]:
        removed = []
        install_dir = Path(rec["install_dir"])
        for bin_name in rec.get("binaries") or {}:
            link = layout.bin_dir(self.home) / bin_name
            if link.is_symlink() and Path(os.readlink(link)).is_relative_to(install_dir):
                link.unlink()
                removed.append(str(link))
        return removed

    # ---- verify ------------------------------------------------------------------------

    async def verify(self, name: str) -> Verified:
        name = check_name(name)
        session = "verify-" + secrets.token_hex(6)
        async with self._holding(name) as (rec, install_dir):
            binaries: dict[str, Any] = rec.get("binaries") or {}
            problems = await trio.to_thread.run_sync(
                partial(integrity_problems, linked=not rec.get("hidden")),
                self.home,
                install_dir,
                binaries,
            )
            output = None
            checks = [
                VerifyCheck(
                    command=c["command"],
                    patterns=tuple(c.get("patterns") or ()),
                    exit_code=int(c.get("exit_code") or 0),
                )
                for c in rec.get("verify_checks") or []
            ]
            if not problems and checks:
                try:
                    output = await run_checks(checks, install_dir, binaries, self.env)
                except VerifyFailed as exc:
                    problems.append(exc.message)
            ok = not problems
            ev = self.store.append_nowait(
                "install.verified",
                {
                    "tool": name,
                    "version": rec.get("version"),
                    "ok": ok,
                    "problems": problems,
                    "binaries_checked": len(binaries),
                    "verify_command": checks[0].command if checks else None,
                },
                session,
            )
            await self.store.wait_durable(ev.id)
            if not ok:
                raise VerifyFailed(
                    f"{name} {rec.get('version')} failed verification:\n  " + "\n  ".join(problems),
                    hint="Reinstall it with `tsukuctl install --force " + name + "`.",
                    problems=problems,
                    session=session,
                )
            return Verified(
                tool=name,
                version=rec.get("version"),
                ok=True,
                binaries=sorted(binaries),
                output=output,
                session=session,
            )


def _unfinished_installs(conn: Any) -> list[tuple[str, dict[str, Any]]]:
    import json

    rows = conn.execute(
        "SELECT s.session, s.payload FROM events s WHERE s.type = 'install.started'"
        " AND s.session IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e"
        " WHERE e.session = s.session"
        " AND e.type IN ('install.completed', 'install.failed'))"
    ).fetchall()
    return [(str(r[0]), json.loads(r[1])) for r in rows]
