"""``pipx_install`` without pipx: a venv per tool (``python3 -m venv``), then that
venv's pip installs ``<package>==<exact version>`` from the configured index.

pip runs ``--isolated`` (no user or site config, no ``PIP_*`` variables) with the
index as its only source, no cache and no version check; the console scripts land in
``venv/bin``, with the venv's python in their first line (so the venv is made where it
stays: see ``prefix.py``).
"""

from __future__ import annotations

from tsukud.install.ecosystem import toolchain
from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run
from tsukud.registries import pypi

VENV = "venv"
BIN_SUBDIR = f"{VENV}/bin"


def pip_argv(ctx: RunContext) -> list[str]:
    return [
        str(ctx.prefix.root / VENV / "bin" / "python"),
        "-m",
        "pip",
        "install",
        "--isolated",
        "--no-input",
        "--no-cache-dir",
        "--disable-pip-version-check",
        "--prefer-binary",
        "--index-url",
        pypi.simple_url(ctx.registry_url),
        f"{ctx.step.package_name}=={ctx.version}",
    ]


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    env = clean_env(ctx.prefix, ctx.program, ctx.env, {"PIP_CONFIG_FILE": "/dev/null"}, ctx.proxies)
    await toolchain.check_works(toolchain.PYTHON, ctx.program, env)
    venv = str(ctx.prefix.root / VENV)
    await run([str(ctx.program), "-m", "venv", venv], prefix=ctx.prefix, env=env, what="venv")
    await run(pip_argv(ctx), prefix=ctx.prefix, env=env, what="pip install")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)
