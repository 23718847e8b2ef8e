"""Recipe + version + platform → an installation plan, in tsuku's shape, without
installing anything.

The plan lists primitive steps the way tsuku decomposes composite actions
(``github_archive`` and ``download_archive`` → ``download_file`` + ``extract`` +
``chmod`` + ``install_binaries``; ``github_file`` → ``download_file`` + ``chmod`` +
``install_binaries``), each with its parameters resolved for the platform (URLs,
file names, binaries' destinations) and, for downloads, the URL and the checksum we
already know (the recipe's own, or GitHub's asset digest). Nothing is downloaded to
compute one: a plan is a preview, and the install checks every file anyway.

An action we cannot run (or a step we cannot resolve) is not an error here: it is
listed in ``unsupported`` with the platform, so ``tsukuctl plan`` over a whole registry
says honestly what is missing. Pure: the caller resolves the version and passes the
release's asset names and digests when it has them.

One entry per action in :data:`PLANNERS`; an action added later (an ecosystem's
``npm_install``, ``homebrew``) is one function and one row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.model import (
    RUNNABLE_ECOSYSTEM_ACTIONS,
    ChmodStep,
    DownloadArchiveStep,
    DownloadStep,
    EcosystemStep,
    ExtractStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    InstallBinariesStep,
    Recipe,
    RecipeError,
    RunCommandStep,
    Step,
    UnsupportedPlatform,
    check_platform,
    matching_steps,
)
from tsukud.recipe.platform import Platform
from tsukud.recipe.render import (
    DEFAULT_GITHUB_URL,
    InstallBinary,
    RenderedStep,
    expand,
    expand_url,
    install_binaries_for,
    mapped,
    render_command,
    render_step,
    render_verify,
    url_file_name,
    url_format,
)
from tsukud.recipe.version import ResolvedVersion

# tsuku's installation-plan format version this shape follows.
PLAN_FORMAT_VERSION = 3


class PlanStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One primitive step: ``params`` as tsuku's plan has them; ``url`` and ``checksum``
    (``sha256:<hex>``) only for downloads, and only when known."""

    action: str
    params: dict[str, Any]
    url: str | None = None
    checksum: str | None = None


class PlanVerify(msgspec.Struct, frozen=True, kw_only=True):
    command: str
    patterns: tuple[str, ...] = ()
    exit_code: int = 0


