"""Recipe + version + platform → an installation plan, in tsuku's shape, without
installing anything.

The plan lists primitive steps the way tsuku decomposes composite actions
(``github_archive`` and ``download_archive`` → ``download_file`` + ``extract`` +
``chmod`` + ``install_binaries``; ``github_file`` → ``download_file`` + ``chmod`` +
``install_binaries``), each with its parameters resolved for the platform (URLs,
file names) and the recipe's own spelling of what it installs, in tsuku's current plan
format (``format_version`` 5: field names, order and nesting as in tsuku's golden
plans, docs/install.md "Plans"). For downloads it carries the URL, the checksum and the size we
already know (the recipe's own checksum, GitHub's asset digest and size, a bottle's
manifest digest). Nothing is downloaded to compute one: a plan is a preview, and the
install checks every file anyway; where tsuku's plan holds a value only its download
gives, the step names that field in ``computed_at_download``.

An action we cannot run (or a step we cannot resolve) is not an error here: it is
listed in ``unsupported`` with the platform, so ``tsukuctl plan`` over a whole registry
says honestly what is missing. Pure: the caller resolves the version and passes the
release's asset names and digests when it has them.

One entry per action in :data:`PLANNERS`; an action added later (``homebrew``, the
ecosystems' steps) is one function and one row.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import msgspec

from tsukud.recipe.homebrew import BottleRef
from tsukud.recipe.model import (
    RUNNABLE_ECOSYSTEM_ACTIONS,
    Binary,
    ChmodStep,
    CMakeBuildStep,
    ConfigureMakeStep,
    CpanInstallStep,
    DownloadArchiveStep,
    DownloadStep,
    EcosystemStep,
    ExtractStep,
    GenericStep,
    GitHubArchiveStep,
    GitHubFileStep,
    HomebrewStep,
    InstallBinariesStep,
    InstallLibrariesStep,
    InstallShellInitStep,
    LinkDependenciesStep,
    PipExecStep,
    Recipe,
    RecipeError,
    RequireCommandStep,
    RunCommandStep,
    SetEnvStep,
    SetRpathStep,
    SetupBuildEnvStep,
    Step,
    SystemPackagesStep,
    UnsupportedPlatform,
    Verify,
    check_platform,
    matching_steps,
    unmodelled_parameters,
)
from tsukud.recipe.platform import Platform
from tsukud.recipe.render import (
    DEFAULT_GITHUB_URL,
    RenderedStep,
    expand,
    expand_mirrors,
    expand_url,
    install_binaries_for,
    mapped,
    render_command,
    render_step,
    takes_first_match,
    url_file_name,
    url_format,
)
from tsukud.recipe.system import SYSTEM_PACKAGE_ACTIONS, install_argv, shell_words
from tsukud.recipe.toml_io import commands_of_outputs
from tsukud.recipe.toolchains import HostToolchain, toolchains
from tsukud.recipe.version import ResolvedVersion
from tsukud.registries.ecosystems import BY_ACTION, ECOSYSTEMS

# tsuku's installation-plan format (internal/executor: ``format_version`` 5 and the
# ``storage_version`` marker its golden plans carry).
PLAN_FORMAT_VERSION = 5
PLAN_STORAGE_VERSION = 1

# Actions whose outcome a plan cannot pin (tsuku's ``evaluable: false``) and those whose
# result varies with the toolchain (``deterministic: false``).
# The primitives tsuku decomposes an ecosystem step into (its ``Decompose``).
_ECOSYSTEM_PRIMITIVES = frozenset(
    {
        *(e.plan_action for e in ECOSYSTEMS),
        *(p for e in ECOSYSTEMS for p in e.plan_self_installed.values()),
    }
)
_NOT_EVALUABLE = frozenset(
    {
        "run_command",
        "homebrew_relocate",
        *RUNNABLE_ECOSYSTEM_ACTIONS,
        *(_ECOSYSTEM_PRIMITIVES - {e.plan_action for e in ECOSYSTEMS if e.plan_evaluable}),
        "cpan_install",
        *SYSTEM_PACKAGE_ACTIONS,
        "require_command",
        # Not in tsuku's ActionEvaluability table, which makes them not evaluable.
        "configure_make",
        "cmake_build",
        "setup_build_env",
    }
)
# configure_make's and cmake_build's IsDeterministic are false (the build depends on
# the compiler), and run_command's (a shell command: the goldens of rust, ruby,
# nodejs and gcc-libs); setup_build_env's is true.
_NOT_DETERMINISTIC = frozenset(
    {
        "run_command",
        *RUNNABLE_ECOSYSTEM_ACTIONS,
        *_ECOSYSTEM_PRIMITIVES,
        "cpan_install",
        *SYSTEM_PACKAGE_ACTIONS,
        "configure_make",
        "cmake_build",
    }
)

# A value tsuku's plan holds only because tsuku downloaded the file to plan it (the
# sha256 of a file no checksum names, a bottle's size): listed by field in a step's
# ``computed_at_download`` instead of being left out silently.
_CHECKSUM_FIELDS = ("checksum", "size", "params.checksum", "params.checksum_algo")


class PlanStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One primitive step in tsuku's shape: ``params`` (keys sorted, as Go writes a
    map), ``evaluable`` and ``deterministic``; ``url``, ``checksum`` (hex) and ``size``
    when tsuku's plan has them, i.e. for a file tsuku fetched while planning. A value
    only that fetch gives is named in ``computed_at_download``; ``command`` is the
    command a system package step runs on the host (as tsuku describes it), and
    ``skip_verification_reason`` why a download has no upstream checksum (this
    project's keys: tsuku's plan carries neither)."""

    action: str
    params: dict[str, Any]
    evaluable: bool
    deterministic: bool
    url: str | None = None
    checksum: str | None = None
    size: int | None = None
    computed_at_download: tuple[str, ...] = ()
    command: str | None = None
    skip_verification_reason: str | None = None


