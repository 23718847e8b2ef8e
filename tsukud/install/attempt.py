"""One install attempt: from the recipe to a committed ``install.completed``.

1. loads the recipe (``$TSUKU_HOME/recipes``, then the registry) and checks it can
   install on this platform; installs its runtime dependencies first
   (``homebrew/pour.py``);
2. resolves the version (GitHub releases or ``http_json``; see ``versions.py``) and
   renders each selected step into an asset name and URL, matched against the
   release's asset list (URL actions render to the same shape, one per file they
   install from; ``recipe/render.py``);
3. in a private staging directory ``tools/.staging-<name>-*``: downloads each asset
   (sha256 computed while streaming; checked against GitHub's ``digest``, the recipe's
   ``asset_sha256`` (a generated recipe installs only its validated version and the
   files it pins: ``pins.py``) or ``checksum`` and a ``checksum_asset``/``checksum_url`` file when
   present; a ``download`` with ``signature_url`` also has its detached OpenPGP
   signature checked by GnuPG against the key the recipe pins, ``openpgp.py``),
   extracts it with the safe extractor, runs the recipe's ``run_command``s in it
   (only after a person said yes to each exact command: ``commands.py``), and
   assembles the tool's tree (``assemble.py``); a binary that would shadow a system
   command or is named like one guarding credentials is refused or asked about before
   anything is linked or run (``shadowing.py``);
4. renames the tree to ``tools/<name>-<version>`` (atomic), runs the verify command
   there and checks its patterns;
5. points ``bin/<binary>`` at it (each link made as a temporary link renamed into
   place), records ``install.completed`` (durable), then deletes the version it
   replaced.

A failure at any step deletes what the attempt created and puts back what it moved
(:class:`~tsukud.install.transaction.InstallTransaction`), so there is never a partial
install or a dangling link, and records ``install.failed`` with the stage it reached.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import trio

from tsukud import log
from tsukud.errors import ConfirmationRequired, TsukuError
from tsukud.install import layout, shell_init
from tsukud.install.assemble import TreeAssembler, link_library, resolve_inside
from tsukud.install.build import build_in_container, replace_with_output
from tsukud.install.checks import run_checks, sha256_file
from tsukud.install.commands import check_may_run, command_env, question, run_on_host
from tsukud.install.context import InstallContext
from tsukud.install.download import (
    ChecksumMismatch,
    DownloadError,
    DownloadResult,
    check_sha256,
    download,
    download_streaming,
    from_mirrors,
    parse_checksum_file,
)
from tsukud.install.ecosystem import confine
from tsukud.install.ecosystem.cargo import rustup_env
from tsukud.install.errors import (
    BinaryConflict,
    BinaryNotInArchive,
    BuildFailed,
    GuardedCommandRefused,
    InstallError,
    ShadowingRefused,
    no_space,
)
from tsukud.install.extract import ExtractLimits, extract
from tsukud.install.hidden import refuse_replacing
from tsukud.install.homebrew import pour
from tsukud.install.homebrew.client import Bottle
from tsukud.install.homebrew.deps import (
    dependency_graph,
    install_order,
    refuse_version_change,
    runtime_dependencies,
)
from tsukud.install.openpgp import SignatureInvalid, verify_detached
from tsukud.install.pins import require_pinned_asset, require_validated
from tsukud.install.registry import LoadedRecipe
from tsukud.install.results import Installed
from tsukud.install.shadowing import shadowing, system_dirs
from tsukud.install.system_packages import (
    check_command,
    consent_question,
    install_command,
    install_packages,
    missing_packages,
    refusal,
    refuse_unvalidated,
    which,
)
from tsukud.install.transaction import InstallTransaction
from tsukud.install.versions import Resolution
from tsukud.progress import Progress
from tsukud.recipe import (
    ArchiveFormat,
    CpanInstallStep,
    EcosystemStep,
    InstallShellInitStep,
    LinkDependenciesStep,
    PipExecStep,
    Recipe,
    RenderedStep,
    RequireCommandStep,
    SystemPackagesStep,
    VerifyCheck,
    ecosystem_step,
    matching_steps,
    package_step,
    render_recipe,
    render_verify,
    require_supported,
)
from tsukud.recipe.build import Build
from tsukud.recipe.build_deps import build_dependencies
from tsukud.recipe.render import env_file, render_command, takes_first_match
from tsukud.recipe.system import shell_words
from tsukud.recipe.toolchains import toolchains

CHECKSUM_FILE_MAX = 1024 * 1024


def _program_dirs(record: Mapping[str, Any]) -> list[Path]:
    """The directories an installed tool's binaries are in (``bin/`` of a tree),
    absolute, in the record's order."""
    root = Path(str(record["install_dir"]))
    paths = [
        b["path"] if isinstance(b, dict) else b for b in (record.get("binaries") or {}).values()
    ]
    return list(dict.fromkeys((root / str(p)).parent for p in paths))


def _stream_limits(length: int | None) -> ExtractLimits:
    """The extractor sizes its compression-ratio budget from the archive's size, which a
    stream gives as its ``content-length`` (``extract(size=)``). Without one only the
    absolute limits apply."""
    if length is None:
        return ExtractLimits(ratio_floor_bytes=ExtractLimits().max_total_bytes)
    return ExtractLimits()


