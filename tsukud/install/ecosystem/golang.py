"""``go_install``: ``GOBIN=<tool dir>/bin go install <package>@<exact version>``.

The build happens outside any main module (``go install pkg@version`` ignores a
go.mod in the working directory), with GOPATH, the module cache and the build cache
in the scratch directory (``-modcacherw`` so it can be deleted), no user ``go env``
file (``GOENV=off``) and no toolchain download (``GOTOOLCHAIN=local``): the ``go`` on
PATH builds it. Modules come from the configured proxy only (``GOPROXY``, no
``direct`` fallback). With Go's own proxy the checksum database stays on; another
proxy (a mirror, a test's fake) cannot serve sum.golang.org's answers for modules
it alone has, so checking is off for it (``GOSUMDB=off``): that proxy is then the
one trusted, as the configured registry is for every other ecosystem.
"""

from __future__ import annotations

from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run

BIN_SUBDIR = "bin"
GO_PROXY = "https://proxy.golang.org"


def go_env(ctx: RunContext) -> dict[str, str]:
    scratch = ctx.prefix.scratch
    proxy = ctx.registry_url.rstrip("/") or GO_PROXY
    settings = {
        "GOBIN": str(ctx.prefix.root / BIN_SUBDIR),
        "GOPATH": str(scratch / "gopath"),
        "GOMODCACHE": str(scratch / "gopath" / "pkg" / "mod"),
        "GOCACHE": str(scratch / "cache" / "go-build"),
        "GOENV": "off",
        "GOFLAGS": "-modcacherw -mod=mod",
        "GOTOOLCHAIN": "local",
        "GO111MODULE": "on",
        "GOPROXY": proxy,
        "GONOPROXY": "",
        "GOPRIVATE": "",
    }
    if proxy != GO_PROXY:
        settings["GOSUMDB"] = "off"
    return clean_env(ctx.prefix, ctx.program, ctx.env, settings, ctx.proxies)


def argv(ctx: RunContext) -> list[str]:
    version = ctx.version if ctx.version.startswith("v") else f"v{ctx.version}"
    return [str(ctx.program), "install", f"{ctx.step.package_name}@{version}"]


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    await run(argv(ctx), prefix=ctx.prefix, env=go_env(ctx), what="go install")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)
