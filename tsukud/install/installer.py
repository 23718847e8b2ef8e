"""Installing, listing, verifying and removing tools: the daemon's install service.

One :class:`Installer` per daemon (built by ``tsukud.services``). An install:

1. loads the recipe (``$TSUKU_HOME/recipes``, then the registry) and checks it can
   install on this platform;
2. resolves the version (GitHub releases; see ``versions.py``) and renders each selected
   step into an asset name and URL, matched against the release's asset list;
3. in a private staging directory ``tools/.staging-<name>-*``: downloads each asset
   (sha256 computed while streaming; checked against GitHub's ``digest``, the recipe's
   ``asset_sha256`` and a ``checksum_asset``/``checksum_url`` file when present),
   extracts it with the safe extractor, and assembles the tool's tree;
4. renames the tree to ``tools/<name>-<version>`` (atomic), runs the verify command
   there and checks its patterns;
5. points ``bin/<binary>`` at it (each link made as a temporary link renamed into
   place), records ``install.completed`` (durable), then deletes the version it
   replaced.

A failure at any step deletes what that install created and puts back what it moved, so
there is never a partial install or a dangling link; a crash is repaired by
``layout.reconcile`` at the next start. Installs of one tool are serialised by a
per-tool lock. Events: ``install.started``, ``install.completed``, ``install.failed``,
``install.removed``, ``install.verified``.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud import log
from tsukud.errors import NotFound, TsukuError
from tsukud.install import layout
from tsukud.install.download import (
    DEFAULT_MAX_BYTES,
    ChecksumMismatch,
    DownloadResult,
    check_sha256,
    download,
    download_streaming,
    parse_checksum_file,
)
from tsukud.install.extract import ExtractLimits, extract
from tsukud.install.registry import LoadedRecipe, Registry, check_name
from tsukud.install.versions import Resolution, VersionResolver
from tsukud.recipe import (
    ArchiveFormat,
    Platform,
    RecipeError,
    RenderedStep,
    VerifyCheck,
    VerifyFailed,
    check_verify_output,
    host_platform,
    render_recipe,
    render_verify,
    require_supported,
)

if TYPE_CHECKING:
    from tsukud.events.store import EventStore
    from tsukud.net.http import Http

ProgressFn = Callable[[dict[str, Any]], Awaitable[None]]
VERIFY_TIMEOUT_S = 60.0
MAX_OUTPUT = 4000
CHECKSUM_FILE_MAX = 1024 * 1024


class InstallError(TsukuError):
    code = "install_failed"


class BinaryNotInArchive(InstallError):
    code = "binary_not_in_archive"


class BinaryConflict(InstallError):
    code = "binary_conflict"


class NotInstalled(NotFound):
    code = "not_installed"


async def _no_progress(_frame: dict[str, Any]) -> None:
    return None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1024 * 1024):
            h.update(chunk)
    return h.hexdigest()


def _safe_rel(rel: str, what: str) -> str:
    norm = os.path.normpath(rel)
    if os.path.isabs(rel) or norm == ".." or norm.startswith("../") or "\x00" in rel:
        raise InstallError(f"{what} {rel!r} must be a relative path inside the tool")
    return norm


def _resolve_inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` with symlinks resolved, if that is a regular file inside ``root``."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(root / rel))
    try:
        real.relative_to(real_root)
    except ValueError:
        return None
    return real if real.is_file() else None


def _listing(root: Path, limit: int = 30) -> str:
    names: list[str] = []
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            names.append(os.path.relpath(os.path.join(dirpath, f), root))
    names.sort()
    shown = ", ".join(names[:limit])
    return shown + (f", … ({len(names) - limit} more)" if len(names) > limit else "") or "(empty)"


# What a verify command sees of the daemon's environment: enough to run, and nothing
# else. API keys and tokens in the daemon's environment never reach a downloaded binary.
_VERIFY_ENV_KEYS = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TERM",
    "TZ",
)


def verify_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: env[k] for k in _VERIFY_ENV_KEYS if k in env}


async def run_check(
    check: VerifyCheck, cwd: Path, path_dirs: list[Path], env: dict[str, str]
) -> tuple[int, str]:
    """Run a verify command via ``sh -c`` with ``path_dirs`` first on PATH; returns the
    exit status and the combined output (trimmed, capped)."""
    run_env = dict(env)
    run_env["PATH"] = os.pathsep.join(
        [*(str(p) for p in path_dirs), env.get("PATH", "/usr/bin:/bin")]
    )
    with trio.move_on_after(VERIFY_TIMEOUT_S) as scope:
        proc = await trio.run_process(
            ["sh", "-c", check.command],
            cwd=str(cwd),
            env=run_env,
            stdin=subprocess.DEVNULL,
            capture_stdout=True,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if scope.cancelled_caught:
        raise VerifyFailed(
            f"verify command `{check.command}` did not finish within {VERIFY_TIMEOUT_S:.0f} s",
            command=check.command,
        )
    out = proc.stdout.decode("utf-8", "replace").strip()
    if len(out) > MAX_OUTPUT:
        out = out[:MAX_OUTPUT] + "…"
    return proc.returncode, out


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
    ) -> None:
        self.home = home
        self.registry = registry
        self.resolver = resolver
        self.http = http
        self.store = store
        self._installed = installed
        self._github_url = github_url
        self.env = env
        self.platform = platform or host_platform()
        self.max_download_bytes = max_download_bytes
        self._locks: dict[str, trio.Lock] = {}
        self._recovery = trio.Lock()
        self._recovered = False

    def lock(self, name: str) -> trio.Lock:
        return self._locks.setdefault(name, trio.Lock())

    # ---- queries -----------------------------------------------------------------------

    def list_tools(self) -> list[dict[str, Any]]:
        return layout.installed_rows(self._installed())

    def record(self, name: str) -> dict[str, Any]:
        name = check_name(name)
        rec = self._installed().get(name)
        if rec is None:
            raise NotInstalled(f"{name} is not installed", tool=name)
        return rec

    async def info(self, name: str) -> dict[str, Any]:
        name = check_name(name)
        installed = self._installed().get(name)
        out: dict[str, Any] = {"tool": name, "installed": installed}
        try:
            loaded = await self.registry.load(name)
        except TsukuError as exc:
            if installed is None:
                raise
            out["recipe_error"] = exc.message
            return out
        meta = loaded.recipe.metadata
        out.update(
            {
                "name": meta.name,
                "description": meta.description,
                "homepage": meta.homepage,
                "recipe_source": loaded.source,
                "recipe_path": loaded.path,
                "recipe_sha256": loaded.sha256,
                "recipe_stale": loaded.stale,
                "platform": str(self.platform),
            }
        )
        try:
            steps = require_supported(loaded.recipe, self.platform)
            out["supported"] = True
            out["steps"] = [
                {"index": i, "action": s.action, "repo": s.repo, "asset_pattern": s.asset_pattern}
                for i, s in steps
            ]
        except RecipeError as exc:
            out["supported"] = False
            out["unsupported_reason"] = exc.message
        verify = loaded.recipe.verify
        if verify is not None and verify.command:
            out["verify"] = {"command": verify.command, "pattern": verify.pattern}
        return out

    # ---- install -----------------------------------------------------------------------

    async def install(
        self,
        name: str,
        version: str | None = None,
        *,
        force: bool = False,
        progress: ProgressFn = _no_progress,
    ) -> dict[str, Any]:
        name = check_name(name)
        await self.close_interrupted()
        session = "install-" + secrets.token_hex(6)
        return await _Run(self, name, version, session, progress).execute(force=force)

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

    async def remove(self, name: str) -> dict[str, Any]:
        name = check_name(name)
        session = "remove-" + secrets.token_hex(6)
        async with self.lock(name):
            rec = self.record(name)
            install_dir = Path(rec["install_dir"])
            links = self._unlink_binaries(rec)
            ev = self.store.append_nowait(
                "install.removed", {"tool": name, "version": rec.get("version")}, session
            )
            await self.store.wait_durable(ev.id)
            discard(install_dir)
            return {
                "tool": name,
                "version": rec.get("version"),
                "removed_links": links,
                "install_dir": str(install_dir),
                "session": session,
            }

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

    async def verify(self, name: str) -> dict[str, Any]:
        name = check_name(name)
        session = "verify-" + secrets.token_hex(6)
        async with self.lock(name):
            rec = self.record(name)
            install_dir = Path(rec["install_dir"])
            binaries: dict[str, Any] = rec.get("binaries") or {}
            problems = await trio.to_thread.run_sync(
                _integrity_problems, self.home, install_dir, binaries
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
                    output = await _run_checks(
                        checks, install_dir, _path_dirs(install_dir, binaries), self.env
                    )
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
            return {
                "tool": name,
                "version": rec.get("version"),
                "ok": True,
                "binaries": sorted(binaries),
                "output": output,
                "session": session,
            }


def _unfinished_installs(conn: Any) -> list[tuple[str, dict[str, Any]]]:
    import json

    rows = conn.execute(
        "SELECT s.session, s.payload FROM events s WHERE s.type = 'install.started'"
        " AND s.session IS NOT NULL AND NOT EXISTS (SELECT 1 FROM events e"
        " WHERE e.session = s.session"
        " AND e.type IN ('install.completed', 'install.failed'))"
    ).fetchall()
    return [(str(r[0]), json.loads(r[1])) for r in rows]


def _stream_limits(length: int | None) -> ExtractLimits:
    """The extractor sizes its compression-ratio budget from the archive file; a stream
    has no file size, so give it the budget the file would have had. Without a
    ``content-length`` only the absolute limits apply."""
    default = ExtractLimits()
    if length is None:
        return ExtractLimits(ratio_floor_bytes=default.max_total_bytes)
    return ExtractLimits(
        ratio_floor_bytes=max(default.ratio_floor_bytes, length * default.max_ratio)
    )


def discard(path: Path) -> None:
    """Rename ``path`` out of the way (one atomic step, so its name is free at once),
    then delete it in a background thread. A crash mid-delete leaves a ``.trash-*``
    directory, which ``layout.cleanup_staging`` removes at the next start."""
    if not path.exists() and not path.is_symlink():
        return
    trash = path.with_name(f"{layout.TRASH_PREFIX}{secrets.token_hex(6)}")
    os.replace(path, trash)
    threading.Thread(
        target=shutil.rmtree, args=(trash,), kwargs={"ignore_errors": True}, daemon=True
    ).start()


def _integrity_problems(home: Path, install_dir: Path, binaries: dict[str, Any]) -> list[str]:
    """Links and recorded sha256 of an installed tool's binaries, re-checked."""
    problems: list[str] = []
    if not install_dir.is_dir():
        return [f"{install_dir} is missing"]
    for bin_name, info in sorted(binaries.items()):
        path = install_dir / info["path"]
        link = layout.bin_dir(home) / bin_name
        if not link.is_symlink() or Path(os.readlink(link)) != path:
            problems.append(f"{link} does not point to {path}")
        real = _resolve_inside(install_dir, info["path"])
        if real is None:
            problems.append(f"{path} is missing")
            continue
        actual = sha256_file(real)
        if actual != info.get("sha256"):
            problems.append(
                f"{path} changed since install: sha256 {actual}, recorded {info.get('sha256')}"
            )
    return problems