class PlanVerify(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The recipe's verify command and pattern as written (tsuku fills in
    ``{version}``/``{install_dir}`` when it runs them); ``patterns`` only for a recipe
    that lists several (this project's key)."""

    command: str
    pattern: str | None = None
    patterns: tuple[str, ...] | None = None


class PlanPlatform(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    os: str
    arch: str
    linux_family: str | None = None


class UnsupportedStep(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A step (``index`` None: the whole recipe) that cannot be planned for ``platform``."""

    action: str
    platform: str
    reason: str
    index: int | None = None


class DependencyPlan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A dependency's plan nested in its dependent's, as tsuku nests it: the tool, its
    version, its own dependencies, steps, verify and ``recipe_type`` (no format,
    platform or this project's keys: those are the outer plan's)."""

    tool: str
    version: str
    dependencies: tuple[DependencyPlan, ...] = ()
    steps: tuple[PlanStep, ...]
    verify: PlanVerify | None = None
    recipe_type: str | None = None


class Plan(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """tsuku's installation plan (format 5: fields, order and nesting as its golden
    plans have them), then this project's own keys: ``unsupported`` (what cannot be
    planned here), ``warnings`` (a wildcard that matched several assets) and
    ``host_toolchains`` (an ecosystem's program taken from the host's PATH, where the
    registry has no recipe for it to nest)."""

    format_version: int
    storage_version: int
    tool: str
    version: str
    platform: PlanPlatform
    deterministic: bool
    # What is installed first, each dependency's plan nested (depth first, a tool once).
    dependencies: tuple[DependencyPlan, ...] = ()
    steps: tuple[PlanStep, ...]
    verify: PlanVerify | None = None
    # The recipe's ``metadata.binaries`` (what it puts on PATH), as tsuku's format-5
    # plans carry them (bash's); where beside ``recipe_type`` is not shown by a golden.
    binaries: tuple[str, ...] | None = None
    recipe_type: str | None = None
    # What tsuku cannot run (or resolve) for this platform; empty for a full plan.
    unsupported: tuple[UnsupportedStep, ...]
    warnings: tuple[str, ...] = ()
    host_toolchains: tuple[HostToolchain, ...] = ()


class PlanContext(msgspec.Struct, frozen=True, kw_only=True):
    """What every step planner needs: the version, the platform, the release."""

    recipe_name: str
    resolved: ResolvedVersion
    target: Platform
    assets: tuple[str, ...] | None = None
    digests: Mapping[str, str] = msgspec.field(default_factory=dict)
    sizes: Mapping[str, int] = msgspec.field(default_factory=dict)
    github_url: str = DEFAULT_GITHUB_URL
    install_dir: str = "{install_dir}"
    # The bottle of each homebrew step (by index) the caller looked up, or why not.
    bottles: Mapping[int, BottleRef] = msgspec.field(default_factory=dict)
    bottle_problem: str | None = None
    runtime_dependencies: tuple[str, ...] = ()
    take_first: bool = False
    # Said while planning (a wildcard that took the first of several assets).
    warnings: list[str] = msgspec.field(default_factory=list)

    def where(self, index: int) -> str:
        return f"{self.recipe_name}: steps[{index}]"


StepPlanner = Callable[[Any, int, PlanContext], list[PlanStep]]


def _hex(value: str | None) -> str | None:
    if not value:
        return None
    return value.strip().lower().removeprefix("sha256:")


def _params(**values: Any) -> dict[str, Any]:
    """Params as tsuku's JSON has them: unset ones left out, keys in sorted order."""
    return {k: values[k] for k in sorted(values) if values[k] is not None}


def primitive(action: str, **params: Any) -> PlanStep:
    return PlanStep(
        action=action,
        params=_params(**params),
        evaluable=action not in _NOT_EVALUABLE,
        deterministic=action not in _NOT_DETERMINISTIC,
    )


def _entries(binaries: Sequence[Binary], version: str, target: Platform) -> list[Any]:
    """``binaries``/``outputs`` as the recipe wrote them (a path, or a ``{src, dest}``
    table), templates filled in: tsuku's plan keeps the recipe's spelling."""
    out: list[Any] = []
    for b in binaries:
        src = expand(b.src, version=version, os=target.os, arch=target.arch)
        if b.dest is None:
            out.append(src)
        else:
            dest = expand(b.dest, version=version, os=target.os, arch=target.arch)
            out.append({"dest": dest, "src": src})
    return out


def _fetched(
    url: str,
    dest: str,
    checksum: str | None,
    size: int | None,
    *,
    algo: bool = True,
    **params: Any,
) -> PlanStep:
    """A ``download_file`` tsuku made while planning (a composite's archive, a
    bottle): the top-level ``url``/``checksum``/``size`` of its plan, and the checksum
    in ``params`` too (with ``checksum_algo``, but for a bottle). What only that
    download would tell is marked, not left out."""
    missing: list[str] = []
    if checksum is None:
        missing += ["checksum", "params.checksum"] + (["params.checksum_algo"] if algo else [])
    if size is None:
        missing.append("size")
    body = _params(
        url=url,
        dest=dest,
        checksum=checksum,
        checksum_algo="sha256" if checksum and algo else None,
        **params,
    )
    return PlanStep(
        action="download_file",
        params=body,
        evaluable=True,
        deterministic=True,
        url=url,
        checksum=checksum,
        size=size,
        computed_at_download=tuple(sorted(missing, key=_CHECKSUM_FIELDS.index)),
    )


def _unpack_steps(
    name: str,
    rendered_format: str,
    strip_dirs: int,
    entries: list[Any],
    chmod: list[str],
    mode: str,
) -> list[PlanStep]:
    """The ``extract`` + ``chmod`` + ``install_binaries`` a composite decomposes into."""
    return [
        primitive("extract", archive=name, format=rendered_format, strip_dirs=strip_dirs),
        primitive("chmod", files=chmod),
        primitive("install_binaries", binaries=entries, install_mode=mode),
    ]


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
        take_first=ctx.take_first,
    )
    if rendered.warning:
        ctx.warnings.append(rendered.warning)
    fetch = _fetched(
        rendered.url,
        rendered.download_name,
        _hex(ctx.digests.get(rendered.asset_name)),
        ctx.sizes.get(rendered.asset_name),
        checksum_url=rendered.checksum_url,
    )
    version = ctx.resolved.version
    if isinstance(step, GitHubFileStep):
        written = (Binary(step.binary),) if step.binary is not None else step.binaries or ()
        return [
            fetch,
            primitive("chmod", files=[rendered.download_name]),
            primitive(
                "install_binaries",
                binaries=_entries(written, version, ctx.target),
                install_mode="binaries",
            ),
        ]
    return [
        fetch,
        *_unpack_steps(
            rendered.asset_name,
            rendered.archive_format.value,
            rendered.strip_dirs,
            _entries(step.binaries, version, ctx.target),
            [b.src for b in rendered.binaries],
            rendered.install_mode,
        ),
    ]


def _download(step: DownloadStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """``download_file`` with a pinned checksum is planned as written, as tsuku plans
    it; otherwise (``download``, or no checksum) tsuku fetched the file to plan it."""
    os_name, arch = mapped(step, ctx.target)
    version = ctx.resolved.version

    def url_of(template: str | None) -> str | None:
        return expand_url(template, ctx.resolved, os_name, arch) if template else None

    url = expand_url(step.url, ctx.resolved, os_name, arch)
    if step.dest is not None:
        dest = expand(step.dest, version=version, os=os_name, arch=arch)
    else:
        dest = url_file_name(url, ctx.where(index))
    extra: dict[str, Any] = {
        "checksum_url": url_of(step.checksum_url),
        "fallback_urls": _mirrors(step, ctx, os_name, arch),
        "signature_url": url_of(step.signature_url),
        "signature_key_url": url_of(step.signature_key_url),
        "signature_key_fingerprint": step.signature_key_fingerprint,
    }
    if step.action == "download_file" and step.checksum:
        planned = primitive(
            "download_file",
            url=url,
            dest=dest,
            checksum=_hex(step.checksum),
            checksum_algo=step.checksum_algo,
            **extra,
        )
    else:
        planned = _fetched(url, dest, _hex(step.checksum), None, **extra)
    reason = step.skip_verification_reason
    return [msgspec.structs.replace(planned, skip_verification_reason=reason)]


def _mirrors(
    step: DownloadStep | DownloadArchiveStep, ctx: PlanContext, os_name: str, arch: str
) -> list[str] | None:
    """The decomposed ``download_file``'s ``fallback_urls``: the recipe's mirrors filled
    in, or left out when it names none (as tsuku's params)."""
    return list(expand_mirrors(step, ctx.resolved, os_name, arch)) or None


def _download_archive(step: DownloadArchiveStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """tsuku's decomposition: ``download_file`` (with the mirrors) + ``extract`` (no
    mappings: they were spent on the URL) + ``chmod`` + ``install_binaries``."""
    os_name, arch = mapped(step, ctx.target)
    url = expand_url(step.url, ctx.resolved, os_name, arch)
    name = url_file_name(url, ctx.where(index))
    checksum_url = (
        expand_url(step.checksum_url, ctx.resolved, os_name, arch) if step.checksum_url else None
    )
    mode = (step.install_mode or "binaries").lower()
    fmt = url_format(step.archive_format, name, ctx.where(index)).value
    fetch = _fetched(
        url,
        name,
        None,
        None,
        checksum_url=checksum_url,
        fallback_urls=_mirrors(step, ctx, os_name, arch),
    )
    if not step.binaries and mode != "directory":  # download and unpack only
        return [
            fetch,
            primitive("extract", archive=name, format=fmt, strip_dirs=step.strip_dirs or 0),
        ]
    binaries = install_binaries_for(step.binaries, mode, ctx.resolved.version, ctx.target)
    return [
        fetch,
        *_unpack_steps(
            name,
            fmt,
            step.strip_dirs or 0,
            _entries(step.binaries, ctx.resolved.version, ctx.target),
            [b.src for b in binaries],
            mode,
        ),
    ]


def _extract(step: ExtractStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As written: ``strip_dirs`` only when the recipe names it (curl's golden), unlike
    the ``extract`` a composite decomposes into, which always carries it; the step's
    ``os_mapping``/``arch_mapping`` kept beside the archive name they expanded (a
    primitive's parameters are the recipe's: rust's and ruby's goldens)."""
    os_name, arch = mapped(step, ctx.target)
    name = expand(step.archive, version=ctx.resolved.version, os=os_name, arch=arch)
    fmt = url_format(step.format, name, ctx.where(index)).value
    return [
        primitive(
            "extract",
            archive=name,
            format=fmt,
            strip_dirs=step.strip_dirs,
            os_mapping=_sorted(step.os_mapping),
            arch_mapping=_sorted(step.arch_mapping),
        )
    ]


def _sorted(mapping: Mapping[str, str] | None) -> dict[str, str] | None:
    """A table as Go writes a map: keys in order."""
    return None if mapping is None else dict(sorted(mapping.items()))


def _chmod(step: ChmodStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    t, v = ctx.target, ctx.resolved.version
    files = [expand(f, version=v, os=t.os, arch=t.arch) for f in step.files]
    return [primitive("chmod", files=files)]


def _install_binaries(step: InstallBinariesStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As written: ``binaries`` or ``outputs`` (paths or tables), ``install_mode``
    only when the recipe names one."""
    t, v = ctx.target, ctx.resolved.version
    written = step.outputs is not None and step.binaries == commands_of_outputs(step.outputs)
    return [
        primitive(
            "install_binaries",
            outputs=_entries(step.outputs, v, t) if step.outputs is not None else None,
            binaries=None if written or not step.binaries else _entries(step.binaries, v, t),
            install_mode=step.install_mode,
        )
    ]


def _run_command(step: RunCommandStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """The command as it would run, but for ``{work_dir}`` (a staging directory made at
    install time)."""
    t = ctx.target
    command = expand(step.command, version=ctx.resolved.version, os=t.os, arch=t.arch)
    return [
        primitive(
            "run_command",
            command=render_command(command, work_dir="{work_dir}", install_dir=ctx.install_dir),
            description=step.description,
        )
    ]


def _ecosystem(step: EcosystemStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As tsuku decomposes it: the ecosystem's primitive (its record's ``plan_action``,
    or for a package that installs its own manager, ``plan_self_installed``) with
    the package, the pinned version (the registry's spelling) and the executables. What
    tsuku fills in by resolving the package with the toolchain while planning (the
    lock file, the toolchain's version) needs that resolution: it is named in
    ``computed_at_download``, not made up; nothing is fetched here."""
    if step.action not in RUNNABLE_ECOSYSTEM_ACTIONS:
        raise RecipeError(f"action {step.action} is not supported yet")
    if not step.executables:
        raise RecipeError(f"{ctx.where(index)}: {step.action} needs executables")
    record = BY_ACTION[step.action]
    params: dict[str, Any] = {
        record.package_key: step.package_name,
        "version": ctx.resolved.tag,
        "executables": list(step.executables),
    }
    direct = record.plan_self_installed.get(step.package_name)
    if direct is not None:
        return [primitive(direct, **params)]
    if record.plan_package_also:
        params[record.plan_package_also] = step.package_name
    planned = primitive(record.plan_action, **params, **record.plan_fixed)
    resolved = tuple(f"params.{name}" for name in sorted(record.plan_resolved))
    return [msgspec.structs.replace(planned, computed_at_download=resolved)]


def _system_packages(step: SystemPackagesStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As tsuku plans it: the step's parameters as written (its family was chosen by
    the platform's ``linux_family``), with the command it runs beside them."""
    argv = install_argv(step.action, step.packages, as_root=False)
    planned = primitive(
        step.action,
        packages=list(step.packages),
        fallback=step.fallback,
        unless_command=step.unless_command,
    )
    return [msgspec.structs.replace(planned, command=shell_words(argv))]


def _require_command(step: RequireCommandStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    return [
        primitive(
            "require_command",
            command=step.command,
            version_flag=step.version_flag,
            version_regex=step.version_regex,
            min_version=step.min_version,
        )
    ]


def _pip_exec(step: PipExecStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A primitive tsuku plans as written: the shape tsuku's Python ecosystem step decomposes
    into, the lock, version and notes given here by the recipe instead of resolved."""
    return [
        primitive(
            step.action,
            package=step.package,
            version=step.version,
            executables=list(step.executables),
            locked_requirements=step.locked_requirements,
            python_version=step.python_version,
            has_native_addons=step.has_native_addons,
        )
    ]


def _cpan_install(step: CpanInstallStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A primitive tsuku plans as written (carton's golden plan: ``distribution`` and
    ``executables``); installing it is refused here (``model.CpanInstallStep``)."""
    return [
        primitive(
            step.action,
            distribution=step.distribution,
            module=step.module,
            executables=list(step.executables),
            perl_version=step.perl_version,
            cpanfile=step.cpanfile,
            mirror=step.mirror,
            mirror_only=step.mirror_only,
            offline=step.offline,
        )
    ]


def _fill(ctx: PlanContext, text: str) -> str:
    """Text as the recipe wrote it, ``{version}``, ``{os}`` and ``{arch}`` filled in
    (tsuku's ``expandParams``)."""
    t = ctx.target
    return expand(text, version=ctx.resolved.version, os=t.os, arch=t.arch)


def _filled(ctx: PlanContext, words: tuple[str, ...] | None) -> list[str] | None:
    """:func:`_fill` over a list; ``None`` (not written) stays unset."""
    return None if words is None else [_fill(ctx, w) for w in words]


def _configure_make(step: ConfigureMakeStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A primitive in tsuku's plan: its parameters as the recipe wrote them, with the
    templates filled in (as for cmake_build, set_rpath and set_env)."""
    return [
        primitive(
            "configure_make",
            source_dir=_fill(ctx, step.source_dir),
            configure_args=_filled(ctx, step.configure_args),
            make_targets=_filled(ctx, step.make_targets),
            executables=list(step.executables),
        )
    ]


def _cmake_build(step: CMakeBuildStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    return [
        primitive(
            "cmake_build",
            source_dir=_fill(ctx, step.source_dir),
            cmake_args=_filled(ctx, step.cmake_args),
            build_type=step.build_type,
            executables=list(step.executables),
        )
    ]


def _set_env(step: SetEnvStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As written (a table, or tsuku's list of ``{name, value}``); ``{install_dir}``
    stays, as in tsuku's plan."""
    written: Any
    if isinstance(step.vars, dict):
        written = {k: _fill(ctx, step.vars[k]) for k in sorted(step.vars)}
    else:
        written = [{"name": e["name"], "value": _fill(ctx, e["value"])} for e in step.vars]
    return [primitive("set_env", vars=written)]


def _set_rpath(step: SetRpathStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As written (tsuku expands ``{libs_dir}`` only when it runs the step)."""
    return [
        primitive(
            "set_rpath",
            binaries=_filled(ctx, step.binaries),
            rpath=None if step.rpath is None else _fill(ctx, step.rpath),
            create_wrapper=step.create_wrapper,
        )
    ]


def _setup_build_env(step: SetupBuildEnvStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    return [primitive("setup_build_env")]


def _install_libraries(step: InstallLibrariesStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A primitive tsuku plans as written (evaluable, deterministic)."""
    return [primitive("install_libraries", patterns=_filled(ctx, step.patterns))]


def _link_dependencies(step: LinkDependenciesStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A primitive tsuku plans as written (the step's ``dependencies`` too: nodejs's
    golden); the version is the installed one when the recipe names none (read when it
    runs, as tsuku does)."""
    return [
        primitive(
            "link_dependencies",
            library=step.library,
            version=step.version,
            dependencies=list(step.dependencies) if step.dependencies else None,
        )
    ]


def _homebrew(step: HomebrewStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """A bottle as tsuku plans it: the blob saved as ``<formula>.tar.gz`` (URL and the
    manifest's digest), unpacked without its ``<formula>/<version>/`` directories, then
    relocated (docs/install.md)."""
    bottle = ctx.bottles.get(index)
    if bottle is None:
        raise RecipeError(ctx.bottle_problem or f"the bottle of {step.formula} was not looked up")
    return [
        _fetched(bottle.url, bottle.work_file, _hex(bottle.sha256), None, algo=False),
        primitive("extract", archive=bottle.work_file, format="tar.gz", strip_dirs=2),
        primitive("homebrew_relocate", formula=bottle.formula),
    ]


def _install_shell_init(step: InstallShellInitStep, index: int, ctx: PlanContext) -> list[PlanStep]:
    """As written; deterministic (tsuku's IsDeterministic) and not evaluable (it is
    not in tsuku's ActionEvaluability table)."""
    params = _params(
        target=step.target,
        source_file=step.source_file,
        source_command=step.source_command,
        shells=list(step.shells),
    )
    return [PlanStep(action=step.action, params=params, evaluable=False, deterministic=True)]


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
    **dict.fromkeys(BY_ACTION, _ecosystem),
    "homebrew": _homebrew,
    **dict.fromkeys(SYSTEM_PACKAGE_ACTIONS, _system_packages),
    "require_command": _require_command,
    "configure_make": _configure_make,
    "cmake_build": _cmake_build,
    "setup_build_env": _setup_build_env,
    "set_env": _set_env,
    "set_rpath": _set_rpath,
    "install_libraries": _install_libraries,
    "link_dependencies": _link_dependencies,
    "install_shell_init": _install_shell_init,
    "pip_exec": _pip_exec,
    "cpan_install": _cpan_install,
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
    if not isinstance(step, GenericStep) and unmodelled_parameters(step):
        names = ", ".join(unmodelled_parameters(step))
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
    sizes: Mapping[str, int] | None = None,
    github_url: str = DEFAULT_GITHUB_URL,
    bottles: Mapping[int, BottleRef] | None = None,
    bottle_problem: str | None = None,
    dependencies: Sequence[Plan] = (),
    host_toolchains: Sequence[HostToolchain] = (),
) -> Plan:
    """The plan for ``recipe`` at ``resolved`` on ``target``. ``install_dir`` fills
    ``{install_dir}`` in a ``run_command`` (where the tool would be installed);
    ``digests`` and ``sizes`` are the release's, by asset name; ``dependencies`` are
    the plans of what it needs installed first (planned by the caller for the same
    platform), nested as tsuku nests them, their gaps (named) and warnings kept;
    ``host_toolchains`` the toolchains its ecosystem steps take from the host's PATH
    (no recipe to nest), a dependency's said too."""
    name = recipe.metadata.name
    ctx = PlanContext(
        recipe_name=name,
        resolved=resolved,
        target=target,
        assets=tuple(assets) if assets is not None else None,
        digests=dict(digests or {}),
        sizes=dict(sizes or {}),
        github_url=github_url,
        install_dir=install_dir,
        bottles=dict(bottles or {}),
        bottle_problem=bottle_problem,
        runtime_dependencies=tuple(recipe.metadata.runtime_dependencies or ()),
        take_first=takes_first_match(recipe),
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
    return Plan(
        format_version=PLAN_FORMAT_VERSION,
        storage_version=PLAN_STORAGE_VERSION,
        tool=name,
        version=resolved.version,
        platform=plan_platform(target),
        deterministic=all(s.deterministic for s in steps),
        dependencies=tuple(nested(d) for d in dependencies),
        steps=tuple(steps),
        verify=_verify(recipe.verify),
        binaries=recipe.metadata.binaries or None,
        recipe_type=recipe.metadata.type if recipe.metadata.type == "library" else None,
        unsupported=(*unsupported, *(u for d in dependencies for u in _of_dependency(d))),
        warnings=(*ctx.warnings, *(w for d in dependencies for w in d.warnings)),
        host_toolchains=tuple(
            dict.fromkeys((*host_toolchains, *(h for d in dependencies for h in d.host_toolchains)))
        ),
    )


def nested(plan: Plan) -> DependencyPlan:
    """``plan`` as a dependency of another, in tsuku's nesting: its fields that a
    nested plan has."""
    return DependencyPlan(**{f: getattr(plan, f) for f in DependencyPlan.__struct_fields__})


def _of_dependency(plan: Plan) -> list[UnsupportedStep]:
    """A dependency's gaps are its dependent's too: said with the dependency's name."""
    return [
        msgspec.structs.replace(u, reason=f"{plan.tool} (a dependency): {u.reason}")
        for u in plan.unsupported
    ]


def planned_dependencies(
    recipe: Recipe, target: Platform, version: str | None, held: Collection[str]
) -> tuple[tuple[str, ...], tuple[HostToolchain, ...]]:
    """What ``recipe``'s plan nests, in tsuku's order, and the toolchains taken from
    the host instead: first the toolchains its ecosystem steps run whose recipes are
    ``held`` (the registry has them: tsuku's actions' install-time dependencies, rust
    before a recipe's own ``zig``), then :func:`dependency_names`, each once."""
    nested_first: list[str] = []
    host: list[HostToolchain] = []
    for chain in toolchains(recipe, target, version):
        if chain.recipe is not None and chain.recipe in held:
            nested_first.append(chain.recipe)
        else:
            host.append(HostToolchain(program=chain.program, recipe=chain.recipe or ""))
    names = dict.fromkeys([*nested_first, *dependency_names(recipe)])
    return tuple(names), tuple(host)


def dependency_names(recipe: Recipe) -> tuple[str, ...]:
    """What ``recipe`` needs installed first, in its order: ``dependencies``, then
    tsuku's ``extra_dependencies``."""
    meta = recipe.metadata
    return (*(meta.dependencies or ()), *(meta.extra_dependencies or ()))


def plan_platform(target: Platform) -> PlanPlatform:
    return PlanPlatform(os=target.os, arch=target.arch, linux_family=target.linux_family)


def _verify(verify: Verify | None) -> PlanVerify | None:
    if verify is None or not verify.command:
        return None
    return PlanVerify(command=verify.command, pattern=verify.pattern, patterns=verify.patterns)
