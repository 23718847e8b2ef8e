"""Validating an ecosystem recipe: fetched on the host with scripts off, built and
verified in the validation container.

A package's own code (npm's ``preinstall``/``postinstall``, a crate's ``build.rs``, a
gem's ``extconf.rb``, a Python build backend, the tool's ``--version``) is untrusted
until a person said yes to the recipe, so none of it runs on the host here:

* **host, scripts off**: the package and its dependencies are only fetched, into a
  throw-away directory in the system's temporary directory (never under
  ``$TSUKU_HOME``, where the keys and the ledger are): ``npm install
  --ignore-scripts``; ``cargo vendor`` (sources, no build); ``gem fetch`` (the ``.gem``,
  no extension built); ``pip download --only-binary=:all:`` (wheels for this host
  only, nothing built), else the source package's bytes over HTTP without pip (pip
  would run its build backend to read its metadata). Go's ``go install`` compiles
  without running any of the module's code, so it builds here too.
* **container, offline**: the validation image with the host's ``/usr`` (Debian's
  node/npm, cargo/rustc, ruby/gem, python3-venv: system programs, no user data) and
  ``/etc/alternatives`` mounted read-only, the staged tree writable at
  ``/tsuku/tool``, no network, uid 65534, read-only root: ``npm rebuild`` (the install
  scripts), ``cargo install --offline`` from the vendored sources, ``gem install
  --local``, ``pip install --no-index`` into a venv. Then the verify command runs in a
  second container with the tree read-only, as for any recipe (``validate.Prepared``).

What cannot be proven this way (no container runtime, no image, a toolchain that is
not Debian's under ``/usr``) is refused as not validated
(:class:`ValidationUnavailable`), never passed on the host.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from tsukud.errors import SandboxError
from tsukud.install.ecosystem import cargo, gem, golang, npm, pipx, toolchain
from tsukud.install.ecosystem.actions import action_for
from tsukud.install.ecosystem.prefix import (
    EcosystemInstallFailed,
    Prefix,
    RunContext,
    clean_env,
    record_executables,
    run,
)
from tsukud.recipe import Recipe
from tsukud.recipe.model import EcosystemStep
from tsukud.registries import pypi, rubygems
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
SYSTEM_BIN = Path("/usr/bin")
PYTHON_WHEELS = Path("/usr/share/python-wheels")
PACKAGE_MAX_BYTES = 64 * 1024 * 1024  # a source package or .gem fetched as bytes
TOOL = CONTAINER_DIR
WORK = CONTAINER_WORK_DIR


@dataclass(frozen=True)
class Stage:
    """One validation's throw-away directory (outside ``$TSUKU_HOME``): ``tool`` is
    mounted at ``/tsuku/tool``, ``work`` at ``/tsuku/work``; ``scratch`` is the host
    package manager's home and cache, never mounted."""

    root: Path

    @property
    def tool(self) -> Path:
        return self.root / "tool"

    @property
    def work(self) -> Path:
        return self.root / "work"

    @property
    def scratch(self) -> Path:
        return self.root / "scratch"

    def make(self) -> None:
        for d in (self.tool, self.work / "home", self.work / "tmp", self.work / "cache"):
            d.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class Build:
    """What the container runs, offline, to finish the install (None: nothing left)."""

    script: str | None
    bin_subdir: str
    env: Mapping[str, str] = field(default_factory=dict)
    needs: str | None = None  # the program the container takes from the host's /usr


def new_stage() -> Stage:
    """A private directory in the system's temporary directory (0700)."""
    return Stage(Path(tempfile.mkdtemp(prefix="tsuku-validate-")))


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


# ---- the host side: fetch, never run -------------------------------------------------


