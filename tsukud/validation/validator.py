"""Validating a candidate recipe: install it on the host side, verify it in a container.

Host side, per run of ``tsukuctl create``: render the recipe for the container's
platform (``linux/<host arch>``: a container is Linux even on a macOS host, so the
darwin build is never what gets validated), download each asset once (HTTPS or
loopback only, size cap, sha256, checked against GitHub's ``digest`` when the API gave
one), unpack it with the installer's safe extractor into a private staging directory and
assemble the tool's tree the way the installer does (``bin/<name>`` for each binary).
A missing binary is reported with the archive's file list before any container runs.
A ``configure_make`` is built as the installer builds it, in the build container
(``install/build.py``), and its output is the tree that is verified.

Container side (:mod:`tsukud.sandbox.runtime`, every isolation knob of the contract on):
the tree is mounted read-only at ``/tsuku/tool``, ``PATH`` starts with its binary
directories, and the verify command runs as ``/bin/sh -c <command>`` only after the
static check that forbids shell operators; ``{version}`` and ``{install_dir}`` are
filled in first. The daemon's container lock bounds how many validations run at once.

Each outcome is a :class:`Verdict`: ``passed``, ``failed`` (with the stage, the verify
command's own exit code and output, and a category) or ``skipped`` (no runtime, no
image, or no build for the container's platform), so the caller can repair, report or
record it. Downloads are kept for the run, so a repaired recipe that points at the same
asset costs no second download.
"""

from __future__ import annotations

import os
import posixpath
import secrets
import shlex
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import msgspec
import trio

from tsukud import binfmt
from tsukud.install.assemble import TreeAssembler, files
from tsukud.install.build import BuildSandbox, build_in_container, replace_with_output
from tsukud.install.download import (
    DEFAULT_MAX_BYTES,
    AssetMissing,
    ChecksumMismatch,
    DownloadError,
    DownloadResult,
    check_sha256,
    download,
    from_mirrors,
)
from tsukud.install.errors import BinaryNotInArchive, BuildFailed, InstallError
from tsukud.install.extract import ExtractError, extract
from tsukud.install.homebrew.errors import RelocationFailed
from tsukud.install.homebrew.pour import relocate as relocate_bottle
from tsukud.install.homebrew.relocate import LOADERS
from tsukud.net.http import HttpError
from tsukud.progress import Progress
from tsukud.recipe import (
    STANDARD_PLATFORMS,
    ArchiveFormat,
    AssetMatchError,
    Platform,
    Recipe,
    RecipeError,
    RenderedStep,
    RequireCommandStep,
    ResolvedVersion,
    SystemPackagesStep,
    UnsupportedPlatform,
    Verify,
    VerifyCheck,
    VerifyFailed,
    check_verify_output,
    host_platform,
    matching_steps,
    render_recipe,
    render_verify,
)
from tsukud.recipe.build import Build
from tsukud.recipe.build_deps import build_dependencies
from tsukud.recipe.render import render_command
from tsukud.sandbox.runtime import (
    BUILD_IMAGE,
    DEBIAN_IMAGE,
    ImageMissing,
    RunResult,
    RunSpec,
    RuntimeUnavailable,
)
from tsukud.secrets import redact
from tsukud.validation.sanitize import (
    BINARY_NOT_FOUND,
    CHECKSUM_MISMATCH,
    DOWNLOAD_404,
    DOWNLOAD_FAILED,
    EXEC_FORMAT,
    EXTRACTION,
    TIMEOUT,
    VERSION_MISMATCH,
    categorize,
)
from tsukud.validation.verify_command import verify_command_findings

if TYPE_CHECKING:
    from tsukud.install.homebrew.client import Bottle
    from tsukud.net.http import Http
    from tsukud.recipe.release import Release
    from tsukud.sandbox.runtime import ContainerRuntime

CONTAINER_DIR = "/tsuku/tool"
# Where a run_command's work directory (the unpacked asset) is mounted, writable.
CONTAINER_WORK_DIR = "/tsuku/work"
CONTAINER_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# The environment of a command run in the validation container (probes, run_command).
_CONTAINER_ENV = {"PATH": CONTAINER_PATH, "HOME": "/tmp", "TSUKU_VALIDATION": "1"}  # noqa: S108
TIMEOUT_S = 300.0
OUTPUT_CAP = 64 * 1024
# Environment the validation run sets to values that are not secret (see run_command).
PUBLIC_ENV = frozenset({"PATH", "HOME", "TSUKU_VALIDATION"})
OUTPUT_KEEP = 4000
MAX_LISTING = 60

Status = Literal["passed", "failed", "skipped"]
Lock = Callable[[str | None], AbstractAsyncContextManager[Any]]