def _path_dirs(install_dir: Path, binaries: dict[str, Any]) -> list[Path]:
    dirs: list[Path] = []
    for info in binaries.values():
        d = (install_dir / info["path"]).parent
        if d not in dirs:
            dirs.append(d)
    if (install_dir / "bin") not in dirs:
        dirs.append(install_dir / "bin")
    return dirs


async def _run_checks(
    checks: list[VerifyCheck], install_dir: Path, path_dirs: list[Path], env: dict[str, str]
) -> str:
    first_output = ""
    for i, check in enumerate(checks):
        code, out = await run_check(check, install_dir, path_dirs, env)
        check_verify_output(check, code, out)
        if i == 0:
            first_output = out
    return first_output


class _Run:
    """One install attempt: its session, stage and the things to undo on failure."""

    def __init__(
        self, inst: Installer, name: str, version: str | None, session: str, progress: ProgressFn
    ) -> None:
        self.inst = inst
        self.name = name
        self.requested = version
        self.session = session
        self._progress = progress
        self.timings_ms: dict[str, float] = {}
        self._stage = "recipe"
        self._stage_started = time.perf_counter()
        self.version: str | None = None
        self.staging: Path | None = None
        self.final_dir: Path | None = None
        self.moved_aside: Path | None = None  # a same-version copy moved out of the way
        self.links_done: list[tuple[Path, str | None]] = []  # (link, previous target)

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

    async def execute(self, *, force: bool) -> dict[str, Any]:
        try:
            return await self._execute(force=force)
        except BaseException as exc:
            self._rollback()
            if isinstance(exc, TsukuError):
                code, message = exc.code, exc.message
            elif isinstance(exc, Exception):
                code, message = "internal", f"{type(exc).__name__}: {exc}"
            else:
                code, message = "cancelled", "the install was cancelled"
            self._event(
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
            raise
        finally:
            if self.staging is not None:
                discard(self.staging)

    async def _execute(self, *, force: bool) -> dict[str, Any]:
        await self.progress("resolving", requested=self.requested)
        loaded = await self.inst.registry.load(self.name)
        self.name = loaded.name  # an alias (hx) installs as its recipe (helix)
        async with self.inst.lock(self.name):
            return await self._install(loaded, force=force)

    async def _install(self, loaded: LoadedRecipe, *, force: bool) -> dict[str, Any]:
        inst = self.inst
        recipe = loaded.recipe
        require_supported(recipe, inst.platform)
        self.stage = "resolve"
        res = await inst.resolver.resolve(recipe, self.requested)
        self.version = res.version
        current = inst._installed().get(self.name)
        final_dir = layout.tool_dir(inst.home, self.name, res.version)
        if (
            current is not None
            and current.get("version") == res.version
            and final_dir.is_dir()
            and not force
        ):
            return {
                "tool": self.name,
                "version": res.version,
                "already_installed": True,
                "install_dir": str(final_dir),
                "binaries": sorted((current.get("binaries") or {}).keys()),
            }
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
        self.stage = "render"
        assets = res.release.asset_names if res.release is not None else None
        rendered = render_recipe(
            recipe, res.resolved, inst.platform, assets=assets, github_url=inst._github_url()
        )
        tools = layout.tools_dir(inst.home)
        tools.mkdir(parents=True, exist_ok=True)
        self.staging = tools / (
            f"{layout.STAGING_PREFIX}{self.name}-{res.version}-{secrets.token_hex(4)}"
        )
        self.staging.mkdir(mode=0o700)
        root = self.staging / "root"
        asset_records = []
        for step in rendered:
            asset_records.append(await self._fetch_and_unpack(step, res, loaded, root))
        self.stage = "install"
        await self.progress("installing", version=res.version)
        binaries = await trio.to_thread.run_sync(self._assemble, rendered, root)
        conflicts = self._conflicts(binaries)
        if conflicts and not force:
            raise BinaryConflict(
                "; ".join(conflicts),
                hint="Remove the other tool first, or install with --force to take the names over.",
            )
        self._move_into_place(root, final_dir)
        self.stage = "verify"
        checks = self._verify_checks(loaded, res.version, final_dir)
        output = None
        if checks:
            await self.progress("verifying", command=checks[0].command)
            output = await _run_checks(checks, final_dir, _path_dirs(final_dir, binaries), inst.env)
        self.stage = "activate"
        previous_dir = Path(current["install_dir"]) if current is not None else None
        self._switch_links(binaries, final_dir)
        if current is not None:
            self._remove_stale_links(current, binaries)
        payload = {
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
            "verify_checks": [
                {"command": c.command, "patterns": list(c.patterns), "exit_code": c.exit_code}
                for c in checks
            ],
        }
        self.stage = "commit"
        ev = self._event("install.completed", payload)
        # Committed (the projection already has it; the writer makes it durable even if
        # this request is cancelled now): nothing below may undo the install.
        self.final_dir = None
        self.links_done = []
        with trio.CancelScope(shield=True):
            await inst.store.wait_durable(ev.id)
        if self.moved_aside is not None:
            discard(self.moved_aside)
            self.moved_aside = None
        if previous_dir is not None and previous_dir != final_dir:
            discard(previous_dir)
        self.stage = "done"
        return {
            "tool": self.name,
            "version": res.version,
            "tag": res.tag,
            "already_installed": False,
            "install_dir": str(final_dir),
            "binaries": sorted(binaries),
            "links": [str(layout.bin_dir(inst.home) / b) for b in sorted(binaries)],
            "assets": asset_records,
            "verify_output": output,
            "replaced": current.get("version") if current is not None else None,
            "session": self.session,
            "timings_ms": self.timings_ms,
        }

    # ---- steps -------------------------------------------------------------------------

    async def _fetch_and_unpack(
        self, step: RenderedStep, res: Resolution, loaded: LoadedRecipe, root: Path
    ) -> dict[str, Any]:
        inst = self.inst
        assert self.staging is not None
        self.stage = "download"
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

        if fmt.is_tar:
            # Unpack while downloading (the extractor reads the bytes as they arrive);
            # the result is only used once the whole file's checksum has passed.
            def consume(link: Path, length: int | None) -> Any:
                return extract(
                    link, unpack, fmt, strip_dirs=step.strip_dirs, limits=_stream_limits(length)
                )

            (downloads / str(step.index)).mkdir()
            result, unpacked = await download_streaming(
                inst.http,
                step.url,
                downloads / str(step.index) / local_name,
                consume,
                max_bytes=inst.max_download_bytes,
                on_progress=on_progress,
            )
            self.stage = "checksum"
            checked = await self._check(step, res, loaded, result)
            await self.progress(
                "verified_checksum", file=step.asset_name, sha256=result.sha256, checked=checked
            )
            self.stage = "extract"
            await self.progress("extracting", file=step.asset_name, format=fmt.value, streamed=True)
            if unpacked.error is not None:
                raise unpacked.error
        else:
            dest = downloads / f"{step.index}-{local_name}"
            result = await download(
                inst.http,
                step.url,
                dest,
                max_bytes=inst.max_download_bytes,
                on_progress=on_progress,
            )
            self.stage = "checksum"
            checked = await self._check(step, res, loaded, result)
            await self.progress(
                "verified_checksum", file=step.asset_name, sha256=result.sha256, checked=checked
            )
            self.stage = "extract"
            await self.progress("extracting", file=step.asset_name, format=fmt.value)
            await trio.to_thread.run_sync(
                lambda: extract(dest, unpack, fmt, strip_dirs=step.strip_dirs, name=name)
            )
            os.unlink(dest)
        return {
            "name": step.asset_name,
            "url": step.url,
            "size": result.size,
            "sha256": result.sha256,
            "digest_checked": "github_digest" in checked,
            "checked_against": checked,
        }

    async def _check(
        self, step: RenderedStep, res: Resolution, loaded: LoadedRecipe, result: DownloadResult
    ) -> list[str]:
        """Every expectation we have for this file; returns the names of those checked."""
        await self.progress("verifying_checksum", file=step.asset_name, sha256=result.sha256)
        checked: list[str] = []
        asset = res.release.asset(step.asset_name) if res.release is not None else None
        if asset is not None and asset.sha256:
            check_sha256(step.asset_name, result.sha256, asset.sha256, "GitHub's asset digest")
            checked.append("github_digest")
        meta = loaded.recipe.metadata
        pinned = (meta.asset_sha256 or {}).get(step.asset_name)
        if pinned and (meta.validated_version in (None, res.version)):
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
        """Build the tool's tree in ``root``; returns ``{name: {path, sha256}}``.

        Files are moved, not copied, out of the extraction directories (the same
        filesystem): a 200 MB binary costs a rename, not a second write.
        """
        assert self.staging is not None
        binaries: dict[str, dict[str, str]] = {}
        moved: dict[Path, Path] = {}  # extracted file -> where it went
        for step in rendered:
            unpacked = self.staging / f"x{step.index}"
            where = f"{self.name}: steps[{step.index}]"
            if step.install_mode == "directory":
                if not root.exists():
                    os.rename(unpacked, root)
                else:
                    shutil.copytree(unpacked, root, symlinks=True, dirs_exist_ok=True)
                for b in step.binaries:
                    dest = _safe_rel(b.dest, f"{where}: binary")
                    real = _resolve_inside(root, dest)
                    if real is None:
                        raise BinaryNotInArchive(
                            f"{where}: {b.dest} is not a file in {step.asset_name}; "
                            f"it has: {_listing(root)}"
                        )
                    os.chmod(real, 0o755)  # noqa: S103 - an executable for everyone, like /usr/bin
                    binaries[os.path.basename(dest)] = {"path": dest, "sha256": sha256_file(real)}
                continue
            root.mkdir(exist_ok=True)
            for b in step.binaries:
                src = _safe_rel(b.src, f"{where}: binary src")
                dest = _safe_rel(b.dest, f"{where}: binary dest")
                earlier = moved.get(Path(os.path.realpath(unpacked / src)))
                real = earlier or _resolve_inside(unpacked, src)
                if real is None:
                    raise BinaryNotInArchive(
                        f"{where}: {b.src} is not a file in {step.asset_name}"
                        + (f" (after strip_dirs={step.strip_dirs})" if step.strip_dirs else "")
                        + f"; it has: {_listing(unpacked)}"
                    )
                target = root / dest
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.exists() or target.is_symlink():
                    target.unlink()
                executable = bool(os.stat(real).st_mode & 0o111)
                if earlier is None:
                    os.rename(real, target)
                    moved[real] = target
                else:  # the same file installed twice: the second one is a copy
                    shutil.copyfile(real, target)
                mode = 0o755 if dest.startswith("bin/") or executable else 0o644
                os.chmod(target, mode)
                binaries[os.path.basename(dest)] = {"path": dest, "sha256": sha256_file(target)}
        root.mkdir(exist_ok=True)
        return binaries

    def _conflicts(self, binaries: dict[str, dict[str, str]]) -> list[str]:
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
                    for n, r in self.inst._installed().items()
                    if Path(str(r.get("install_dir", ""))).name == owner_dir
                ),
                None,
            )
            if owner is not None and owner != self.name:
                out.append(f"{link} belongs to {owner}")
        return out

    def _move_into_place(self, root: Path, final_dir: Path) -> None:
        if final_dir.exists() or final_dir.is_symlink():
            aside = final_dir.with_name(
                f"{layout.OLD_PREFIX}{final_dir.name}.{secrets.token_hex(4)}"
            )
            os.replace(final_dir, aside)
            self.moved_aside = aside
        os.chmod(root, 0o755)  # noqa: S103 - readable tool tree, like /usr/lib
        os.replace(root, final_dir)
        self.final_dir = final_dir

    def _verify_checks(
        self, loaded: LoadedRecipe, version: str, final_dir: Path
    ) -> list[VerifyCheck]:
        rendered = render_verify(loaded.recipe.verify, version, str(final_dir))
        if rendered is None:
            return []
        return [rendered.check, *rendered.additional]

    def _switch_links(self, binaries: dict[str, dict[str, str]], final_dir: Path) -> None:
        bins = layout.bin_dir(self.inst.home)
        bins.mkdir(parents=True, exist_ok=True)
        for bin_name, info in sorted(binaries.items()):
            link = bins / bin_name
            previous = os.readlink(link) if link.is_symlink() else None
            if link.exists() and not link.is_symlink():
                link.unlink()  # only reached with --force (see _conflicts)
            layout.replace_symlink(link, final_dir / info["path"])
            self.links_done.append((link, previous))

    def _remove_stale_links(
        self, previous: dict[str, Any], binaries: dict[str, dict[str, str]]
    ) -> None:
        old_dir = Path(str(previous.get("install_dir", "")))
        for bin_name in previous.get("binaries") or {}:
            if bin_name in binaries:
                continue
            link = layout.bin_dir(self.inst.home) / bin_name
            if link.is_symlink() and Path(os.readlink(link)).is_relative_to(old_dir):
                target = os.readlink(link)
                link.unlink()
                self.links_done.append((link, target))

    def _rollback(self) -> None:
        """Undo links and directories of an install that did not commit. Synchronous:
        it runs even when the request was cancelled."""
        for link, previous in reversed(self.links_done):
            try:
                if previous is None:
                    link.unlink(missing_ok=True)
                else:
                    layout.replace_symlink(link, Path(previous))
            except OSError as exc:
                log.get().warning("install.rollback_link_failed", link=str(link), error=str(exc))
        self.links_done = []
        if self.final_dir is not None:
            shutil.rmtree(self.final_dir, ignore_errors=True)
            self.final_dir = None
        if self.moved_aside is not None:
            target = (
                self.moved_aside.parent
                / self.moved_aside.name[len(layout.OLD_PREFIX) :].rsplit(".", 1)[0]
            )
            try:
                os.replace(self.moved_aside, target)
            except OSError as exc:
                log.get().warning("install.rollback_restore_failed", error=str(exc))
            self.moved_aside = None
