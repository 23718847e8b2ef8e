"""``pipx_install`` without pipx: a venv per tool (``python3 -m venv``), then that
venv's pip installs ``<package>==<exact version>`` from the configured index.

pip runs ``--isolated`` (no user or site config, no ``PIP_*`` variables) with the
index as its only source, no cache and no version check; the console scripts land in
``venv/bin``, with the venv's python in their first line (so the venv is made where it
stays: see ``prefix.py``).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

from tsukud.errors import TsukuError
from tsukud.install.ecosystem import toolchain
from tsukud.install.ecosystem.drafting import (
    PACKAGE_MAX_BYTES,
    Drafted,
    NotDrafted,
    document,
    listed,
    no_executables,
)
from tsukud.install.ecosystem.prefix import (
    EcosystemInstallFailed,
    RunContext,
    clean_env,
    record_executables,
    run,
)
from tsukud.install.ecosystem.staging import SYSTEM_BIN, Build, Stage, ToolchainUnavailable
from tsukud.recipe import host_platform
from tsukud.recipe.model import EcosystemStep, PipExecStep
from tsukud.registries import pypi
from tsukud.registries._common import as_dict
from tsukud.registries.ecosystems import BY_ACTION

if TYPE_CHECKING:
    from tsukud.net.http import Http

VENV = "venv"
RECORD = BY_ACTION["pipx_install"]
TOOLCHAIN = RECORD.toolchain
BIN_SUBDIR = f"{VENV}/bin"
# pip with nothing of the host's configuration: no user or site config, no ``PIP_*``
# variables, no prompt, no cache, no version check.
PIP_ISOLATED = ("--isolated", "--no-input", "--no-cache-dir", "--disable-pip-version-check")


def pip_argv(ctx: RunContext) -> list[str]:
    return [
        str(ctx.prefix.root / VENV / "bin" / "python"),
        "-m",
        "pip",
        "install",
        *PIP_ISOLATED,
        "--prefer-binary",
        "--index-url",
        pypi.simple_url(ctx.registry_url),
        f"{ctx.step.package_name}=={ctx.version}",
    ]


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    env = clean_env(ctx.prefix, ctx.program, ctx.env, {"PIP_CONFIG_FILE": "/dev/null"}, ctx.proxies)
    await toolchain.check_works(TOOLCHAIN, ctx.program, env)
    venv = str(ctx.prefix.root / VENV)
    await run([str(ctx.program), "-m", "venv", venv], prefix=ctx.prefix, env=env, what="venv")
    await run(pip_argv(ctx), prefix=ctx.prefix, env=env, what="pip install")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)


# ---- pip_exec: tsuku's primitive written in a recipe, a lock of hashed wheels


class LockInvalid(TsukuError):
    """A pip_exec lock this project does not install: not only hashed ``==`` pins, or a
    pin whose hashes name only a source package (its build would run its code here)."""

    code = "locked_requirements_invalid"


class LockHashMismatch(TsukuError):
    """A pinned hash that no file the index lists for that release has."""

    code = "locked_hash_mismatch"


def _venv(step: PipExecStep | EcosystemStep) -> str:
    """tsuku's pip_exec venv: ``venvs/<package>`` in the tool's directory."""
    return f"venvs/{pypi.normalize(step.package_name)}"


async def check_lock(
    http: Http, base: str, tool: str, entries: tuple[pypi.LockedRequirement, ...]
) -> None:
    """Before anything is made: each pin's hashes must name a wheel the index lists for
    that exact release. A hash no listed file has is :class:`LockHashMismatch`; one
    naming only a source package is :class:`LockInvalid` (``--only-binary`` keeps pip
    from building it anyway; this says why, before a venv is made)."""
    for entry in entries:
        url = pypi.release_url(base, entry.name, entry.version)
        answer = await http.get(
            url, headers={"accept": "application/json"}, cache=True, accept_status=(404,)
        )
        release = answer.json() if answer.status == 200 else {}
        by_hash = {
            str(as_dict(f.get("digests")).get("sha256") or "").lower(): f
            for f in pypi.release_files(release)
        }
        pinned = [by_hash[h] for h in entry.hashes if h in by_hash]
        if not pinned:
            listed = ", ".join(f"{f['filename']} {h[:12]}" for h, f in by_hash.items() if h)
            raise LockHashMismatch(
                f"{tool}: {entry.name}=={entry.version}: no file of the index has the "
                f"sha256 the recipe pins ({', '.join(h[:12] for h in entry.hashes)}); "
                f"the index lists {listed or 'no file'}",
                hint="The package was re-published or the recipe's lock is wrong; nothing "
                "was installed. The lock must name the files the index serves.",
                tool=tool,
                package=entry.name,
            )
        if not any(f.get("packagetype") == "bdist_wheel" for f in pinned):
            raise LockInvalid(
                f"{tool}: {entry.name}=={entry.version}: the lock pins only a source "
                f"package ({pinned[0]['filename']}), which pip would build by running its "
                "code on this host",
                hint="pip_exec installs wheels only; pin a wheel's sha256. Nothing was installed.",
                tool=tool,
                package=entry.name,
            )


def read_lock(tool: str, step: PipExecStep) -> tuple[pypi.LockedRequirement, ...]:
    try:
        return pypi.parse_lock(step.locked_requirements)
    except pypi.BadLock as bad:
        raise LockInvalid(
            f"{tool}: pip_exec's locked_requirements: {bad}",
            hint="Each line must be name==version with --hash=sha256:<hex> (as "
            "`pip-compile --generate-hashes` writes it), and nothing else; nothing was "
            "installed.",
            tool=tool,
        ) from None


async def install_locked(ctx: RunContext) -> dict[str, dict[str, str]]:
    """tsuku's pip_exec: the lock checked against the index, then a venv of the tool's
    own and ``pip install --require-hashes --no-deps --only-binary :all:`` of exactly
    its pins (the requirements file written from the parsed lock, so no option in the
    recipe's text reaches pip). Only wheels install, so no package's code runs here;
    the step's executables, and nothing else of the venv, are what it links."""
    step = ctx.step
    assert isinstance(step, PipExecStep) and ctx.http is not None
    entries = read_lock(ctx.prefix.tool, step)
    await check_lock(ctx.http, ctx.registry_url, ctx.prefix.tool, entries)
    env = clean_env(ctx.prefix, ctx.program, ctx.env, {"PIP_CONFIG_FILE": "/dev/null"}, ctx.proxies)
    await toolchain.check_works(TOOLCHAIN, ctx.program, env)
    venv = ctx.prefix.root / _venv(step)
    # With Debian's pip wheel the venv holds only what the lock pins (no pip of its
    # own, and seconds of ensurepip saved); without it, the venv's own pip.
    wheel = debian_pip()
    bare = ["--without-pip"] if wheel else []
    await run(
        [str(ctx.program), "-m", "venv", *bare, str(venv)], prefix=ctx.prefix, env=env, what="venv"
    )
    lock = ctx.prefix.scratch / "requirements.txt"
    lock.write_text(pypi.lock_text(entries))
    argv = [
        str(venv / "bin" / "python"),
        *([f"{wheel}/pip"] if wheel else ["-m", "pip"]),
        "install",
        *PIP_ISOLATED,
        "--require-hashes",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--index-url",
        pypi.simple_url(ctx.registry_url),
        "-r",
        str(lock),
    ]
    await run(argv, prefix=ctx.prefix, env=env, what="pip install")
    return record_executables(ctx.prefix, step.executables, f"{_venv(step)}/bin")


# ---- drafting a recipe: the console scripts are in no API, so the wheel this host
# would install is read (never installed), else the source package's pyproject.toml


async def draft(http: Http, base: str, project: str, requested: str | None) -> Drafted:
    label = f"pypi package {project}"
    doc, resolved = await listed(http, base, label, RECORD, project, requested)
    if resolved.tag != pypi.latest(doc):
        url = f"{base.rstrip('/')}/pypi/{pypi.normalize(project)}/{resolved.tag}/json"
        release = await document(http, url, f"{label} {resolved.tag}", base)
    else:
        release = doc
    host = host_platform()
    # Only a wheel this host would install says what gets installed here: a
    # Windows-only wheel's entry points are not the source package's.
    wheels = [w for w in pypi.wheels(release) if pypi.wheel_fits(w["filename"], host.os, host.arch)]
    sdists = pypi.sdists(release)
    if wheels:
        data = (await http.get(wheels[0]["url"], max_bytes=PACKAGE_MAX_BYTES)).body
        scripts = wheel_scripts(data)
    elif sdists:
        data = (await http.get(sdists[0]["url"], max_bytes=PACKAGE_MAX_BYTES)).body
        found = sdist_scripts(data)
        if found is None:
            raise NotDrafted(
                f"{label} {resolved.tag} has no wheel for {host.os}/{host.arch}, and its "
                "source package does not list its console scripts in pyproject.toml: they "
                "cannot be read without building it",
                hint="Write the recipe by hand (pipx_install with its executables).",
            )
        scripts = found
    else:
        raise NotDrafted(
            f"{label} {resolved.tag} has no wheel for {host.os}/{host.arch}: its console "
            "scripts cannot be read without building it",
            hint="Write the recipe by hand (pipx_install with its executables).",
        )
    if not scripts:
        raise no_executables(f"{label} {resolved.tag}", "console script")
    info = as_dict(release.get("info"))
    urls = as_dict(info.get("project_urls"))
    homepage = info.get("home_page") or urls.get("Homepage") or urls.get("Source")
    step = EcosystemStep(action=RECORD.action, package_name=project, executables=tuple(scripts))
    return Drafted(step, resolved, info.get("summary"), homepage)


def wheel_scripts(data: bytes) -> list[str]:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as whl:
            names = [n for n in whl.namelist() if n.endswith(".dist-info/entry_points.txt")]
            if len(names) != 1 or names[0].count("/") != 1:
                return []
            text = whl.read(names[0]).decode("utf-8", "replace")
    except (zipfile.BadZipFile, OSError):
        raise NotDrafted("the wheel is not a readable zip file") from None
    return pypi.console_scripts(text)


def sdist_scripts(data: bytes) -> list[str] | None:
    """``[project.scripts]`` of a source package's top-level pyproject.toml (read as
    text: nothing of it runs); None when it does not list them statically."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            top = [
                m
                for m in tar.getmembers()
                if m.isfile() and m.name.count("/") == 1 and m.name.endswith("/pyproject.toml")
            ]
            f = tar.extractfile(top[0]) if len(top) == 1 else None
            text = f.read(1024 * 1024).decode("utf-8", "replace") if f is not None else ""
    except (tarfile.TarError, OSError, EOFError):
        raise NotDrafted("the source package is not a readable gzipped tar file") from None
    return pypi.pyproject_scripts(text) if text else None


# ---- fetching for validation: wheels for this host only (nothing built), else the
# source package's bytes over HTTP without pip (pip would run its build backend)

PYTHON_WHEELS = Path("/usr/share/python-wheels")


def debian_pip() -> Path | None:
    """Debian's pip wheel (python3-venv's), which runs straight from the zip: no venv
    and no ensurepip for a download, nor for the install in the container."""
    found = sorted(PYTHON_WHEELS.glob("pip-*.whl"))
    return found[-1] if found else None


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    env = clean_env(ctx.prefix, ctx.program, ctx.env, {"PIP_CONFIG_FILE": "/dev/null"}, ctx.proxies)
    pip = debian_pip()
    python = SYSTEM_BIN / "python3"
    if pip is None or not python.is_file():
        raise ToolchainUnavailable(
            "Debian's python3 and its pip wheel (python3-venv) are not in /usr"
        )
    dist = stage.work / "dist"
    dist.mkdir()
    spec = f"{ctx.step.package_name}=={ctx.version}"
    pip_options = list(PIP_ISOLATED)
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
    tool, work = stage.seen_tool, stage.seen_work
    script = (
        f"python3 -m venv --without-pip {tool}/{VENV} && {tool}/{VENV}/bin/python "
        f"{pip}/pip install {' '.join(pip_options)} --no-index --find-links {work}/dist '{spec}'"
    )
    return Build(script, BIN_SUBDIR, {"PIP_CONFIG_FILE": "/dev/null"}, needs="python3")


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
