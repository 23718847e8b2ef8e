"""Validating an ecosystem recipe on the host, inside a throw-away prefix.

The container sandbox cannot run these: its minbase image has no npm or Python venv,
and it has no network, while the package manager must reach the registry. So the recipe
is proven the way it will be installed: the same runner (``install/ecosystem``)
installs the drafted version into a scratch directory under ``$TSUKU_HOME/validate``
with the clean environment and the configured registry as its only source, the named
executables must exist, and the verify command must pass; then the directory is
deleted. What runs is the package's own code (npm install scripts, and the tool's
``--version``), as the user's own install would run it, without the daemon's
secrets; a recipe whose step is a registry package, not a URL or a shell command,
needs nothing more.
"""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from tsukud.create.pipeline import ValidationSummary
from tsukud.install.checks import run_checks
from tsukud.install.ecosystem.actions import action_for
from tsukud.install.ecosystem.prefix import EcosystemInstallFailed, Prefix, RunContext
from tsukud.install.ecosystem.toolchain import find
from tsukud.recipe import Recipe, VerifyFailed, host_platform, render_verify
from tsukud.recipe.model import EcosystemStep

IMAGE = "host prefix"


async def validate_on_host(
    recipe: Recipe,
    step: EcosystemStep,
    *,
    version: str,
    tag: str,
    workdir: Path,
    registry_url: str,
    index_url: str = "",
    env: Mapping[str, str],
    proxies: Mapping[str, str] | None = None,
) -> tuple[ValidationSummary, int]:
    """Install ``recipe`` at ``tag`` into a throw-away prefix and run its verify
    command; the summary (passed or failed, never raised) and the time it took (ms).
    A missing toolchain raises :class:`ToolchainMissing`: nothing could be tried."""
    platform = str(host_platform().key)
    action = action_for(step)
    assert action.runner is not None
    program = find(action.toolchain, env)
    started = time.monotonic()
    scratch = workdir / f"eco-{recipe.metadata.name}-{secrets.token_hex(4)}"
    root = scratch / f"{recipe.metadata.name}-{version}"
    prefix = Prefix(recipe.metadata.name, root, scratch / "scratch")
    try:
        prefix.prepare()
        ctx = RunContext(
            step,
            tag,
            prefix,
            program,
            registry_url,
            env,
            index_url=index_url,
            proxies=proxies or {},
        )
        binaries = await action.runner(ctx)
        rendered = render_verify(recipe.verify, version, str(root))
        output = ""
        if rendered is not None:
            output = await run_checks(
                [rendered.check, *rendered.additional], root, binaries, dict(env)
            )
        summary = ValidationSummary(
            status="passed",
            platform=platform,
            stage="verify",
            image=IMAGE,
            version=version,
            command=rendered.check.command if rendered else None,
            output=output[-500:] or None,
            assets=tuple(
                {"name": name, "sha256": info["sha256"]} for name, info in binaries.items()
            ),
            attempts=1,
        )
    except (EcosystemInstallFailed, VerifyFailed) as exc:
        stage = "install" if isinstance(exc, EcosystemInstallFailed) else "verify"
        summary = ValidationSummary(
            status="failed",
            platform=platform,
            stage=stage,
            image=IMAGE,
            version=version,
            message=exc.message[-1500:],
            hint=exc.hint,
            attempts=1,
        )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return summary, round((time.monotonic() - started) * 1000)
