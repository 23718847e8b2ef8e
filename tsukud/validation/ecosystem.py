"""Validating an ecosystem recipe: fetched on the host with scripts off, built and
verified in the validation container.

A package's own code (install scripts, build scripts, native extensions, a build
backend, the tool's ``--version``) is untrusted until a person said yes to the recipe,
so none of it runs on the host here:

* **host, scripts off**: the package and its dependencies are only fetched, into a
  throw-away directory in the system's temporary directory (never under
  ``$TSUKU_HOME``, where the keys and the ledger are). How is each package manager's
  own: its runner module's ``fetch`` (``install/ecosystem/<tool>.py``, reached through
  the record's entry in ``install/ecosystem/actions.py``) fetches without running
  anything of the package, and answers the :class:`Build` left for the container
  (a toolchain that compiles without running the package's code may build here).
* **container, offline**: the validation image with the host's ``/usr`` (Debian's
  toolchains: system programs, no user data) and ``/etc/alternatives`` mounted
  read-only, the staged tree writable at ``/tsuku/tool``, no network, uid 65534,
  read-only root: the :class:`Build`'s script (the install scripts, the build). Then
  the verify command runs in a second container with the tree read-only, as for any
  recipe (``validate.Prepared``).

What cannot be proven this way (no container runtime, no image, a toolchain that is
not Debian's under ``/usr``) is refused as not validated
(:class:`ValidationUnavailable`), never passed on the host.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud.errors import SandboxError
from tsukud.install.ecosystem import toolchain
from tsukud.install.ecosystem.actions import action_for
from tsukud.install.ecosystem.prefix import (
    EcosystemInstallFailed,
    Prefix,
    RunContext,
    record_executables,
)
from tsukud.install.ecosystem.staging import SYSTEM_BIN, Build, Stage, ToolchainUnavailable
from tsukud.recipe import Recipe
from tsukud.recipe.model import EcosystemStep
from tsukud.sandbox.runtime import ImageMissing, RunSpec, RuntimeUnavailable
from tsukud.secrets import redact
from tsukud.validation.errors import ValidationUnavailable
from tsukud.validation.summary import ValidationSummary
from tsukud.validation.validator import (
    CONTAINER_DIR,
    CONTAINER_PATH,
    CONTAINER_WORK_DIR,
    OUTPUT_CAP,
    Prepared,
    ValidationRun,
    container_output,
)

if TYPE_CHECKING:
    from tsukud.net.http import Http
    from tsukud.validation.validator import Validator

#: The host's system directories the container reads its toolchain from (read-only).
TOOLCHAIN_MOUNTS: tuple[tuple[str, str], ...] = (
    ("/usr", "/usr"),
    ("/etc/alternatives", "/etc/alternatives"),
)
TOOL = CONTAINER_DIR
WORK = CONTAINER_WORK_DIR


def new_stage() -> Stage:
    """A private directory in the system's temporary directory (0700)."""
    return Stage(Path(tempfile.mkdtemp(prefix="tsuku-validate-")), TOOL, WORK)


def share(root: Path) -> None:
    """Let the container's uid 65534 read and write the staged tree (its parent stays
    0700, so no other local user reaches it)."""
    for dirpath, dirs, names in os.walk(root):
        os.chmod(dirpath, 0o777)  # noqa: S103 - inside a 0700 parent, for uid 65534
        for name in [*dirs, *names]:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if stat.S_ISREG(st.st_mode):
                executable = 0o111 if st.st_mode & stat.S_IXUSR else 0
                os.chmod(p, st.st_mode | 0o666 | executable)  # noqa: S103 - see above
            elif stat.S_ISDIR(st.st_mode):
                os.chmod(p, 0o777)  # noqa: S103


# ---- the container side --------------------------------------------------------------


def unavailable(reason: str) -> ValidationUnavailable:
    return ValidationUnavailable(
        f"the recipe cannot be validated in the container, so it was not accepted: {reason}",
        hint="Nothing of the package ran. Install Debian's toolchain package (the "
        "container uses the host's /usr), start Docker, or build the image with "
        "`tsukuctl sandbox prepare`; or pass --skip-validation to accept the recipe "
        "without proof.",
        reason="no_toolchain",
    )