class ValidatedAsset(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    url: str
    size: int
    sha256: str
    digest_checked: bool


class Verdict(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One validation attempt. ``exit_code`` and ``output`` are the verify command's
    own (never the container's bookkeeping); ``category`` is the failure kind from
    :func:`tsukud.validation.sanitize.categorize` or a stage-specific one."""

    status: Status
    # render | download | extract | relocate | run_command | layout | verify | runtime | skipped
    stage: str
    platform: str
    message: str = ""
    category: str | None = None
    version: str | None = None
    tag: str | None = None
    image: str | None = None
    assets: tuple[ValidatedAsset, ...] = ()
    command: str | None = None
    exit_code: int | None = None
    output: str = ""
    timed_out: bool = False
    duration_ms: int = 0
    listing: tuple[str, ...] = ()  # files of the unpacked asset, for layout failures
    executables: tuple[str, ...] = ()
    hint: str | None = None
    platforms: tuple[PlatformProof, ...] = ()  # every standard platform, once proven

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def failed(self) -> bool:
        return self.status == "failed"


ProofStatus = Literal["passed", "failed", "unproven", "unsupported"]


class PlatformProof(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """How far one platform's build was proven. ``how``: ``run`` (in the container),
    ``emulated`` (in the container under qemu-user), ``inspected`` (its binaries'
    headers checked: darwin builds cannot run here), ``script`` (its programs are
    scripts, the same on every platform: nothing platform-specific was proven).
    ``unproven`` means this machine could not tell, never that it passed;
    ``unsupported``: the recipe has no build."""

    platform: str
    status: ProofStatus
    how: str = ""
    message: str = ""
    category: str | None = None
    assets: tuple[ValidatedAsset, ...] = ()


class RunOutcome(msgspec.Struct, frozen=True, kw_only=True):
    exit_code: int
    output: str
    timed_out: bool
    duration_ms: int


def container_platform(host: Platform | None = None) -> Platform:
    """Where a validation runs: Linux on the host's architecture."""
    h = host or host_platform()
    return Platform("linux", h.arch, h.libc if h.os == "linux" and h.libc else "glibc")


def container_output(text: str, env: Mapping[str, str]) -> str:
    """A validation run's output as the model may read it (repair feedback): secrets
    redacted, and whatever the container was handed in its environment too, except the
    values this stage sets itself and that say nothing secret (``PUBLIC_ENV``)."""
    return redact(text, (v for k, v in env.items() if k not in PUBLIC_ENV))


def _tail(text: str, keep: int = OUTPUT_KEEP) -> str:
    text = text.strip()
    return text if len(text) <= keep else "…" + text[-keep:]


def _open_tree(root: Path) -> None:
    """Directories 0755, so the container's unprivileged user can read the tree."""
    os.chmod(root, 0o755)  # noqa: S103 - a read-only tool tree, like /usr/lib
    for dirpath, dirs, _names in os.walk(root):
        for d in dirs:
            p = os.path.join(dirpath, d)
            if not os.path.islink(p):
                os.chmod(p, 0o755)  # noqa: S103


@dataclass(frozen=True)
class Pour:
    """How a ``homebrew`` recipe's bottles go into a validation tree, as the installer
    pours them: the bottle of each ``homebrew`` step by index (looked up by
    ``install/homebrew/pour.py``), the version ``{version}`` means (a bottle's registry
    tag is not a GitHub tag), and the container paths the keg and its runtime
    dependencies will be seen at, which relocation writes into it."""

    version: str
    bottles: Mapping[int, Bottle]
    placed_at: str = CONTAINER_DIR
    deps: Mapping[str, str] = field(default_factory=dict)
    formulas: Mapping[str, str] = field(default_factory=dict)  # dependency → its formula

    async def relocate(self, bottle: Bottle, keg: Path, target: Platform) -> None:
        """Relocate for the container: its paths, and its loader (the host may be a Mac)."""
        deps = {name: Path(path) for name, path in self.deps.items()}
        loader = LOADERS.get(_QEMU_ARCH.get(target.arch, target.arch))  # uname's names
        await relocate_bottle(
            bottle, keg, Path(self.placed_at), deps, formulas=self.formulas, loader=loader
        )


@dataclass
class Prepared:
    """A recipe installed into a staging tree, ready for verify commands (or the
    failure that stopped it: ``failure``)."""

    run: ValidationRun
    root: Path | None
    version: str
    tag: str
    platform: Platform
    binaries: dict[str, str] = field(default_factory=dict)  # name -> path inside the tree
    assets: tuple[ValidatedAsset, ...] = ()
    failure: Verdict | None = None
    # Other trees the verify command needs beside this one (a bottle's dependencies):
    # (host directory, container path), mounted read-only.
    mounts: tuple[tuple[Path, str], ...] = ()

    def verdict(self, status: Status, stage: str, **kw: Any) -> Verdict:
        """A verdict on this recipe at this release, for this platform."""
        return Verdict(
            status=status,
            stage=stage,
            platform=self.platform.key,
            version=self.version,
            tag=self.tag,
            image=self.run.validator.image,
            assets=self.assets,
            **kw,
        )

    def _path(self) -> str:
        dirs: list[str] = []
        for rel in [*self.binaries.values(), "bin/x"]:
            d = posixpath.join(CONTAINER_DIR, posixpath.dirname(rel))
            if d not in dirs:
                dirs.append(d)
        return ":".join([*dirs, CONTAINER_PATH])

    async def run_command(self, command: str) -> RunOutcome | Verdict:
        """Run one already rendered command in the container; a :class:`Verdict` when
        it could not run at all (skipped: no runtime or image)."""
        assert self.root is not None
        problems = verify_command_findings(command)
        if problems:
            return self.verdict(
                "failed",
                "verify",
                command=command,
                message=problems[0].message,
                category="verify_command",
            )
        v = self.run.validator
        try:
            rt = await v.runtime()
        except RuntimeUnavailable as exc:
            return self.verdict(
                "skipped", "runtime", command=command, message=exc.message, hint=exc.hint
            )
        spec = RunSpec(
            image=v.image,
            command=["/bin/sh", "-c", command],
            mounts=[(self.root, CONTAINER_DIR, True), *((p, c, True) for p, c in self.mounts)],
            env={"PATH": self._path(), "HOME": "/tmp", "TSUKU_VALIDATION": "1"},  # noqa: S108
            workdir="/tmp",  # noqa: S108
            timeout_s=v.timeout_s,
            labels={"dev.tsuku.session": self.run.session or ""},
            output_cap=OUTPUT_CAP,
        )
        try:
            async with v.lock(self.run.session):
                res = await rt.run(spec)
        except ImageMissing as exc:
            return self.verdict(
                "skipped", "runtime", command=command, message=exc.message, hint=exc.hint
            )
        except RuntimeUnavailable as exc:
            v.forget()
            return self.verdict(
                "skipped", "runtime", command=command, message=exc.message, hint=exc.hint
            )
        return RunOutcome(
            exit_code=res.exit_code,
            output=container_output(res.text, spec.env),
            timed_out=res.timed_out,
            duration_ms=round(res.duration_s * 1000),
        )

    async def binary_problem(self) -> str | None:
        """Why one of the tree's binaries is not a program for this platform (read from
        its header: ELF machine, Mach-O CPU types, fat slices), or ``None``."""
        assert self.root is not None
        root = self.root

        def check() -> str | None:
            for rel in sorted(self.binaries.values()):
                path = root / rel
                with path.open("rb") as f:
                    head = f.read(binfmt.HEAD_BYTES)
                problem = binfmt.platform_problem(
                    binfmt.inspect(head),
                    self.platform.os,
                    self.platform.arch,
                    mode=path.stat().st_mode,
                )
                if problem is not None:
                    return f"{rel} {problem}"
            return None

        return await trio.to_thread.run_sync(check)

    async def scripts_only(self) -> bool:
        """Whether every binary of the tree is a script (``#!``): the same file whatever
        the platform, so nothing about a platform can be proven from it."""
        assert self.root is not None
        root = self.root

        def check() -> bool:
            for rel in self.binaries.values():
                with (root / rel).open("rb") as f:
                    if binfmt.inspect(f.read(binfmt.HEAD_BYTES)).kind != "script":
                        return False
            return bool(self.binaries)

        return await trio.to_thread.run_sync(check)

    async def verify(self, verify: Verify | None) -> Verdict:
        """Run the recipe's verify command and judge its output."""
        if self.failure is not None:
            return self.failure
        rendered = render_verify(verify, self.version, CONTAINER_DIR)
        if rendered is None:
            return self.verdict(
                "failed", "verify", message="the recipe has no verify command",
                category="verify_command",
            )  # fmt: skip
        verdict = await self._check(rendered.check)
        # ``[[verify.additional]]`` runs too, as the installer runs it after an install.
        for extra in rendered.additional:
            if not verdict.passed:
                break
            also = await self._check(extra)
            if not also.passed:
                return also
        return verdict

    async def _check(self, check: VerifyCheck) -> Verdict:
        """Run one rendered verify check in the container and judge its output."""
        got = await self.run_command(check.command)
        if isinstance(got, Verdict):
            return got
        output = got.output.strip()
        common: dict[str, Any] = {
            "command": check.command,
            "exit_code": got.exit_code,
            "output": _tail(output),
            "duration_ms": got.duration_ms,
        }
        if got.timed_out:
            return self.verdict(
                "failed",
                "verify",
                message=f"`{check.command}` did not finish within "
                f"{self.run.validator.timeout_s:.0f} s",
                category=TIMEOUT,
                timed_out=True,
                **common,
            )
        try:
            check_verify_output(check, got.exit_code, output)
        except VerifyFailed as exc:
            category = categorize(output, got.exit_code).category
            if got.exit_code == check.exit_code:
                category = VERSION_MISMATCH  # it ran; only the pattern is missing
            return self.verdict(
                "failed", "verify", message=exc.message, category=category, **common
            )
        return self.verdict("passed", "verify", **common)


class Validator:
    """Validation for one daemon (or one test): where staging lives, which image,
    runtime and lock to use. :meth:`session` gives one run's :class:`ValidationRun`."""

    def __init__(
        self,
        *,
        http: Http,
        github_url: str | Callable[[], str],
        workdir: Path,
        runtime: Callable[[], Awaitable[ContainerRuntime]],
        image: str | Callable[[], str],
        lock: Lock,
        forget: Callable[[], None] = lambda: None,
        platform: Platform | None = None,
        timeout_s: float = TIMEOUT_S,
        max_download_bytes: int | None = None,
        emulates: Callable[[str], bool] | None = None,
        build_image: str = BUILD_IMAGE,
    ) -> None:
        self.http = http
        # Where a recipe's configure_make builds (install/build.py).
        self.build_image = build_image
        self.emulates = emulates or binfmt_handler_registered
        self._github_url = github_url
        self.workdir = workdir
        self.runtime = runtime
        self._image = image
        self.lock = lock
        self.forget = forget
        self.platform = platform or container_platform()
        self.timeout_s = timeout_s
        self.max_download_bytes = max_download_bytes
        self.cleaned = False

    @property
    def image(self) -> str:
        return self._image() if callable(self._image) else self._image

    @property
    def github_url(self) -> str:
        return self._github_url() if callable(self._github_url) else self._github_url

    async def check_ready(self) -> None:
        """Raise :class:`RuntimeUnavailable` or :class:`ImageMissing` unless a container
        could run now: asked before anything is paid for or downloaded."""
        rt = await self.runtime()
        image = self.image
        if not await rt.image_exists(image):
            raise ImageMissing(
                f"validation image {image!r} is not present in the container runtime"
            )

    def remove_stale(self) -> int:
        """Delete staging a previous daemon left (none of ours can be running yet)."""
        removed = 0
        if self.workdir.is_dir():
            for entry in self.workdir.iterdir():
                if entry.name.startswith("run-"):
                    shutil.rmtree(entry, ignore_errors=True)
                    removed += 1
        self.cleaned = True
        return removed

    @asynccontextmanager
    async def session(
        self, session: str | None, progress: Progress | None = None
    ) -> AsyncIterator[ValidationRun]:
        """A run's work directory (removed afterwards). ``progress`` hears each asset's
        download and each platform's proof as they happen (create's progress frames)."""
        if not self.cleaned:
            self.remove_stale()
        self.workdir.mkdir(parents=True, exist_ok=True)
        run_dir = self.workdir / f"run-{secrets.token_hex(6)}"
        run_dir.mkdir(mode=0o700)
        try:
            yield ValidationRun(self, run_dir, session, progress)
        finally:
            with trio.CancelScope(shield=True):  # also when the client went away
                await trio.to_thread.run_sync(lambda: shutil.rmtree(run_dir, ignore_errors=True))


class ValidationRun:
    def __init__(
        self,
        validator: Validator,
        directory: Path,
        session: str | None,
        progress: Progress | None = None,
    ) -> None:
        self.validator = validator
        self.dir = directory
        self.session = session
        self.progress = progress
        self.platform = validator.platform
        self._downloads: dict[str, tuple[Path, DownloadResult, bool, str]] = {}
        self._count = 0

    def _new_dir(self, kind: str) -> Path:
        self._count += 1
        d = self.dir / f"{kind}-{self._count}"
        d.mkdir()
        return d

    async def _download(
        self,
        step: RenderedStep,
        digests: Mapping[str, str],
        headers: dict[str, str] | None = None,
    ) -> tuple[Path, ValidatedAsset]:
        cached = self._downloads.get(step.asset_name)
        if cached is None:
            dest = self._new_dir("dl") / (step.asset_name.replace("/", "_") or "asset")
            report = self.progress

            async def on_progress(done: int, total: int | None) -> None:
                if report is not None:
                    await report(
                        {"stage": "downloading", "file": step.asset_name, "bytes": done}
                        | {"total": total}
                    )

            async def fetch(url: str) -> DownloadResult:
                return await download(
                    self.validator.http,
                    url,
                    dest,
                    max_bytes=self.validator.max_download_bytes or DEFAULT_MAX_BYTES,
                    on_progress=on_progress,
                    headers=headers,
                )

            async def failed_over(url: str, next_url: str, exc: DownloadError) -> None:
                dest.unlink(missing_ok=True)
                if report is not None:
                    await report(
                        {
                            "stage": "download_failed",
                            "file": step.asset_name,
                            "url": url,
                            "message": f"{url} failed ({exc.message}); trying {next_url}",
                        }
                    )

            # The mirrors the install would try (download's fallback_urls), in its order.
            served, result = await from_mirrors((step.url, *step.fallback_urls), fetch, failed_over)
            expected = digests.get(step.asset_name)
            if expected:
                check_sha256(step.asset_name, result.sha256, expected, "GitHub's asset digest")
            cached = (dest, result, bool(expected), served)
            self._downloads[step.asset_name] = cached
        path, result, checked, served = cached
        return path, ValidatedAsset(
            name=step.asset_name,
            url=served,
            size=result.size,
            sha256=result.sha256,
            digest_checked=checked,
        )

    async def prepare(
        self,
        recipe: Recipe,
        release: Release,
        platform: Platform | None = None,
        *,
        pour: Pour | None = None,
    ) -> Prepared:
        """Render, download, unpack and assemble ``recipe`` at ``release`` for
        ``platform`` (the container's by default); a ``homebrew`` recipe's bottles are
        poured and relocated as ``pour`` says. Failures that are the recipe's fault
        come back in ``Prepared.failure`` (a URL step's static ``checksum`` that the
        served file does not match is one, category ``checksum_mismatch``); a mismatch
        with GitHub's digest or a bottle's manifest digest (the file is not what was
        published) is raised."""
        version, tag = (pour.version if pour else release.version), release.tag
        bottles = pour.bottles if pour is not None else {}
        target = platform or self.platform
        assets: list[ValidatedAsset] = []

        def failed(status: Status, stage: str, **kw: Any) -> Prepared:
            at = Prepared(
                self, root=None, version=version, tag=tag, platform=target, assets=tuple(assets)
            )
            at.failure = at.verdict(status, stage, **kw)
            return at

        try:
            steps = render_recipe(
                recipe,
                ResolvedVersion(version, tag),
                target,
                assets=release.assets,
                github_url=self.validator.github_url,
                bottles={i: b.ref for i, b in bottles.items()},
            )
        except UnsupportedPlatform as exc:
            where = "the container's platform" if target == self.platform else "a platform"
            return failed(
                "skipped",
                "render",
                message=f"the recipe does not install on {target.key}, {where}: {exc.message}",
            )
        except AssetMatchError as exc:
            return failed("failed", "render", message=exc.message, category=DOWNLOAD_404)
        except RecipeError as exc:
            return failed("failed", "render", message=exc.message)
        if target.os == "linux":
            problem = await self._host_steps(recipe, version, target)
            if problem is not None:
                status, message, hint = problem
                return failed(status, "system_packages", message=message, hint=hint)
        tree = TreeAssembler(self._new_dir("tree") / "root", recipe.metadata.name)
        for step in steps:
            bottle = bottles.get(step.index)
            try:
                path, asset = await self._download(
                    step, release.digests, bottle.headers if bottle is not None else None
                )
            except (DownloadError, HttpError) as exc:
                missing = isinstance(exc, AssetMissing)
                return failed(
                    "failed",
                    "download",
                    message=f"{step.asset_name}: {exc.message}",
                    category=DOWNLOAD_404 if missing else DOWNLOAD_FAILED,
                )
            assets.append(asset)
            if step.checksum and bottle is not None:  # not the recipe's fault: raised
                check_sha256(
                    step.asset_name, asset.sha256, step.checksum, "the bottle's manifest digest"
                )
            elif step.checksum:  # the recipe's own: a wrong one is the recipe's fault
                try:
                    check_sha256(
                        step.asset_name, asset.sha256, step.checksum, "the recipe's checksum"
                    )
                except ChecksumMismatch as exc:
                    return failed(
                        "failed", "download", message=exc.message, category=CHECKSUM_MISMATCH
                    )
            unpacked = self._new_dir("x") / "tree"
            try:
                await self._extract(path, unpacked, step)
            except ExtractError as exc:
                return failed("failed", "extract", message=exc.message, category=EXTRACTION)
            if pour is not None and bottle is not None:
                try:
                    await pour.relocate(bottle, unpacked, target)
                except RelocationFailed as exc:
                    return failed("failed", "relocate", message=exc.message, hint=exc.hint)
            if step.build is not None:
                needs = build_dependencies(recipe, target, version)
                name = recipe.metadata.name
                problem = await self._build(step.build, unpacked, name, target, needs)
                if problem is not None:
                    status, message, hint = problem
                    return failed(status, "build", message=message, hint=hint)
            if step.commands:
                problem = await self._run_commands(step, unpacked, target)
                if problem is not None:
                    status, message, hint = problem
                    return failed(status, "run_command", message=message, hint=hint)
            try:
                await trio.to_thread.run_sync(tree.add, step, unpacked)
            except BinaryNotInArchive as exc:
                found, executables = await trio.to_thread.run_sync(files, exc.searched or unpacked)
                return failed(
                    "failed",
                    "layout",
                    message=exc.reason,
                    category=BINARY_NOT_FOUND,
                    listing=tuple(found[:MAX_LISTING]),
                    executables=tuple(executables[:MAX_LISTING]),
                )
            except InstallError as exc:  # a path outside the tool
                return failed("failed", "layout", message=exc.message, category=BINARY_NOT_FOUND)
        binaries = await trio.to_thread.run_sync(tree.finish)
        await trio.to_thread.run_sync(_open_tree, tree.root)
        return Prepared(
            self,
            root=tree.root,
            version=version,
            tag=tag,
            platform=target,
            binaries=binaries,
            assets=tuple(assets),
        )

    async def _host_steps(
        self, recipe: Recipe, version: str, target: Platform
    ) -> tuple[Status, str, str | None] | None:
        """The recipe's steps that act on the host, proven as far as an offline
        container can: the Debian image's family is debian, so its ``apt_install``
        packages must already be in the image (``dpkg-query`` in the container says so;
        with no network nothing can be installed) and each ``require_command`` must be
        on the container's PATH after them. What cannot be proven that way (a package
        the image lacks, a missing command, any system package step when the image is
        not Debian's) makes the run ``skipped`` with the reason, never a pass. Steps for
        other families serve other platforms and are not claimed here."""
        v = self.validator
        family = "debian" if v.image == DEBIAN_IMAGE else None
        here = Platform(target.os, target.arch, target.libc, family)
        selected = [s for _, s in matching_steps(recipe, here, version)]
        packages = [s for s in selected if isinstance(s, SystemPackagesStep)]
        commands = [s.command for s in selected if isinstance(s, RequireCommandStep)]
        if family is None and any(isinstance(s, SystemPackagesStep) for s in recipe.steps):
            return (
                "skipped",
                f"{recipe.metadata.name}: its system package steps cannot be proven in "
                f"the validation image {v.image} (it has no package manager of their "
                "families); the validation did not pass",
                "Validate with the Debian image (`tsukuctl sandbox prepare`), or install it "
                "yourself: the install shows each system command before it runs.",
            )
        if not packages and not commands:
            return None
        names = [p for s in packages for p in s.packages]
        probes = [
            f"{{ dpkg-query -W -f='${{Status}}' {shlex.quote(n)} 2>/dev/null"
            f" | grep -qx 'install ok installed' || {{ echo 'package {n} is not installed'; "
            "exit 1; }; }"
            for n in names
        ]
        probes += [
            f"{{ command -v {shlex.quote(c)} >/dev/null || {{ echo 'command {c} is not on "
            "PATH'; exit 1; }; }"
            for c in commands
        ]
        res = await self._in_container(" && ".join(probes))
        if not isinstance(res, RunResult):
            return res
        if res.exit_code == 0 and not res.timed_out:
            return None
        what = _tail(container_output(res.text, _CONTAINER_ENV)) or f"exit {res.exit_code}"
        return (
            "skipped",
            f"{recipe.metadata.name}: a host step could not be proven in the offline "
            f"validation container ({what}): the container cannot install system "
            "packages, so this step is not proven and the validation did not pass",
            "The install asks before running the system command on your machine; "
            "validation proves only what the image already has.",
        )

    async def _run_commands(
        self, step: RenderedStep, work: Path, target: Platform
    ) -> tuple[Status, str, str | None] | None:
        """The step's ``run_command``s, here and only here without asking anyone: in the
        container (no network, no capabilities), the unpacked asset mounted writable as
        the work directory, as the daemon's own uid so what they write stays
        removable. ``(status, message, hint)`` when one could not run or failed."""
        if target != self.platform:
            return (
                "skipped",
                f"run_command steps run only in the container, on {self.platform.key}",
                None,
            )
        for _index, template in step.commands:
            command = render_command(
                template, work_dir=CONTAINER_WORK_DIR, install_dir=CONTAINER_DIR
            )
            res = await self._in_container(command, work=work)
            if not isinstance(res, RunResult):
                return res
            if res.timed_out or res.exit_code != 0:
                why = "timed out" if res.timed_out else f"exited with {res.exit_code}"
                output = _tail(container_output(res.text, _CONTAINER_ENV))
                return "failed", f"run_command {why}: {command}\nOutput: {output}", None
        return None

    async def _build(
        self,
        build: Build,
        source: Path,
        tool: str,
        target: Platform,
        deps: tuple[str, ...] = (),
    ) -> tuple[Status, str, str | None] | None:
        """A ``configure_make`` built as the installer builds it: in the build
        container, never here (``install/build.py``); its output replaces the source.
        The verify command runs afterwards over the assembled tree, as for any recipe.
        A build against build dependencies is not validated here (they would have to be
        installed first, and validation installs nothing): skipped, saying so.
        ``(status, message, hint)`` when it could not run or failed."""
        if deps:
            return (
                "skipped",
                f"the build needs {', '.join(deps)} installed first; validation installs "
                "nothing, so it is proven by the install (in the build container too)",
                None,
            )
        if target != self.platform:
            return (
                "skipped",
                f"builds from source run only in the build container, on {self.platform.key}",
                None,
            )
        v = self.validator
        sandbox = BuildSandbox(runtime=v.runtime, lock=v.lock, image=v.build_image)
        scratch = self._new_dir("build")
        prefix = self._new_dir("out") / "tool"
        prefix.mkdir()
        try:
            await build_in_container(
                sandbox,
                build,
                tool=tool,
                source=source,
                scratch=scratch,
                prefix=prefix,
                checks=(),
                session=self.session,
            )
        except BuildFailed as exc:
            return "failed", exc.message, exc.hint
        except (ImageMissing, RuntimeUnavailable) as exc:
            if isinstance(exc, RuntimeUnavailable):
                v.forget()
            return "skipped", exc.message, exc.hint
        await trio.to_thread.run_sync(replace_with_output, source, prefix)
        return None

    async def _in_container(
        self, command: str, *, work: Path | None = None
    ) -> RunResult | tuple[Status, str, str | None]:
        """``sh -c command`` in the validation container (no network, no capabilities,
        the daemon's own uid so what it writes stays removable; ``work`` mounted
        writable as the work directory), under the container lock: its result, or
        ``skipped`` with why when no runtime or image answered."""
        v = self.validator
        try:
            rt = await v.runtime()
        except RuntimeUnavailable as exc:
            return "skipped", exc.message, exc.hint
        spec = RunSpec(
            image=v.image,
            command=["/bin/sh", "-c", command],
            mounts=() if work is None else ((work, CONTAINER_WORK_DIR, False),),
            env=_CONTAINER_ENV,
            workdir=None if work is None else CONTAINER_WORK_DIR,
            user=f"{os.getuid()}:{os.getgid()}",
            timeout_s=v.timeout_s,
            labels={"dev.tsuku.session": self.session or ""},
            output_cap=OUTPUT_CAP,
        )
        try:
            async with v.lock(self.session):
                res = await rt.run(spec)
        except (ImageMissing, RuntimeUnavailable) as exc:
            if isinstance(exc, RuntimeUnavailable):
                v.forget()
            return "skipped", exc.message, exc.hint
        return res

    async def prove_platforms(self, recipe: Recipe, release: Release, verdict: Verdict) -> Verdict:
        """Given a passed ``verdict`` on the container's platform, prove the other
        standard platforms as far as this machine can, concurrently (container runs
        share the daemon's lock): Linux builds run in the container (another CPU's
        under qemu-user), darwin builds are downloaded, unpacked by the recipe's own
        rules and their binaries' Mach-O headers checked. The passed verdict that
        comes back carries every platform's proof and every proven platform's assets
        (so the recipe pins them all); a platform whose build is wrong fails it."""
        if not verdict.passed:
            return verdict
        others = [p for p in STANDARD_PLATFORMS if p.key != verdict.platform]
        proofs: dict[str, PlatformProof] = {
            verdict.platform: PlatformProof(
                platform=verdict.platform, status="passed", how="run", assets=verdict.assets
            )
        }

        async def prove(target: Platform) -> None:
            proofs[target.key] = await self._prove(recipe, release, target)

        async with trio.open_nursery() as nursery:
            for target in others:
                nursery.start_soon(prove, target)
        order = [verdict.platform, *(p.key for p in others)]
        ordered = tuple(proofs[k] for k in order)
        wrong = next((p for p in ordered if p.status == "failed"), None)
        if wrong is not None:
            return msgspec.structs.replace(
                verdict,
                status="failed",
                stage="platform",
                platform=wrong.platform,
                message=wrong.message,
                category=wrong.category or EXEC_FORMAT,
                assets=wrong.assets,
                command=None,
                exit_code=None,
                output="",
                platforms=ordered,
            )
        pinned: dict[str, ValidatedAsset] = {}
        for proof in ordered:
            for asset in proof.assets:
                pinned.setdefault(asset.name, asset)
        return msgspec.structs.replace(verdict, assets=tuple(pinned.values()), platforms=ordered)

    async def _prove(self, recipe: Recipe, release: Release, target: Platform) -> PlatformProof:
        key = target.key
        if self.progress is not None:
            await self.progress(
                {"stage": "proving", "platform": key, "message": f"checking the {key} build"}
            )
        prepared = await self.prepare(recipe, release, target)
        if prepared.failure is not None:
            f = prepared.failure
            if f.status == "skipped":
                return PlatformProof(platform=key, status="unsupported", message=f.message)
            return PlatformProof(
                platform=key,
                status="failed",
                message=f"{f.stage}: {f.message}",
                category=f.category,
                assets=f.assets,
            )
        assets = prepared.assets
        problem = await prepared.binary_problem()
        if problem is not None:
            return PlatformProof(
                platform=key, status="failed", message=problem, category=EXEC_FORMAT, assets=assets
            )
        foreign = target.arch != self.platform.arch
        if (target.os != "linux" or foreign) and await prepared.scripts_only():
            # A script runs under the container's own interpreter whatever the platform:
            # saying it ran under emulation, or that its headers were checked, would
            # claim a proof that was never made.
            return PlatformProof(
                platform=key,
                status="passed",
                how="script",
                message="its programs are scripts (#!), the same on every platform: "
                "nothing platform-specific to run or check",
                assets=assets,
            )
        if target.os != "linux":
            return PlatformProof(
                platform=key,
                status="passed",
                how="inspected",
                message=f"{target.os} builds cannot run here: their binaries' headers "
                f"were checked ({target.os}, {target.arch}, executable)",
                assets=assets,
            )
        if foreign and not self.validator.emulates(target.arch):
            return PlatformProof(
                platform=key,
                status="unproven",
                message=f"no qemu-user binfmt handler for {target.arch} is registered on this "
                "machine (apt-get install qemu-user-static binfmt-support); its binaries' "
                "headers were checked",
                assets=assets,
            )
        got = await prepared.verify(recipe.verify)
        if got.passed:
            how = "emulated" if foreign else "run"
            return PlatformProof(platform=key, status="passed", how=how, assets=assets)
        if got.status == "skipped":
            return PlatformProof(
                platform=key, status="unproven", message=got.message, assets=assets
            )
        if foreign and _foreign_loader_missing(got.output):
            return PlatformProof(
                platform=key,
                status="unproven",
                message=f"the {target.arch} build is dynamically linked and the validation "
                f"image has no {target.arch} userland to load it; its headers were checked",
                assets=assets,
            )
        return PlatformProof(
            platform=key,
            status="failed",
            message=f"`{got.command}` under emulation: {got.message}" if foreign else got.message,
            category=got.category,
            assets=assets,
        )

    async def _extract(self, archive: Path, dest: Path, step: RenderedStep) -> None:
        fmt = step.archive_format
        name = step.download_name if fmt is ArchiveFormat.RAW else None
        await trio.to_thread.run_sync(
            lambda: extract(archive, dest, fmt, strip_dirs=step.strip_dirs, name=name)
        )


# qemu-user's names for Go's architectures.
_QEMU_ARCH = {"amd64": "x86_64", "arm64": "aarch64", "386": "i386", "arm": "arm"}
BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")


def binfmt_handler_registered(arch: str, directory: Path = BINFMT_DIR) -> bool:
    """Whether the kernel runs ``arch`` ELF files through a qemu-user handler that also
    works inside containers (enabled, ``F`` flag: the emulator is opened at
    registration, so a container's rootfs need not contain it)."""
    name = _QEMU_ARCH.get(arch, arch)
    try:
        text = (directory / f"qemu-{name}").read_text()
    except OSError:
        return False
    lines = text.splitlines()
    flags = next((x.split(":", 1)[1] for x in lines if x.startswith("flags:")), "")
    return bool(lines) and lines[0].strip() == "enabled" and "F" in flags


def _foreign_loader_missing(output: str) -> bool:
    """qemu-user could not find a dynamic binary's loader (``/lib/ld-linux-*``)."""
    return "Could not open '/lib" in output or "ld-linux-" in output


def skipped(platform: str, message: str, *, hint: str | None = None) -> Verdict:
    """A validation that did not happen (``--skip-validation``)."""
    return Verdict(status="skipped", stage="skipped", platform=platform, message=message, hint=hint)
