"""The made-up Quokka ecosystem's runner: ``install`` (``quokka add`` into the tool's
directory), create's ``draft`` and validation's ``fetch``, what a real
``tsukud/install/ecosystem/<tool>.py`` holds. The record names this module; the
installer imports it by that name."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tsukud.install.ecosystem.drafting import Drafted, listed, no_executables
from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run
from tsukud.install.ecosystem.staging import Build, Stage
from tsukud.recipe.model import EcosystemStep
from tsukud.registries._common import as_dict
from tsukud.registries.ecosystems import BY_ACTION

if TYPE_CHECKING:
    from tsukud.net.http import Http

RECORD = BY_ACTION["quokka_install"]
BIN_SUBDIR = "bin"


def argv(ctx: RunContext, *more: str) -> list[str]:
    return [
        str(ctx.program),
        "add",
        "--into",
        str(ctx.prefix.root),
        "--index",
        ctx.registry_url,
        *more,
        f"{ctx.step.package_name}@{ctx.version}",
    ]


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    env = clean_env(ctx.prefix, ctx.program, ctx.env, proxies=ctx.proxies)
    await run(argv(ctx), prefix=ctx.prefix, env=env, what="quokka add")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)


async def draft(http: Http, base: str, pouch: str, requested: str | None) -> Drafted:
    label = f"quokka pouch {pouch}"
    doc, resolved = await listed(http, base, label, RECORD, pouch, requested)
    commands = as_dict(doc).get("commands")
    if not isinstance(commands, list) or not commands:
        raise no_executables(f"{label} {resolved.tag}", "command")
    step = EcosystemStep(
        action=RECORD.action, package_name=pouch, executables=tuple(map(str, commands))
    )
    return Drafted(step, resolved, as_dict(doc).get("description"))


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    """For validation: fetched with its hooks off here, the hooks run in the container."""
    env = clean_env(ctx.prefix, ctx.program, ctx.env, proxies=ctx.proxies)
    await run(argv(ctx, "--no-hooks"), prefix=ctx.prefix, env=env, what="quokka add")
    return Build(f"cd {stage.seen_tool} && quokka hooks --offline", BIN_SUBDIR, needs="quokka")