class PlanPlatform(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    os: str
    arch: str
    libc: str | None = None


class UnsupportedStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A step (``index`` None: the whole recipe) that cannot be planned for ``platform``."""

    action: str
    platform: str
    reason: str
    index: int | None = None


class Plan(msgspec.Struct, frozen=True, kw_only=True):
    format_version: int
    tool: str
    version: str
    platform: PlanPlatform
    steps: tuple[PlanStep, ...]
    verify: PlanVerify | None = None
    # What tsuku cannot run (or resolve) for this platform; empty for a full plan.
    unsupported: tuple[UnsupportedStep, ...] = ()


class PlanContext(msgspec.Struct, frozen=True, kw_only=True):
    """What every step planner needs: the version, the platform, the release."""

    recipe_name: str
    resolved: ResolvedVersion
    target: Platform
    assets: tuple[str, ...] | None = None
    digests: Mapping[str, str] = msgspec.field(default_factory=dict)
    github_url: str = DEFAULT_GITHUB_URL
    install_dir: str = "{install_dir}"
    # The bottle of each homebrew step (by index) the caller looked up, or why not.
    bottles: Mapping[int, BottleRef] = msgspec.field(default_factory=dict)
    bottle_problem: str | None = None
    runtime_dependencies: tuple[str, ...] = ()

    def where(self, index: int) -> str:
        return f"{self.recipe_name}: steps[{index}]"


StepPlanner = Callable[[Any, int, PlanContext], list[PlanStep]]


def _sha256(value: str | None) -> str | None:
    if not value:
        return None
    return "sha256:" + value.strip().lower().removeprefix("sha256:")


def _binaries_param(binaries: Sequence[InstallBinary]) -> list[dict[str, str]]:
    return [{"src": b.src, "dest": b.dest} for b in binaries]


def _unpack_steps(
    name: str, rendered_format: str, strip_dirs: int, binaries: Sequence[InstallBinary], mode: str
) -> list[PlanStep]:
    """The ``extract`` + ``chmod`` + ``install_binaries`` a composite decomposes into."""
    return [
        PlanStep(
            action="extract",
            params={"archive": name, "format": rendered_format, "strip_dirs": strip_dirs},
        ),
        PlanStep(action="chmod", params={"files": [b.src for b in binaries]}),
        PlanStep(
            action="install_binaries",
            params={"binaries": _binaries_param(binaries), "install_mode": mode},
        ),
    ]


def _download_file(url: str, dest: str, checksum: str | None, **params: Any) -> PlanStep:
    body: dict[str, Any] = {"url": url, "dest": dest}
    if checksum:
        body.update(checksum=checksum.removeprefix("sha256:"), checksum_algo="sha256")
    body.update((k, v) for k, v in params.items() if v is not None)
    return PlanStep(action="download_file", params=body, url=url, checksum=checksum)


def _github(
    step: GitHubArchiveStep | GitHubFileStep, index: int, ctx: PlanContext
) -> list[PlanStep]:
    rendered: RenderedStep = render_step(
        step,
        ctx.resolved,
        ctx.target,
        assets=ctx.assets,
        github_url=ctx.github_url,
        index=index,
        recipe_name=ctx.recipe_name,
    )
    checksum = _sha256(ctx.digests.get(rendered.asset_name))
    fetch = _download_file(
        rendered.url,
        rendered.download_name,
        checksum,
        checksum_url=rendered.checksum_url,
    )
    if isinstance(step, GitHubFileStep):
        return [
            fetch,
            PlanStep(action="chmod", params={"files": [rendered.download_name]}),
            PlanStep(
                action="install_binaries",
                params={"binaries": _binaries_param(rendered.binaries), "install_mode": "binaries"},
            ),
        ]
    return [
        fetch,
        *_unpack_steps(
            rendered.asset_name,
            rendered.archive_format.value,
            rendered.strip_dirs,
            rendered.binaries,
            rendered.install_mode,
        ),
    ]


def _download(step: DownloadStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    os_name, arch = mapped(step, ctx.target)
    version = ctx.resolved.version

    def url_of(template: str | None) -> str | None:
        return expand_url(template, ctx.resolved, os_name, arch) if template else None

    url = expand_url(step.url, ctx.resolved, os_name, arch)
    if step.dest is not None:
        dest = expand(step.dest, version=version, os=os_name, arch=arch)
    else:
        dest = url_file_name(url, ctx.where(index))
    return [
        _download_file(
            url,
            dest,
            _sha256(step.checksum),
            checksum_url=url_of(step.checksum_url),
            signature_url=url_of(step.signature_url),
            signature_key_url=url_of(step.signature_key_url),
            signature_key_fingerprint=step.signature_key_fingerprint,
        )
    ]


def _download_archive(step: DownloadArchiveStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    os_name, arch = mapped(step, ctx.target)
    url = expand_url(step.url, ctx.resolved, os_name, arch)
    name = url_file_name(url, ctx.where(index))
    checksum_url = (
        expand_url(step.checksum_url, ctx.resolved, os_name, arch) if step.checksum_url else None
    )
    mode = (step.install_mode or "binaries").lower()
    binaries = install_binaries_for(step.binaries, mode, ctx.resolved.version, ctx.target)
    return [
        _download_file(url, name, None, checksum_url=checksum_url),
        *_unpack_steps(
            name,
            url_format(step.archive_format, name, ctx.where(index)).value,
            step.strip_dirs or 0,
            binaries,
            mode,
        ),
    ]


def _extract(step: ExtractStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    t = ctx.target
    name = expand(step.archive, version=ctx.resolved.version, os=t.os, arch=t.arch)
    fmt = url_format(step.format, name, ctx.where(index)).value
    return [
        PlanStep(
            action="extract",
            params={"archive": name, "format": fmt, "strip_dirs": step.strip_dirs or 0},
        )
    ]


def _chmod(step: ChmodStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    t, v = ctx.target, ctx.resolved.version
    files = [expand(f, version=v, os=t.os, arch=t.arch) for f in step.files]
    return [PlanStep(action="chmod", params={"files": files})]


def _install_binaries(step: InstallBinariesStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    mode = (step.install_mode or "binaries").lower()
    binaries = install_binaries_for(step.binaries, mode, ctx.resolved.version, ctx.target)
    return [
        PlanStep(
            action="install_binaries",
            params={"binaries": _binaries_param(binaries), "install_mode": mode},
        )
    ]


def _run_command(step: RunCommandStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """The command as it would run, but for ``{work_dir}`` (a staging directory made at
    install time)."""
    t = ctx.target
    command = expand(step.command, version=ctx.resolved.version, os=t.os, arch=t.arch)
    params = {
        "command": render_command(command, work_dir="{work_dir}", install_dir=ctx.install_dir)
    }
    if step.description:
        params["description"] = step.description
    return [PlanStep(action="run_command", params=params)]


def _ecosystem(step: EcosystemStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """One step: the package manager installs the pinned version (the registry's
    spelling) into the tool's directory; nothing is downloaded by URL."""
    if step.action not in RUNNABLE_ECOSYSTEM_ACTIONS:
        raise RecipeError(f"action {step.action} is not supported yet")
    if not step.executables:
        raise RecipeError(f"{ctx.where(index)}: {step.action} needs executables")
    params = {
        step.PACKAGE_KEY: step.package_name,
        "version": ctx.resolved.tag,
        "executables": list(step.executables),
    }
    return [PlanStep(action=step.action, params=params)]


def _homebrew(step: HomebrewStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A bottle: its blob (URL and the manifest's digest), unpacked without its
    ``<formula>/<version>/`` directories, then relocated (docs/install.md)."""
    bottle = ctx.bottles.get(index)
    if bottle is None:
        raise RecipeError(ctx.bottle_problem or f"the bottle of {step.formula} was not looked up")
    checksum = _sha256(bottle.sha256)
    return [
        _download_file(bottle.url, bottle.asset_name, checksum),
        PlanStep(
            action="extract",
            params={"archive": bottle.asset_name, "format": "tar.gz", "strip_dirs": 2},
        ),
        PlanStep(
            action="homebrew_relocate",
            params={
                "formula": bottle.formula,
                "pkg_version": bottle.pkg_version,
                "bottle_tag": bottle.platform_tag,
                "install_dir": ctx.install_dir,
                "runtime_dependencies": list(ctx.runtime_dependencies),
                "text": "@@HOMEBREW_*@@ placeholders → the tool's and dependencies' dirs",
                "elf": "placeholder RPATH → $ORIGIN-relative DT_RPATH; interpreter → system loader",
            },
        ),
    ]


#: action → its planner. Composite actions decompose into primitives here.
PLANNERS: dict[str, StepPlanner] = {
    "github_archive": _github,
    "github_file": _github,
    "download": _download,
    "download_file": _download,
    "download_archive": _download_archive,
    "extract": _extract,
    "chmod": _chmod,
    "install_binaries": _install_binaries,
    "run_command": _run_command,
    "npm_install": _ecosystem,
    "pipx_install": _ecosystem,
    "cargo_install": _ecosystem,
    "gem_install": _ecosystem,
    "go_install": _ecosystem,
    "homebrew": _homebrew,
}


def _plan_step(step: Step, index: int, ctx: PlanContext) -> list[PlanStep] | UnsupportedStep:
    where = str(ctx.target)
    planner = None if isinstance(step, GenericStep) else PLANNERS.get(step.action)
    if planner is None:
        return UnsupportedStep(
            index=index,
            action=step.action,
            platform=where,
            reason=f"action {step.action} is not supported yet",
        )
    if not isinstance(step, GenericStep) and step.extra:
        names = ", ".join(sorted(step.extra))
        return UnsupportedStep(
            index=index,
            action=step.action,
            platform=where,
            reason=f"parameter {names} is not supported yet",
        )
    try:
        return planner(step, index, ctx)
    except RecipeError as exc:
        return UnsupportedStep(index=index, action=step.action, platform=where, reason=exc.message)


def plan_recipe(
    recipe: Recipe,
    resolved: ResolvedVersion,
    target: Platform,
    *,
    install_dir: str,
    assets: Sequence[str] | None = None,
    digests: Mapping[str, str] | None = None,
    github_url: str = DEFAULT_GITHUB_URL,
    bottles: Mapping[int, BottleRef] | None = None,
    bottle_problem: str | None = None,
) -> Plan:
    """The plan for ``recipe`` at ``resolved`` on ``target``. ``install_dir`` fills
    ``{install_dir}`` in the verify command (where the tool would be installed)."""
    name = recipe.metadata.name
    ctx = PlanContext(
        recipe_name=name,
        resolved=resolved,
        target=target,
        assets=tuple(assets) if assets is not None else None,
        digests=dict(digests or {}),
        github_url=github_url,
        install_dir=install_dir,
        bottles=dict(bottles or {}),
        bottle_problem=bottle_problem,
        runtime_dependencies=tuple(recipe.metadata.runtime_dependencies or ()),
    )
    steps: list[PlanStep] = []
    unsupported: list[UnsupportedStep] = []
    try:
        check_platform(recipe, target)
    except UnsupportedPlatform as exc:
        unsupported.append(UnsupportedStep(action="*", platform=str(target), reason=exc.message))
    else:
        selected = matching_steps(recipe, target, resolved.version)
        for index, step in selected:
            planned = _plan_step(step, index, ctx)
            if isinstance(planned, UnsupportedStep):
                unsupported.append(planned)
            else:
                steps.extend(planned)
        if not selected:
            unsupported.append(
                UnsupportedStep(
                    action="*", platform=str(target), reason=f"no step of {name} installs here"
                )
            )
    rendered = render_verify(recipe.verify, resolved.version, install_dir)
    verify = (
        PlanVerify(
            command=rendered.check.command,
            patterns=rendered.check.patterns,
            exit_code=rendered.check.exit_code,
        )
        if rendered is not None
        else None
    )
    return Plan(
        format_version=PLAN_FORMAT_VERSION,
        tool=name,
        version=resolved.version,
        platform=PlanPlatform(os=target.os, arch=target.arch, libc=target.libc),
        steps=tuple(steps),
        verify=verify,
        unsupported=tuple(unsupported),
    )
