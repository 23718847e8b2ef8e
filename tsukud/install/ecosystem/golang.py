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

from typing import TYPE_CHECKING

from tsukud.errors import TsukuError
from tsukud.install.ecosystem.drafting import Drafted, NotDrafted, package_bytes
from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run
from tsukud.install.ecosystem.staging import Build, Stage
from tsukud.install.ecosystem.versions import FETCHERS, choose
from tsukud.recipe.model import EcosystemStep, VersionSection
from tsukud.recipe.version import check_version
from tsukud.registries import goproxy

if TYPE_CHECKING:
    from tsukud.net.http import Http

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


# ---- drafting a recipe: the module's root must be a main package (its binary is the
# path's last element, a ``/vN`` suffix skipped, as ``go install`` names it)


async def draft(http: Http, base: str, package: str, requested: str | None) -> Drafted:
    """A module whose root is its command, a package path inside a module (its
    versions are the module's: ``goproxy.version_module``), or a module with exactly
    one command in a sub-directory, which is then the package installed."""
    module = goproxy.version_module(package)
    label = f"goproxy package {module}"
    try:
        listing = await FETCHERS["goproxy"](http, base, module)
    except TsukuError as exc:
        if getattr(exc, "status", None) not in (404, 410):
            raise
        raise NotDrafted(
            f"{label} does not exist at {base}",
            hint="Name the module path (its go.mod's module line), or a command's package "
            "path inside it; nothing was written.",
        ) from None
    resolved = check_version(choose(listing, requested, label))
    data = await package_bytes(http, goproxy.zip_url(base, module, resolved.tag))
    mains = goproxy.main_packages(data, module, resolved.tag)
    inside = package.removeprefix(module).strip("/")
    if package == module and "" not in mains and len(mains) == 1:
        inside = mains[0]
        package = f"{module}/{inside}"
    if inside not in mains:
        commands = ", ".join(f"go:{module}/{m}".rstrip("/") for m in mains) or "none"
        raise NotDrafted(
            f"{label} {resolved.tag}: {package} is not a main package (commands: {commands})",
            hint="Name one command's package path with --from go:<path>; nothing was written.",
        )
    step = EcosystemStep(
        action="go_install", package_name=package, executables=(goproxy.binary_name(package),)
    )
    version = None
    if goproxy.version_module(package) != module:  # the installer could not infer it
        version = VersionSection(source="goproxy", extra={"module": module})
    return Drafted(step, resolved, None, f"https://pkg.go.dev/{package}", version)


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    """For validation: go compiles without running the module's code (no build
    scripts), so it builds here; only the verify command runs the result, in the
    container."""
    await install(ctx)
    return Build(None, BIN_SUBDIR)