async def _fetch_npm(ctx: RunContext, stage: Stage) -> Build:
    for name in ("npmrc", "npmrc-global"):
        (stage.scratch / name).write_text("")
    env = clean_env(ctx.prefix, ctx.program, ctx.env, proxies=ctx.proxies)
    await run(
        [*npm.argv(ctx), "--ignore-scripts"],
        prefix=ctx.prefix,
        env=env,
        what="npm install --ignore-scripts",
    )
    for name in ("npmrc", "npmrc-global"):
        (stage.work / name).write_text("")
    script = (
        f"cd {TOOL} && npm rebuild --foreground-scripts --offline --userconfig "
        f"{WORK}/npmrc --globalconfig {WORK}/npmrc-global --cache {WORK}/cache/npm "
        "--no-audit --no-fund --no-update-notifier --loglevel warn"
    )
    return Build(script, npm.BIN_SUBDIR, needs="npm")


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def _fetch_cargo(ctx: RunContext, stage: Stage) -> Build:
    crate = ctx.step.package_name
    env = cargo.env_for(ctx)
    if cargo.is_sparse(ctx.index_url):
        await cargo.check_sparse(ctx.program, env, ctx.index_url)
    home = Path(env["CARGO_HOME"])
    os.makedirs(home, exist_ok=True)
    index = cargo.index_arg(ctx.index_url)
    if index:  # the configured registry replaces crates.io for the fetch
        (home / "config.toml").write_text(
            '[source.crates-io]\nreplace-with = "tsuku-registry"\n\n'
            f"[source.tsuku-registry]\nregistry = {_toml_str(index[1])}\n"
        )
    fetch = stage.scratch / "fetch"
    (fetch / "src").mkdir(parents=True, exist_ok=True)
    (fetch / "src" / "lib.rs").write_text("")
    (fetch / "Cargo.toml").write_text(
        '[package]\nname = "tsuku-vendor"\nversion = "0.0.0"\nedition = "2018"\n\n'
        f"[dependencies]\n{_toml_str(crate)} = {_toml_str('=' + ctx.version)}\n"
    )
    await run(
        [
            str(ctx.program),
            "vendor",
            "--versioned-dirs",
            "--respect-source-config",  # the configured registry, not crates.io
            "--manifest-path",
            str(fetch / "Cargo.toml"),
            str(stage.work / "vendor"),
        ],
        prefix=ctx.prefix,
        env=env,
        what="cargo vendor",
    )
    (stage.work / "cargo-home").mkdir()
    (stage.work / "cargo-home" / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "vendored"\n\n'
        f'[source.vendored]\ndirectory = "{WORK}/vendor"\n\n[net]\noffline = true\n'
    )
    script = f"cargo install --offline --root {TOOL} --path {WORK}/vendor/{crate}-{ctx.version}"
    build_env = {
        "CARGO_HOME": f"{WORK}/cargo-home",
        "CARGO_TARGET_DIR": f"{WORK}/target",
        "CARGO_TERM_COLOR": "never",
        "CARGO_TERM_PROGRESS_WHEN": "never",
    }
    return Build(script, cargo.BIN_SUBDIR, build_env, needs="cargo")


async def _fetch_gem(ctx: RunContext, stage: Stage, http: Http) -> Build:
    """The ``.gem`` itself over HTTP (RubyGems' own ``gem fetch`` needs the legacy
    specs index that mirrors and the compact-index-only servers lack); no extension is
    built here."""
    gems = stage.work / "gems"
    gems.mkdir()
    name = ctx.step.package_name
    url = rubygems.gem_url(ctx.registry_url, name, ctx.version)
    file_name = f"{name}-{ctx.version}.gem"
    data = (await http.get(url, max_bytes=PACKAGE_MAX_BYTES)).body
    (gems / file_name).write_bytes(data)
    (stage.work / "gemrc").write_text("--- {}\n")
    script = (
        f"cd {WORK}/gems && gem install --local ./{shlex.quote(file_name)} "
        f"--install-dir {TOOL} --bindir {TOOL}/{gem.BINSTUB_SUBDIR} --no-document "
        f"--no-user-install --config-file {WORK}/gemrc"
    )
    build_env = {"GEM_HOME": TOOL, "GEM_PATH": TOOL, "GEM_SPEC_CACHE": f"{WORK}/cache/gem-specs"}
    return Build(script, gem.BIN_SUBDIR, build_env, needs="gem")


def debian_pip() -> Path | None:
    """Debian's pip wheel (python3-venv's), which runs straight from the zip: no venv
    and no ensurepip for a download, nor for the install in the container."""
    found = sorted(PYTHON_WHEELS.glob("pip-*.whl"))
    return found[-1] if found else None