class InstallAttempt:
    """One install attempt: its session, stage and the things to undo on failure."""

    def __init__(
        self,
        inst: InstallContext,
        name: str,
        version: str | None,
        session: str,
        progress: Progress,
        *,
        can_ask: bool = False,
        yes: bool = False,
        hidden: bool = False,
    ) -> None:
        self.inst = inst
        # Installed as a toolchain another tool's install needed, not asked for by name:
        # nothing is linked into bin/ (tsuku's hidden install), so nothing of the user's
        # is shadowed and nobody is asked about it; asked for by name later, it is linked.
        self.hidden = hidden
        self.can_ask = can_ask  # a person can be asked (a run_command's yes)
        self.yes = yes  # --yes: refuse what would need a person's yes (shadowing)
        self.name = name
        self.requested = version
        self.session = session
        self._progress = progress
        self.timings_ms: dict[str, float] = {}
        self._stage = "recipe"
        self._stage_started = time.perf_counter()
        self.version: str | None = None
        self.staging: Path | None = None
        self.tx = InstallTransaction(inst.home)
        self.bottles: dict[int, Bottle] = {}  # a homebrew step's bottle, by index
        self.deps = pour.Dependencies()  # runtime dependencies: directories, formulas
        # What relocating the bottles did (install.completed's ``relocation``).
        self.relocation: dict[str, Any] | None = None
        self.strays: list[str] = []  # what install scripts left in bin/ (removed)
        # Build dependencies' tool directories (mounted read-only into the build).
        self.build_deps: dict[str, Path] = {}
        # The directories of an installed toolchain's programs, by the program's name:
        # first on the ecosystem runner's PATH (``_install_toolchains``).
        self.toolchain_bins: dict[str, list[Path]] = {}
        self.toolchain_dirs: dict[str, Path] = {}  # their tool directories
        # The recipes of those the tool runs on (``Toolchain.runtime``): its runtime
        # dependencies, and first on PATH in its commands' wrappers.
        self.runtime_toolchains: dict[str, str] = {}  # program -> recipe
        # Every toolchain installed from its recipe it ran with, runtime or not: who
        # uses a hidden one (install.completed's ``toolchains``, ``hidden.py``).
        self.toolchain_recipes: list[str] = []
        # How the tool was built, when it was (install.completed's ``build``).
        self.built: dict[str, Any] | None = None
        # Shell start-up fragments the person approved and this attempt wrote.
        self.shell_files: list[Path] = []

    @property
    def stage(self) -> str:
        return self._stage

    @stage.setter
    def stage(self, value: str) -> None:
        """Entering a stage also closes the previous one's timing."""
        now = time.perf_counter()
        spent = (now - self._stage_started) * 1000
        self.timings_ms[self._stage] = round(self.timings_ms.get(self._stage, 0.0) + spent, 1)
        self._stage, self._stage_started = value, now

    async def progress(self, stage: str, **data: Any) -> None:
        await self._progress({"stage": stage, "tool": self.name, **data})

    def _event(self, type_: str, payload: dict[str, Any]) -> Any:
        return self.inst.store.append_nowait(type_, payload, self.session)

    async def execute(self, *, force: bool) -> Installed:
        try:
            try:
                return await self._execute(force=force)
            except OSError as exc:
                # Assembling, moving into place, writing the registry cache: any write
                # that found the disk full says so.
                where = self.staging or layout.tools_dir(self.inst.home)
                full = no_space(exc, where, f"cannot install {self.name}")
                if full is None:
                    raise
                raise full from exc
        except BaseException as exc:
            self.tx.rollback()
            for path in self.shell_files:  # approved, but the install did not happen
                path.unlink(missing_ok=True)
            if isinstance(exc, TsukuError):
                code, message = exc.code, exc.message
            elif isinstance(exc, Exception):
                code, message = "internal", f"{type(exc).__name__}: {exc}"
            else:
                code, message = "cancelled", "the install was cancelled"
            failed = self._event(
                "install.failed",
                {
                    "tool": self.name,
                    "version": self.version,
                    "requested": self.requested,
                    "stage": self.stage,
                    "error_code": code,
                    "message": message,
                },
            )
            if isinstance(exc, Exception):
                # Durable before the error reaches the user: `events` run right after a
                # failed install shows why (a cancelled install must not wait here).
                with trio.move_on_after(5, shield=True), contextlib.suppress(TsukuError):
                    await self.inst.store.wait_durable(failed.id)  # the install's error wins
            raise
        finally:
            if self.staging is not None:
                layout.discard(self.staging)

    async def _execute(self, *, force: bool) -> Installed:
        await self.progress("resolving", requested=self.requested)
        loaded = await self.inst.registry.load(self.name)
        self.name = loaded.name  # an alias (hx) installs as its recipe (helix)
        async with self.inst.lock(self.name):
            return await self._install(loaded, force=force)

    async def _install(self, loaded: LoadedRecipe, *, force: bool) -> Installed:
        inst = self.inst
        recipe = loaded.recipe
        require_supported(recipe, inst.platform)
        # Runtime dependencies first: a missing recipe or a cycle is refused before
        # anything is fetched, and the bottle is relocated against their directories.
        self.deps = await self._install_dependencies(recipe)
        # Build dependencies likewise, each by its own recipe and install.
        self.build_deps = await self._install_build_dependencies(recipe)
        # The toolchains its ecosystem steps run, from their recipes when the registry
        # holds them (tsuku's install-time dependencies), likewise.
        self.toolchain_bins = await self._install_toolchains(recipe)
        self.stage = "resolve"
        res = await inst.resolver.resolve(recipe, self.requested)
        self.version = res.version
        # A generated recipe installs only the release it validated (pins.py).
        require_validated(recipe, res.version)
        # Another version would delete the directory its dependents' RPATH names, or
        # that their wrappers name (a hidden toolchain, by name or upgraded: hidden.py).
        refuse_replacing(inst.installed(), self.name, res.version, by_name=not self.hidden)
        refuse_version_change(inst.installed(), self.name, res.version)
        current = inst.installed().get(self.name)
        final_dir = layout.tool_dir(inst.home, self.name, res.version)
        if (
            current is not None
            and current.get("version") == res.version
            and final_dir.is_dir()
            and not force
            # A toolchain installed for another tool, now asked for by name: installed
            # again, linked and judged as any install (its questions asked).
            and not (current.get("hidden") and not self.hidden)
        ):
            return Installed(
                tool=self.name,
                version=res.version,
                already_installed=True,
                install_dir=str(final_dir),
                binaries=sorted((current.get("binaries") or {}).keys()),
            )
        self._event(
            "install.started",
            {
                "tool": self.name,
                "version": res.version,
                "requested": self.requested,
                "tag": res.tag,
                "repo": res.repo,
                "recipe_source": loaded.source,
            },
        )
        await self._host_steps(recipe, res.version)
        tools = layout.tools_dir(inst.home)
        tools.mkdir(parents=True, exist_ok=True)
        self.staging = tools / (
            f"{layout.STAGING_PREFIX}{self.name}-{res.version}-{secrets.token_hex(4)}"
        )
        self.staging.mkdir(mode=0o700)
        packaged = package_step(recipe, inst.platform)
        eco = ecosystem_step(recipe, inst.platform) or (
            packaged if isinstance(packaged, PipExecStep) else None
        )
        asset_records: list[dict[str, Any]] = []
        binaries: dict[str, dict[str, Any]]
        if isinstance(packaged, CpanInstallStep):
            self._refuse_conflicts(dict.fromkeys(packaged.executables), force)
            await self._refuse_shadowing(packaged.executables)
            binaries, records = await self._cpan(packaged, loaded, res.version, final_dir)
            asset_records.extend(records)
        elif eco is not None:
            self._refuse_conflicts(dict.fromkeys(eco.executables), force)
            await self._refuse_shadowing(eco.executables)
            binaries = await self._run_ecosystem(eco, res, final_dir)
            binaries = await self._wrap_commands(eco, binaries, final_dir)
            # What it produced beyond what the recipe declared is judged too.
            await self._refuse_shadowing(set(binaries) - set(eco.executables))
        else:
            self.stage = "render"
            assets = res.release.asset_names if res.release is not None else None
            self.bottles = await pour.find_bottles(
                inst.homebrew, recipe, res.resolved, inst.platform
            )
            rendered = render_recipe(
                recipe,
                res.resolved,
                inst.platform,
                assets=assets,
                github_url=inst.github_url(),
                bottles={i: b.ref for i, b in self.bottles.items()},
                take_first=takes_first_match(recipe),
            )
            root = self.staging / "root"
            for step in rendered:
                asset_records.append(await self._fetch_and_unpack(step, res, loaded, root))
                if step.build is not None:
                    await self._build(step, step.build, loaded, res.version, final_dir)
                bottle = self.bottles.get(step.index)
                if bottle is not None:
                    await self._relocate(step, bottle, final_dir)
                if step.commands:
                    await self._run_commands(step, loaded, final_dir)
            self.stage = "install"
            await self.progress("installing", version=res.version)
            binaries = await trio.to_thread.run_sync(self._assemble, rendered, root)
            await trio.to_thread.run_sync(self._link_dependencies, recipe, root, final_dir)
            env = env_file(recipe, inst.platform, res.version, str(final_dir))
            if env is not None:  # set_env: tsuku's env.sh in the tool's directory
                (root / "env.sh").write_text(env)
            self._refuse_conflicts(binaries, force)
            await self._refuse_shadowing(binaries)
            self.tx.move_into_place(root, final_dir)
        self.stage = "verify"
        checks = self._verify_checks(loaded, res.version, final_dir)
        output = None
        if checks:
            await self.progress("verifying", command=checks[0].command)
            output = await run_checks(checks, final_dir, binaries, inst.env)
        await self._shell_init(loaded.recipe, res.version, final_dir)
        self.stage = "activate"
        previous_dir = Path(current["install_dir"]) if current is not None else None
        if not self.hidden:
            self.tx.switch_links(binaries, final_dir)
        if current is not None:
            self.tx.remove_stale_links(current, binaries)
        payload: dict[str, Any] = {
            "tool": self.name,
            "version": res.version,
            "tag": res.tag,
            "repo": res.repo,
            "requested": self.requested,
            "recipe_source": loaded.source,
            "recipe_sha256": loaded.sha256,
            "platform": str(inst.platform),
            "assets": asset_records,
            "binaries": binaries,
            "install_dir": str(final_dir),
            "runtime_dependencies": list(
                dict.fromkeys(
                    [
                        *runtime_dependencies(recipe, inst.platform),
                        *self.runtime_toolchains.values(),
                    ]
                )
            ),
            "relocation": self.relocation,
            "build": self.built,
            "shell_init": [p.relative_to(inst.home).as_posix() for p in self.shell_files],
            "verify_checks": [
                {"command": c.command, "patterns": list(c.patterns), "exit_code": c.exit_code}
                for c in checks
            ],
        }
        if self.toolchain_recipes:
            payload["toolchains"] = self.toolchain_recipes
        if self.hidden:
            payload["hidden"] = True
        self.stage = "commit"
        ev = self._event("install.completed", payload)
        # Committed (the projection already has it; the writer makes it durable even if
        # this request is cancelled now): nothing below may undo the install.
        self.tx.commit()
        with trio.CancelScope(shield=True):
            await inst.store.wait_durable(ev.id)
        self.tx.clean_up(final_dir, previous_dir)
        if current is not None:  # the replaced version's shell start-up goes with it
            kept = {p.relative_to(inst.home).as_posix() for p in self.shell_files}
            old = [p for p in current.get("shell_init") or () if p not in kept]
            shell_init.discard(inst.home, old)
        self.stage = "done"
        return Installed(
            tool=self.name,
            version=res.version,
            tag=res.tag,
            already_installed=False,
            install_dir=str(final_dir),
            binaries=sorted(binaries),
            links=[]
            if self.hidden
            else [str(layout.bin_dir(inst.home) / b) for b in sorted(binaries)],
            assets=asset_records,
            verify_output=output,
            replaced=current.get("version") if current is not None else None,
            relocation=self.relocation,
            build=self.built,
            removed_strays=self.strays,
            session=self.session,
            timings_ms=self.timings_ms,
        )

    # ---- steps -------------------------------------------------------------------------

    def _refuse_conflicts(self, binaries: Mapping[str, Any], force: bool) -> None:
        if self.hidden:  # linked into bin/ only once asked for by name (judged then)
            return
        conflicts = self._conflicts(binaries)
        if conflicts and not force:
            raise BinaryConflict(
                "; ".join(conflicts),
                hint="Remove the other tool first, or install with --force to take the names over.",
            )

    async def _refuse_shadowing(self, binaries: Iterable[str]) -> None:
        """Before anything is linked (or verified on the host): a guarded name in a
        recipe for another tool is refused; a binary that would shadow a command on
        the caller's PATH is refused under ``--yes`` and asked about otherwise, naming
        the command it would hide (``shadowing.py`` says why)."""
        inst = self.inst
        current = inst.installed().get(self.name) or {}
        dirs = system_dirs(inst.caller_path(), layout.bin_dir(inst.home))
        # What its installed version links was judged then; a hidden one linked nothing.
        accepted = () if current.get("hidden") else current.get("binaries") or ()
        found = shadowing(self.name, binaries, dirs, accepted=accepted)
        if found.guarded:
            names = ", ".join(found.guarded)
            raise GuardedCommandRefused(
                f"{self.name}: the recipe would install {names} into "
                f"{layout.bin_dir(inst.home)}, first on PATH; {names} guards credentials "
                "or privileges and only its own recipe may install it",
                tool=self.name,
                binaries=list(found.guarded),
            )
        if not found.shadows or self.hidden:  # a hidden install links nothing into bin/
            return
        lines = "\n".join(
            f"    {name}  would run instead of {path}" for name, path in found.shadows.items()
        )
        where = layout.bin_dir(inst.home)
        if self.yes:
            raise ShadowingRefused(
                f"{self.name}: the recipe would install commands your shell already has, "
                f"into {where} (first on PATH):\n{lines}\n--yes does not accept that",
                tool=self.name,
                shadows=found.shadows,
            )
        ask = ConfirmationRequired(
            f"The recipe for {self.name} installs commands your shell already has, into "
            f"{where} (first on PATH once the hook is installed):\n{lines}\n",
            hint="A binary that shadows a command on your PATH is installed only after you "
            f"said yes to it; --yes does not cover it. Run `tsukuctl install {self.name}` "
            "from a terminal to be asked.",
            question="Install them anyway?",
            kind="shadowing",
            option={"tool": self.name, "shadows": found.shadows},
        )
        if inst.confirmations is None:
            raise ask
        await inst.confirmations.ask(
            self._progress, can_ask=self.can_ask, session=self.session, question=ask
        )

    async def _run_ecosystem(
        self, step: EcosystemStep | PipExecStep, res: Resolution, final_dir: Path
    ) -> dict[str, dict[str, Any]]:
        """Install with the ecosystem's package manager, in place (``ecosystem/prefix.py``
        says why): the toolchain is found first, so a missing one changes nothing. A
        toolchain installed from its recipe comes first on PATH, so its own program
        runs, not the host's."""
        from tsukud.install.ecosystem.actions import action_for, index_key
        from tsukud.install.ecosystem.prefix import Prefix, RunContext
        from tsukud.install.ecosystem.toolchain import find, path_first

        assert self.staging is not None
        inst = self.inst
        action = action_for(step)
        assert action.runner is not None
        self.stage = "toolchain"
        env = path_first(inst.env, self.toolchain_bins.get(action.toolchain.program, []))
        program = find(action.toolchain, env)
        keep: tuple[Path, ...] = ()
        if confine.available():  # a rustup under /root: its directories bound back
            rustup_home = rustup_env(inst.env).get("RUSTUP_HOME", "")
            installed_chain = self.toolchain_dirs.get(action.toolchain.program)
            if installed_chain is not None:  # bound back read-only: readable by nobody
                await trio.to_thread.run_sync(confine.open_tree, installed_chain)
            chosen = confine.toolchain_for_nobody(
                action.toolchain,
                program,
                [rustup_home],
                system_fallback=installed_chain is None,
            )
            program, keep = chosen.program, chosen.keep
        registry_url = inst.ecosystem_urls().get(action.version_source, "")
        self.stage = "install"
        await self.progress(
            "installing",
            version=res.version,
            action=step.action,
            package=step.package_name,
            program=str(program),
        )
        self.tx.claim(final_dir)
        # The package manager's home, caches and config: outside $TSUKU_HOME.
        scratch = Path(tempfile.mkdtemp(prefix="tsuku-install-"))
        confined = confine.available()
        confinement = None
        if confined:
            os.chown(scratch, confine.NOBODY, confine.NOBODY)
            (scratch / "hold").mkdir()
            confinement = confine.Confined(inst.home, scratch / "hold", keep)
        prefix = Prefix(self.name, final_dir, scratch / "work", confined=confinement)
        prefix.prepare()
        index_url = inst.ecosystem_urls().get(index_key(action.version_source), "")
        ctx = RunContext(
            step,
            res.tag,
            prefix,
            program,
            registry_url,
            env,
            index_url=index_url,
            proxies=inst.package_proxies(),
            http=inst.http,
        )
        bin_dir = layout.bin_dir(inst.home)
        before = {p.name for p in bin_dir.iterdir()} if bin_dir.is_dir() else set()
        try:
            binaries = await action.runner(ctx)
        finally:
            with trio.CancelScope(shield=True):
                if confined:  # the tool's directory back to the daemon's user
                    await trio.to_thread.run_sync(
                        confine.chown_tree, final_dir, os.getuid(), os.getgid()
                    )
                await trio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))
        await self._remove_strays(bin_dir, before)
        return binaries

    async def _wrap_commands(
        self,
        step: EcosystemStep | PipExecStep,
        binaries: dict[str, dict[str, Any]],
        final_dir: Path,
    ) -> dict[str, dict[str, Any]]:
        """The commands of a tool that runs on a toolchain installed from its recipe
        (``Toolchain.runtime``) wrapped so that toolchain comes first on PATH when they
        run (``ecosystem/wrappers.py``: ``#!/usr/bin/env node`` finds its node, not the
        user's); others as they are."""
        from tsukud.install.ecosystem.actions import action_for
        from tsukud.install.ecosystem.wrappers import wrap_commands

        program = action_for(step).toolchain.program
        if program not in self.runtime_toolchains:
            return binaries
        dirs = self.toolchain_bins.get(program, [])
        return await trio.to_thread.run_sync(wrap_commands, final_dir, binaries, dirs)

    async def _remove_strays(self, bin_dir: Path, before: set[str]) -> None:
        """What the install's scripts put in ``bin/`` (first on PATH with the hook) is
        removed and reported: an install leaves only what it declares."""
        strays = confine.stray_entries(bin_dir, before, layout.tools_dir(self.inst.home))
        for entry in strays:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
        if strays:
            names = ", ".join(sorted(e.name for e in strays))
            log.get().warning("install.strays_removed", tool=self.name, removed=names)
            self.strays = sorted(str(e) for e in strays)

    async def _fetch_and_unpack(
        self, step: RenderedStep, res: Resolution, loaded: LoadedRecipe, root: Path
    ) -> dict[str, Any]:
        inst = self.inst
        assert self.staging is not None
        self.stage = "download"
        require_pinned_asset(loaded.recipe, res.version, step.asset_name)  # before fetching
        if step.warning:  # a wildcard over several assets took the first, as tsuku does
            await self.progress("asset_chosen", file=step.asset_name, message=step.warning)
        downloads = self.staging / "downloads"
        downloads.mkdir(exist_ok=True)
        local_name = step.asset_name.replace("/", "_") or "asset"
        unpack = self.staging / f"x{step.index}"
        fmt = step.archive_format
        name = step.download_name if fmt is ArchiveFormat.RAW else None

        async def on_progress(done: int, total: int | None) -> None:
            await self.progress(
                "downloading", file=step.asset_name, bytes=done, total=total, version=res.version
            )

        streamed = fmt.is_tar and step.signature_url is None
        dest = downloads / f"{step.index}-{local_name}"
        unpacked: Any = None

        async def fetch(url: str) -> DownloadResult:
            nonlocal unpacked
            if streamed:
                # Unpack while downloading (the extractor reads the bytes as they
                # arrive); the result is only used once the checksum has passed.
                def consume(link: Path, length: int | None) -> Any:
                    return extract(
                        link,
                        unpack,
                        fmt,
                        strip_dirs=step.strip_dirs,
                        limits=_stream_limits(length),
                        size=length or 0,
                    )

                (downloads / str(step.index)).mkdir(exist_ok=True)
                result, unpacked = await download_streaming(
                    inst.http,
                    url,
                    downloads / str(step.index) / local_name,
                    consume,
                    max_bytes=inst.max_download_bytes,
                    on_progress=on_progress,
                    headers=self._headers(step),
                )
                return result
            return await download(
                inst.http,
                url,
                dest,
                max_bytes=inst.max_download_bytes,
                on_progress=on_progress,
                headers=self._headers(step),
            )

        async def failed_over(url: str, next_url: str, exc: DownloadError) -> None:
            await self.progress(
                "download_failed",
                file=step.asset_name,
                url=url,
                message=f"{url} failed ({exc.message}); trying {next_url}",
            )
            shutil.rmtree(unpack, ignore_errors=True)
            shutil.rmtree(downloads / str(step.index), ignore_errors=True)
            dest.unlink(missing_ok=True)

        # The primary URL, then each mirror (download's fallback_urls); whichever
        # serves is held to the same checks.
        url, result = await from_mirrors((step.url, *step.fallback_urls), fetch, failed_over)
        self.stage = "checksum"
        checked = await self._check(step, res, loaded, result)
        signed_by = None
        if step.signature_url is not None:
            signed_by = await self._check_signature(step, dest)
            checked.append("openpgp_signature")
        reason = None if checked else step.skip_verification_reason
        await self.progress(
            "verified_checksum",
            file=step.asset_name,
            sha256=result.sha256,
            checked=checked,
            **({"skip_verification_reason": reason} if reason else {}),
        )
        self.stage = "extract"
        if streamed:
            await self.progress("extracting", file=step.asset_name, format=fmt.value, streamed=True)
            if unpacked.error is not None:
                raise unpacked.error
        else:
            await self.progress("extracting", file=step.asset_name, format=fmt.value)
            await trio.to_thread.run_sync(
                lambda: extract(dest, unpack, fmt, strip_dirs=step.strip_dirs, name=name)
            )
            os.unlink(dest)
        record = {
            "name": step.asset_name,
            "url": url,
            "size": result.size,
            "sha256": result.sha256,
            "digest_checked": "github_digest" in checked,
            "checked_against": checked,
        }
        if signed_by is not None:
            record["signed_by"] = signed_by
        if reason:
            record["skip_verification_reason"] = reason
        return record

    async def _build(
        self,
        step: RenderedStep,
        build: Build,
        loaded: LoadedRecipe,
        version: str,
        final_dir: Path,
    ) -> None:
        """The unpacked source built in the build container, never here, and its
        verify run there against the output; the output becomes the step's work
        directory (``build.py`` says why and how)."""
        assert self.staging is not None
        self.stage = "build"
        sandbox = self.inst.builds() if self.inst.builds is not None else None
        if sandbox is None:
            raise BuildFailed(
                f"{self.name}: builds from source run only in the build container, and "
                "this installer has none",
                tool=self.name,
                stage="build",
            )
        source = self.staging / f"x{step.index}"
        scratch = self.staging / f"build{step.index}"
        prefix = self.staging / f"out{step.index}"
        scratch.mkdir()
        prefix.mkdir()
        await self.progress(
            "building",
            source_dir=build.source_dir,
            image=sandbox.image,
            message=f"building {build.source_dir} in the build container ({sandbox.image})",
        )
        checks = self._verify_checks(loaded, version, final_dir)
        await build_in_container(
            sandbox,
            build,
            tool=self.name,
            source=source,
            scratch=scratch,
            prefix=prefix,
            checks=checks,
            session=self.session,
            deps=self.build_deps,
        )
        self.built = {
            "image": sandbox.image,
            "kind": build.kind,
            "dependencies": {n: str(d) for n, d in self.build_deps.items()},
        }
        await trio.to_thread.run_sync(replace_with_output, source, prefix)
        await trio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))
        await self.progress("built", source_dir=build.source_dir, verified=bool(checks))

    async def _cpan(
        self, step: CpanInstallStep, loaded: LoadedRecipe, version: str, final_dir: Path
    ) -> tuple[dict[str, dict[str, str]], list[dict[str, Any]]]:
        """The distribution's bytes, and those of the distributions it needs, fetched
        here, installed by cpanm in the build container, never here, and verified
        there; what it proved moves into place (``cpan.py`` says why and how). Returns
        the executables to link and an asset record per distribution fetched."""
        from tsukud.install.cpan import (
            CHECKED_AGAINST,
            MIRROR_KEY,
            build_distribution,
            dependencies_message,
            fetch_distribution,
        )

        assert self.staging is not None
        inst = self.inst
        sandbox = inst.builds() if inst.builds is not None else None
        if sandbox is None:
            raise BuildFailed(
                f"{self.name}: a CPAN distribution builds only in the build container, and "
                "this installer has none",
                tool=self.name,
                stage="build",
            )
        self.stage = "download"
        base = step.mirror or inst.ecosystem_urls().get(MIRROR_KEY, "")
        mirror = self.staging / "cpan"
        scratch = self.staging / "build"
        output = self.staging / "root"
        for d in (mirror, scratch, output):
            d.mkdir()
        local = await fetch_distribution(inst.http, base, step, version, mirror)
        entry = local.entry
        if local.dependencies:  # what the container will install besides the distribution
            await self.progress(
                "cpan_dependencies",
                distribution=entry.file,
                dependencies=[
                    {"file": d.entry.file, "module": d.entry.module, "needed_by": d.needed_by}
                    for d in local.dependencies
                ],
                message=dependencies_message(local),
            )
        records: list[dict[str, Any]] = []
        for each in local.entries:
            archive = mirror / "authors" / "id" / each.path
            sha256 = await trio.to_thread.run_sync(sha256_file, archive)
            await self.progress(
                "verified_checksum", file=each.file, sha256=sha256, checked=[CHECKED_AGAINST]
            )
            records.append(
                {
                    "name": each.file,
                    "url": f"{base.rstrip('/')}/authors/id/{each.path}",
                    "sha256": sha256,
                    "size": archive.stat().st_size,
                    "digest_checked": False,
                    "checked_against": [CHECKED_AGAINST],  # fetch_distribution checked them
                }
            )
        self.stage = "build"
        await self.progress(
            "building",
            distribution=entry.file,
            image=sandbox.image,
            message=f"installing {entry.file} with cpanm in the build container ({sandbox.image})",
        )
        checks = self._verify_checks(loaded, version, final_dir)
        _run, binaries = await build_distribution(
            sandbox,
            entry,
            step,
            tool=self.name,
            mirror=mirror,
            scratch=scratch,
            output=output,
            where=str(final_dir),
            checks=checks,
            session=self.session,
        )
        self.built = {"image": sandbox.image, "kind": step.action, "dependencies": {}}
        await trio.to_thread.run_sync(lambda: shutil.rmtree(scratch, ignore_errors=True))
        self.stage = "install"
        await self.progress("installing", version=version)
        self.tx.move_into_place(output, final_dir)
        return binaries, records

    async def _relocate(self, step: RenderedStep, bottle: Bottle, final_dir: Path) -> None:
        """The unpacked keg rewritten for where it will live (``homebrew/relocate.py``)."""
        assert self.staging is not None
        self.stage = "relocate"
        await self.progress("relocating", file=step.asset_name)
        keg = self.staging / f"x{step.index}"
        deps = self.deps
        report = await pour.relocate(bottle, keg, final_dir, deps.dirs, formulas=deps.formulas)
        summary = report.summary()
        self.relocation = pour.merge_summaries(self.relocation, summary)
        left = summary["left_alone"]
        if left:
            # Said once per bottle, before the install goes on: the files are kept as
            # they are (rewriting binary data would corrupt it), and the user should know.
            await self.progress(
                "relocation_left_alone",
                count=len(left),
                files=[e["file"] for e in left[:3]],
                placeholders=sorted({p for e in left for p in e["placeholders"]}),
            )

    def _headers(self, step: RenderedStep) -> dict[str, str] | None:
        """A bottle's blob needs its registry's pull token (never recorded)."""
        bottle = self.bottles.get(step.index)
        return bottle.headers if bottle is not None else None

    async def _install_dependencies(self, recipe: Recipe) -> pour.Dependencies:
        """The recipe's runtime dependencies, installed first (each as its own tool,
        its own session) unless already there; their directories and formulas."""
        inst = self.inst
        target = inst.platform
        if not runtime_dependencies(recipe, target):
            return pour.Dependencies()
        self.stage = "dependencies"

        async def load(name: str) -> Recipe:
            return (await inst.registry.load(name)).recipe

        async def install(name: str) -> str:
            await self.progress("installing_dependency", dependency=name)
            done = await inst.install(
                name, progress=self._progress, can_ask=self.can_ask, yes=self.yes
            )
            return done.install_dir

        return await pour.install_dependencies(
            recipe, load, inst.installed, install, lambda r: runtime_dependencies(r, target)
        )

    async def _install_build_dependencies(self, recipe: Recipe) -> dict[str, Path]:
        """What a build from source on this platform needs installed first
        (``recipe/build.py`` ``build_dependencies``: tsuku's install-time
        dependencies), each missing one installed through its own recipe as its own
        install, deepest first, with this request's ``--yes`` and terminal: each asks
        what it would ask if installed alone, and nothing the person approved for this
        tool approves it. A missing recipe or a cycle is refused before anything is
        installed. Returns every one's tool directory (recipe name → directory), in
        install order, for the build container to mount read-only."""
        target = self.inst.platform
        if not build_dependencies(recipe, target):
            return {}
        inst = self.inst
        self.stage = "dependencies"

        def edges(needed: Recipe) -> tuple[str, ...]:
            both = (*build_dependencies(needed, target), *runtime_dependencies(needed, target))
            return tuple(dict.fromkeys(both))

        async def load(name: str) -> Recipe:
            return (await inst.registry.load(name)).recipe

        graph = await dependency_graph(recipe, load, edges)
        dirs: dict[str, Path] = {}
        for name in install_order(recipe.metadata.name, graph):
            record = inst.installed().get(name)
            if record is not None:  # installed ones stay as they are
                dirs[name] = Path(str(record["install_dir"]))
                continue
            await self.progress("installing_dependency", dependency=name, build=True)
            done = await inst.install(
                name, progress=self._progress, can_ask=self.can_ask, yes=self.yes
            )
            dirs[name] = Path(done.install_dir)
        return dirs

    async def _install_toolchains(self, recipe: Recipe) -> dict[str, list[Path]]:
        """Each toolchain the recipe's ecosystem steps run whose recipe the registry
        holds (the record's ``Toolchain.recipe``), installed first through that recipe as
        its own install, hidden (as tsuku installs an execution dependency: not linked
        into ``bin/``, so no command of the user's is shadowed and ``--yes`` has nothing
        to refuse), with this request's terminal for anything else it would ask; an
        installed one stays as it is. The directories of its programs, by the program
        the runner looks for; one the tool runs on (``Toolchain.runtime``) is noted as
        its runtime dependency. A toolchain without a recipe is the host's, found on
        PATH as before."""
        from tsukud.install.ecosystem.toolchain import recipe_held

        inst = self.inst
        out: dict[str, list[Path]] = {}
        for chain in toolchains(recipe, inst.platform):
            if chain.recipe in (None, recipe.metadata.name):  # itself: no cycle
                continue
            if not await recipe_held(inst.registry, chain):
                continue
            self.stage = "dependencies"
            record = inst.installed().get(chain.recipe)
            if record is None:
                await self.progress("installing_dependency", dependency=chain.recipe)
                await inst.install(
                    chain.recipe,
                    progress=self._progress,
                    can_ask=self.can_ask,
                    yes=self.yes,
                    hidden=True,
                )
                record = inst.installed()[chain.recipe]
            out[chain.program] = _program_dirs(record)
            self.toolchain_dirs[chain.program] = Path(str(record["install_dir"]))
            self.toolchain_recipes.append(chain.recipe)
            if chain.runtime:
                self.runtime_toolchains[chain.program] = chain.recipe
        return out

    def _may_ask(self) -> bool:
        """A person can be asked for a host change: at a terminal, and not under
        ``--yes`` (which never answers for them)."""
        return not self.yes and self.can_ask and self.inst.confirmations is not None

    async def _shell_init(self, recipe: Recipe, version: str, final_dir: Path) -> None:
        """Each ``install_shell_init`` step: the fragments it would add to the
        person's shell start-up, shown in full and written only after their yes
        (``shell_init.py`` says why ``--yes`` never counts). Under ``--yes`` or with
        nobody to ask the install stops before any ``source_command`` runs."""
        steps = [
            (i, s)
            for i, s in matching_steps(recipe, self.inst.platform, version)
            if isinstance(s, InstallShellInitStep)
        ]
        for index, step in steps:
            self.stage = "shell_init"
            confirmations = self.inst.confirmations
            if not self._may_ask() or confirmations is None:
                raise shell_init.refusal(self.name, index, step, yes=self.yes)
            env = command_env(self.inst.env, final_dir, final_dir)
            fragments = await trio.to_thread.run_sync(
                shell_init.gather, step, final_dir, version, env
            )
            if not fragments:
                continue
            await confirmations.ask(
                self._progress,
                can_ask=self.can_ask,
                session=self.session,
                question=shell_init.consent_question(self.name, index, fragments),
            )
            written = await trio.to_thread.run_sync(shell_init.write, self.inst.home, fragments)
            self.shell_files += written
            await self.progress(
                "shell_init_written",
                files=[f.path for f in fragments],
                message="shell start-up added",
            )

    async def _run_commands(
        self, step: RenderedStep, loaded: LoadedRecipe, final_dir: Path
    ) -> None:
        """The step's ``run_command``s, in its unpacked asset, each after a person has
        read it and said yes (``commands.py`` says why and when not at all)."""
        assert self.staging is not None
        self.stage = "run_command"
        work_dir = self.staging / f"x{step.index}"
        work_dir.mkdir(exist_ok=True)
        for index, template in step.commands:
            command = render_command(template, work_dir=str(work_dir), install_dir=str(final_dir))
            check_may_run(loaded.recipe, command)
            confirmations = self.inst.confirmations
            ask = question(self.name, index, command, str(work_dir))
            if confirmations is None:
                raise ask
            await confirmations.ask(
                self._progress, can_ask=self.can_ask, session=self.session, question=ask
            )
            await self.progress("running_command", command=command)
            env = command_env(self.inst.env, work_dir, final_dir)
            await trio.to_thread.run_sync(run_on_host, command, work_dir, env)

    async def _host_steps(self, recipe: Recipe, version: str) -> None:
        """The recipe's steps that act on the host, in order, before any download:
        ``require_command`` is checked; missing system packages are installed only
        after a person said yes to the exact command (``system_packages.py`` says why
        ``--yes`` never counts)."""
        env = self._caller_env()
        for index, step in matching_steps(recipe, self.inst.platform, version):
            if isinstance(step, RequireCommandStep):
                self.stage = "require_command"
                path = await trio.to_thread.run_sync(check_command, self.name, step, env)
                await self.progress("command_found", message=f"found {step.command}: {path}")
            elif isinstance(step, SystemPackagesStep):
                await self._system_packages(recipe, index, step)
            elif isinstance(step, InstallShellInitStep) and not self._may_ask():
                # Its text is shown after the install, but the answer is already
                # known: stop before anything is downloaded.
                self.stage = "shell_init"
                raise shell_init.refusal(self.name, index, step, yes=self.yes)

    def _caller_env(self) -> dict[str, str]:
        """The installer's environment with the caller's PATH: the commands a recipe
        requires, and the package manager, are the ones the person's shell finds."""
        return {**self.inst.env, "PATH": self.inst.caller_path()}

    async def _system_packages(self, recipe: Recipe, index: int, step: SystemPackagesStep) -> None:
        self.stage = "system_packages"
        env = self._caller_env()
        if step.unless_command and which(step.unless_command, env):
            return
        missing = await trio.to_thread.run_sync(missing_packages, step, env)
        if not missing:
            listed = ", ".join(step.packages)
            await self.progress("system_packages_present", message=f"installed: {listed}")
            return
        argv = install_command(step, missing)
        refuse_unvalidated(recipe, argv)
        confirmations = self.inst.confirmations
        if self.yes or not self.can_ask or confirmations is None:
            raise refusal(self.name, missing, argv, yes=self.yes)
        await confirmations.ask(
            self._progress,
            can_ask=self.can_ask,
            session=self.session,
            question=consent_question(self.name, index, step, missing, argv),
        )
        command = shell_words(argv)
        await self.progress("running_system_command", message=f"running: {command}")
        await trio.to_thread.run_sync(install_packages, self.name, step, argv, env)

    async def _fetch_small(self, url: str, what: str, file: str) -> bytes:
        """A signature or key file (small, through the shared HTTP layer); a failure to
        read it refuses the install, since the download cannot be checked without it."""
        try:
            resp = await self.inst.http.get(url, max_bytes=CHECKSUM_FILE_MAX)
        except TsukuError as exc:
            raise SignatureInvalid(
                f"cannot fetch the {what} {url} for {file}: {exc.message}",
                hint="The recipe's download is signed and the signature could not be "
                "checked; nothing was installed.",
                file=file,
            ) from None
        return resp.body

    async def _check_signature(self, step: RenderedStep, path: Path) -> str:
        """The download's detached OpenPGP signature, checked by GnuPG against the key
        the recipe pins (``openpgp.py``)."""
        assert step.signature_url and step.signature_key_url and step.signature_key_fingerprint
        await self.progress("verifying_signature", file=step.asset_name)
        signature = await self._fetch_small(step.signature_url, "signature", step.asset_name)
        key = await self._fetch_small(step.signature_key_url, "signing key", step.asset_name)
        fingerprint = step.signature_key_fingerprint
        return await trio.to_thread.run_sync(
            lambda: verify_detached(path, signature, key, fingerprint, name=step.asset_name)
        )

    async def _check(
        self, step: RenderedStep, res: Resolution, loaded: LoadedRecipe, result: DownloadResult
    ) -> list[str]:
        """Every expectation we have for this file; returns the names of those checked."""
        await self.progress("verifying_checksum", file=step.asset_name, sha256=result.sha256)
        checked: list[str] = []
        # A release asset's digest speaks for GitHub steps only: a URL step's file that
        # happens to share an asset's name is another file.
        asset = res.release.asset(step.asset_name) if res.release and step.repo else None
        if asset is not None and asset.sha256:
            check_sha256(step.asset_name, result.sha256, asset.sha256, "GitHub's asset digest")
            checked.append("github_digest")
        if step.checksum and step.index in self.bottles:
            source = "the bottle's manifest digest"
            check_sha256(step.asset_name, result.sha256, step.checksum, source)
            checked.append("bottle_digest")
        elif step.checksum:
            check_sha256(step.asset_name, result.sha256, step.checksum, "the recipe's checksum")
            checked.append("recipe_checksum")
        pinned = require_pinned_asset(loaded.recipe, res.version, step.asset_name)
        if pinned:
            check_sha256(step.asset_name, result.sha256, pinned, "the recipe's asset_sha256")
            checked.append("recipe")
        if step.checksum_url:
            try:
                resp = await self.inst.http.get(step.checksum_url, max_bytes=CHECKSUM_FILE_MAX)
            except TsukuError as exc:
                raise ChecksumMismatch(
                    f"cannot fetch the checksum file {step.checksum_url} for "
                    f"{step.asset_name}: {exc.message}",
                    hint="The recipe names a checksum file that could not be read; nothing "
                    "was installed.",
                ) from None
            expected = parse_checksum_file(resp.body.decode("utf-8", "replace"), step.asset_name)
            if expected is None:
                raise ChecksumMismatch(
                    f"the checksum file {step.checksum_url} has no sha256 for {step.asset_name}",
                    file=step.asset_name,
                )
            check_sha256(
                step.asset_name, result.sha256, expected, f"checksum file {step.checksum_url}"
            )
            checked.append("checksum_file")
        return checked

    def _assemble(self, rendered: list[RenderedStep], root: Path) -> dict[str, dict[str, str]]:
        """Build the tool's tree in ``root``; returns ``{name: {path, sha256}}``."""
        assert self.staging is not None
        tree = TreeAssembler(root, self.name)
        for step in rendered:
            tree.add(step, self.staging / f"x{step.index}")
        binaries: dict[str, dict[str, str]] = {}
        for bin_name, path in tree.finish().items():
            real = resolve_inside(root, path)
            if real is None:  # a later directory step replaced it with something else
                raise BinaryNotInArchive(f"{self.name}: {path} is not a file in the tool")
            binaries[bin_name] = {"path": path, "sha256": sha256_file(real)}
        return binaries

    def _link_dependencies(self, recipe: Recipe, root: Path, final_dir: Path) -> None:
        """Each ``link_dependencies`` step: the library (a runtime dependency, installed
        first) linked into the tool's ``lib/`` (``assemble.py`` ``link_library``)."""
        for index, step in matching_steps(recipe, self.inst.platform, self.version):
            if not isinstance(step, LinkDependenciesStep):
                continue
            where = f"{self.name}: steps[{index}]"
            record = self.inst.installed().get(step.library) or {}
            installed = str(record.get("version") or "")
            if step.version is not None and step.version != installed:
                raise InstallError(
                    f"{where}: link_dependencies asks for {step.library} {step.version}, "
                    f"and {step.library} {installed or '(none)'} is installed",
                    hint=f"Install {step.library}@{step.version} first, or drop the version "
                    "from the recipe's step to link the installed one.",
                )
            link_library(root, final_dir, self.deps.dirs[step.library], where)

    def _conflicts(self, binaries: Mapping[str, Any]) -> list[str]:
        bins = layout.bin_dir(self.inst.home)
        tools = layout.tools_dir(self.inst.home)
        out = []
        for bin_name in binaries:
            link = bins / bin_name
            if not link.exists() and not link.is_symlink():
                continue
            if not link.is_symlink():
                out.append(f"{link} exists and is not a tsuku link")
                continue
            target = Path(os.readlink(link))
            if not target.is_relative_to(tools):
                out.append(f"{link} points outside tsuku ({target})")
                continue
            owner_dir = target.relative_to(tools).parts[0]
            owner = next(
                (
                    n
                    for n, r in self.inst.installed().items()
                    if Path(str(r.get("install_dir", ""))).name == owner_dir
                ),
                None,
            )
            if owner is not None and owner != self.name:
                out.append(f"{link} belongs to {owner}")
        return out

    def _verify_checks(
        self, loaded: LoadedRecipe, version: str, final_dir: Path
    ) -> list[VerifyCheck]:
        rendered = render_verify(loaded.recipe.verify, version, str(final_dir))
        if rendered is None:
            return []
        return [rendered.check, *rendered.additional]