async def _build_in_container(
    vrun: ValidationRun, stage: Stage, build: Build, session: str | None
) -> tuple[int, str, bool]:
    assert build.script is not None
    v = vrun.validator
    rt = await v.runtime()
    path = ":".join([f"{TOOL}/{build.bin_subdir}", CONTAINER_PATH])
    spec = RunSpec(
        image=v.image,
        command=["/bin/sh", "-c", f"umask 0 && {build.script}"],
        mounts=[
            (stage.tool, TOOL, False),
            (stage.work, WORK, False),
            *((host, target, True) for host, target in TOOLCHAIN_MOUNTS),
        ],
        env={
            "PATH": path,
            "HOME": f"{WORK}/home",
            "TMPDIR": f"{WORK}/tmp",  # noqa: S108 - the container's, in the staged tree
            "LANG": "C.UTF-8",
            "TSUKU_VALIDATION": "1",
            **build.env,
        },
        workdir=WORK,
        timeout_s=v.timeout_s,
        labels={"dev.tsuku.session": session or ""},
        output_cap=OUTPUT_CAP,
        pids_limit=1024,
    )
    async with v.lock(session):
        res = await rt.run(spec)
    return res.exit_code, container_output(res.text, spec.env), res.timed_out


async def validate_in_container(
    recipe: Recipe,
    step: EcosystemStep,
    *,
    version: str,
    tag: str,
    validator: Validator,
    http: Http,
    session: str | None,
    registry_url: str,
    index_url: str = "",
    env: Mapping[str, str],
    proxies: Mapping[str, str] | None = None,
) -> ValidationSummary:
    """Fetch ``recipe``'s package at ``tag`` on the host (scripts off), finish its
    install and run its verify command in the container; the summary (passed or
    failed). :class:`ValidationUnavailable` when no container can prove it."""
    action = action_for(step)
    program = toolchain.find(action.toolchain, env)
    try:
        await validator.check_ready()
    except SandboxError as exc:
        raise unavailable(redact(exc.message)) from None
    platform = validator.platform
    image = f"a container ({validator.image}, the host's /usr read-only)"
    stage = new_stage()
    tool = recipe.metadata.name

    def failed(
        stage_name: str, message: str, hint: str | None = None, **kw: Any
    ) -> ValidationSummary:
        return ValidationSummary(
            status="failed",
            platform=str(platform.key),
            stage=stage_name,
            image=image,
            version=version,
            message=message[-1500:],
            hint=hint,
            attempts=1,
            **kw,
        )

    try:
        await trio.to_thread.run_sync(stage.make)
        ctx = RunContext(
            step,
            tag,
            Prefix(tool, stage.tool, stage.scratch),
            program,
            registry_url,
            env,
            index_url=index_url,
            proxies=proxies or {},
        )
        ctx.prefix.prepare()
        assert action.fetch is not None  # every runner module fetches (action_for: a runner)
        try:
            build = await action.fetch(ctx, stage, http)
        except EcosystemInstallFailed as exc:
            return failed("fetch", exc.message, exc.hint)
        except ToolchainUnavailable as exc:
            raise unavailable(exc.reason) from None
        if build.needs is not None and not (SYSTEM_BIN / build.needs).is_file():
            raise unavailable(
                f"{build.needs} is not in /usr/bin (the container runs the host's "
                f"Debian toolchain; {program} is not one)"
            )
        await trio.to_thread.run_sync(share, stage.root)
        async with validator.session(session) as vrun:
            if build.script is not None:
                try:
                    code, output, timed_out = await _build_in_container(vrun, stage, build, session)
                except (RuntimeUnavailable, ImageMissing) as exc:
                    raise unavailable(redact(exc.message)) from None
                if code != 0 or timed_out:
                    what = "did not finish" if timed_out else f"failed (exit {code})"
                    return failed(
                        "install",
                        f"{tool}: the install in the container {what}:\n{output[-1500:]}",
                        "Nothing was written. The package's install scripts or build "
                        "failed without network, as uid 65534.",
                        exit_code=code,
                    )
            if build.finish is not None:
                build.finish()
            try:
                recorded = record_executables(
                    Prefix(tool, stage.tool, stage.scratch), step.executables, build.bin_subdir
                )
            except EcosystemInstallFailed as exc:
                return failed("install", exc.message, exc.hint)
            prepared = Prepared(
                run=vrun,
                root=stage.tool,
                version=version,
                tag=tag,
                platform=platform,
                binaries={name: info["path"] for name, info in recorded.items()},
                mounts=tuple((Path(host), target) for host, target in TOOLCHAIN_MOUNTS),
            )
            verdict = await prepared.verify(recipe.verify)
        if verdict.status == "skipped":
            raise unavailable(redact(verdict.message or "no container runtime"))
        if verdict.failed:
            return failed(
                verdict.stage,
                redact(verdict.message or "verify failed"),
                verdict.hint,
                command=verdict.command,
                exit_code=verdict.exit_code,
                output=redact(verdict.output[-500:]) or None,
            )
        return ValidationSummary(
            status="passed",
            platform=str(platform.key),
            stage="verify",
            image=image,
            version=version,
            command=verdict.command,
            output=redact(verdict.output[-500:]) or None,
            assets=tuple(
                {"name": name, "sha256": info["sha256"]} for name, info in recorded.items()
            ),
            attempts=1,
        )
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(lambda: shutil.rmtree(stage.root, ignore_errors=True))