async def _fetch_pipx(ctx: RunContext, stage: Stage, http: Http) -> Build:
    env = clean_env(ctx.prefix, ctx.program, ctx.env, {"PIP_CONFIG_FILE": "/dev/null"}, ctx.proxies)
    pip = debian_pip()
    python = SYSTEM_BIN / "python3"
    if pip is None or not python.is_file():
        raise unavailable("Debian's python3 and its pip wheel (python3-venv) are not in /usr")
    dist = stage.work / "dist"
    dist.mkdir()
    spec = f"{ctx.step.package_name}=={ctx.version}"
    pip_options = [
        "--isolated",
        "--no-input",
        "--no-cache-dir",
        "--disable-pip-version-check",
    ]
    try:  # wheels the container's python can install, dependencies included; none built
        await run(
            [
                str(python),
                f"{pip}/pip",
                "download",
                *pip_options,
                "--only-binary=:all:",
                "--dest",
                str(dist),
                "--index-url",
                pypi.simple_url(ctx.registry_url),
                spec,
            ],
            prefix=ctx.prefix,
            env=env,
            what="pip download",
        )
    except EcosystemInstallFailed:  # no wheel for this host: the source package's bytes
        for f in dist.iterdir():
            f.unlink()
        await _download_sdist(http, ctx, dist)
    script = (
        f"python3 -m venv --without-pip {TOOL}/{pipx.VENV} && {TOOL}/{pipx.VENV}/bin/python "
        f"{pip}/pip install {' '.join(pip_options)} --no-index --find-links {WORK}/dist '{spec}'"
    )
    return Build(script, pipx.BIN_SUBDIR, {"PIP_CONFIG_FILE": "/dev/null"}, needs="python3")


async def _download_sdist(http: Http, ctx: RunContext, dist: Path) -> None:
    """The release's source package, by its listed sha256 (pip would build it to read
    its metadata; here it is only bytes)."""
    project = ctx.step.package_name
    url = f"{ctx.registry_url.rstrip('/')}/pypi/{pypi.normalize(project)}/{ctx.version}/json"
    doc = (await http.get(url, headers={"accept": "application/json"}, cache=True)).json()
    files = doc.get("urls") if isinstance(doc, dict) else None
    sdists = [
        f
        for f in files or []
        if isinstance(f, dict) and f.get("packagetype") == "sdist" and not f.get("yanked")
    ]
    if not sdists:
        raise EcosystemInstallFailed(
            f"{project} {ctx.version} has neither a wheel for this platform nor a source package",
            hint="Nothing was written.",
            tool=ctx.prefix.tool,
        )
    entry = sdists[0]
    name = str(entry.get("filename") or "")
    if "/" in name or not name or name.startswith("."):
        raise EcosystemInstallFailed(f"{project}: a source package named {name!r}")
    data = (await http.get(str(entry["url"]), max_bytes=PACKAGE_MAX_BYTES)).body
    want = (entry.get("digests") or {}).get("sha256")
    if not want or hashlib.sha256(data).hexdigest() != want:
        raise EcosystemInstallFailed(
            f"{project} {ctx.version}: {name} does not match its listed sha256",
            hint="Nothing was written.",
            tool=ctx.prefix.tool,
        )
    (dist / name).write_bytes(data)


async def _fetch_go(ctx: RunContext, stage: Stage) -> Build:
    # go compiles without running the module's code (no build scripts), so it builds
    # here; only the verify command runs the result, in the container.
    await golang.install(ctx)
    return Build(None, golang.BIN_SUBDIR)


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    """Fetch ``ctx``'s package into ``stage`` with its scripts off; what is left to
    run in the container."""
    if ctx.step.action == "npm_install":
        return await _fetch_npm(ctx, stage)
    if ctx.step.action == "cargo_install":
        return await _fetch_cargo(ctx, stage)
    if ctx.step.action == "gem_install":
        return await _fetch_gem(ctx, stage, http)
    if ctx.step.action == "pipx_install":
        return await _fetch_pipx(ctx, stage, http)
    return await _fetch_go(ctx, stage)


def _gem_wrappers(stage: Stage, tool: str, names: tuple[str, ...]) -> None:
    """The ``bin/`` wrappers the installer writes, naming the container's paths."""
    seen_as = Prefix(tool, Path(TOOL), Path(WORK))
    bin_dir = stage.tool / gem.BIN_SUBDIR
    bin_dir.mkdir(exist_ok=True)
    os.chmod(bin_dir, 0o755)  # noqa: S103 - read by the container's uid 65534
    for name in names:
        if (stage.tool / gem.BINSTUB_SUBDIR / name).is_file():
            path = bin_dir / name
            path.write_text(gem.wrapper(seen_as, name))
            os.chmod(path, 0o755)  # noqa: S103


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
        try:
            build = await fetch(ctx, stage, http)
        except EcosystemInstallFailed as exc:
            return failed("fetch", exc.message, exc.hint)
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
            if step.action == "gem_install":
                _gem_wrappers(stage, tool, step.executables)
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
