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

from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run

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
