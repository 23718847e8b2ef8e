"""``npm_install``: ``npm install --prefix <tool dir> <package>@<exact version>``.

Local mode: the package lands in ``node_modules/<package>`` and its commands in
``node_modules/.bin`` (relative links), with the tool's own ``package.json`` beside
them. The registry is the configured one (``--registry``); the user's and the system's
npmrc are replaced by an empty file, the cache lives in the scratch directory, and
audit, fund and the update notifier are off, so npm talks to that registry only.

Install scripts run (npm's default): packages such as esbuild fetch their binary in
``postinstall`` and would install broken without it. By then a person approved the
recipe, which was validated with its scripts run in the container only
(``validation/ecosystem.py``, which reuses :func:`argv` with
``--ignore-scripts`` to fetch); here they run with the clean environment of
``prefix.clean_env`` (no secrets of the daemon's), confined to the tool's directory
(``confine.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tsukud.install.ecosystem.drafting import Drafted, NotDrafted, json_document
from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run
from tsukud.install.ecosystem.staging import Build, Stage
from tsukud.install.ecosystem.versions import choose
from tsukud.recipe.model import EcosystemStep
from tsukud.recipe.version import check_version
from tsukud.registries import npm

if TYPE_CHECKING:
    from tsukud.net.http import Http

BIN_SUBDIR = "node_modules/.bin"


def argv(ctx: RunContext) -> list[str]:
    return [
        str(ctx.program),
        "install",
        "--prefix",
        str(ctx.prefix.root),
        f"{ctx.step.package_name}@{ctx.version}",
        "--registry",
        ctx.registry_url.rstrip("/") + "/",
        "--userconfig",
        str(ctx.prefix.scratch / "npmrc"),
        "--globalconfig",
        str(ctx.prefix.scratch / "npmrc-global"),
        "--cache",
        str(ctx.prefix.scratch / "cache" / "npm"),
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        # A failed fetch (or bytes that fail the integrity check) is retried twice
        # within seconds, not npm's default minute of back-off.
        "--fetch-retries",
        "2",
        "--fetch-retry-mintimeout",
        "1000",
        "--fetch-retry-maxtimeout",
        "5000",
        "--loglevel",
        "warn",
    ]


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    for name in ("npmrc", "npmrc-global"):  # empty: no user or system settings
        (ctx.prefix.scratch / name).write_text("")
    env = clean_env(ctx.prefix, ctx.program, ctx.env, proxies=ctx.proxies)
    await run(argv(ctx), prefix=ctx.prefix, env=env, what="npm install")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)


async def draft(http: Http, base: str, package: str, requested: str | None) -> Drafted:
    """The commands are the ``bin`` of the version's manifest in the packument."""
    doc = await json_document(http, npm.packument_url(base, package))
    label = f"npm package {package}"
    resolved = check_version(choose((npm.versions(doc), npm.latest(doc)), requested, label))
    manifest = npm.manifest(doc, resolved.tag)
    executables = npm.executables(manifest, package)
    if not executables:
        raise NotDrafted(
            f"{label} {resolved.tag} declares no command (no bin in its package.json)",
            hint="It is a library, not a tool; nothing was written.",
        )
    return Drafted(
        EcosystemStep(action="npm_install", package_name=package, executables=tuple(executables)),
        resolved,
        manifest.get("description") or doc.get("description"),
        manifest.get("homepage") or doc.get("homepage"),
    )


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    """For validation: ``npm install --ignore-scripts`` here, ``npm rebuild`` (the
    install scripts) in the container."""
    for name in ("npmrc", "npmrc-global"):
        (stage.scratch / name).write_text("")
    env = clean_env(ctx.prefix, ctx.program, ctx.env, proxies=ctx.proxies)
    await run(
        [*argv(ctx), "--ignore-scripts"],
        prefix=ctx.prefix,
        env=env,
        what="npm install --ignore-scripts",
    )
    for name in ("npmrc", "npmrc-global"):
        (stage.work / name).write_text("")
    tool, work = stage.seen_tool, stage.seen_work
    script = (
        f"cd {tool} && npm rebuild --foreground-scripts --offline --userconfig "
        f"{work}/npmrc --globalconfig {work}/npmrc-global --cache {work}/cache/npm "
        "--no-audit --no-fund --no-update-notifier --loglevel warn"
    )
    return Build(script, BIN_SUBDIR, needs="npm")
