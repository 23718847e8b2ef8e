"""``gem_install``: ``gem install <gem> --version <exact> --install-dir <tool dir>``,
then one wrapper script per executable.

The gem and its dependencies land in the tool's directory (``gems/``,
``specifications/``), from the configured source only (``--clear-sources --source``;
``--source`` alone would add rubygems.org to it), without documentation and with an
empty gemrc. RubyGems' own binstubs go to ``gem-bin/``: they find their gem through
``GEM_HOME``/``GEM_PATH``, which the user's shell does not point at the tool's
directory, so ``bin/<exe>`` is a small ``sh`` wrapper that sets both to the tool's
directory (and nothing else) and runs the binstub.
"""

from __future__ import annotations

import os
import shlex

from tsukud.install.ecosystem.prefix import (
    Prefix,
    RunContext,
    clean_env,
    record_executables,
    run,
)

BINSTUB_SUBDIR = "gem-bin"
BIN_SUBDIR = "bin"


def source_url(registry_url: str) -> str:
    """gem wants the source with its trailing ``/``."""
    return registry_url.rstrip("/") + "/"


def argv(ctx: RunContext) -> list[str]:
    root = ctx.prefix.root
    return [
        str(ctx.program),
        "install",
        ctx.step.package_name,
        "--version",
        ctx.version,
        "--install-dir",
        str(root),
        "--bindir",
        str(root / BINSTUB_SUBDIR),
        "--no-document",
        "--no-user-install",
        "--clear-sources",
        "--source",
        source_url(ctx.registry_url),
        "--config-file",
        str(ctx.prefix.scratch / "gemrc"),
    ]


def wrapper(prefix: Prefix, name: str) -> str:
    """``bin/<name>``: the binstub with this tool's gems, whatever the caller's GEM_*."""
    root = shlex.quote(str(prefix.root))
    stub = shlex.quote(str(prefix.root / BINSTUB_SUBDIR / name))
    return (
        "#!/bin/sh\n"
        f"# {name}: written by tsuku for the gem installed in this directory\n"
        f"GEM_HOME={root}\nGEM_PATH={root}\nexport GEM_HOME GEM_PATH\n"
        f'exec {stub} "$@"\n'
    )


def write_wrappers(prefix: Prefix, names: tuple[str, ...]) -> None:
    """A wrapper for each named executable the gem installed a binstub for; a name
    without one is left to ``record_executables`` to report."""
    bin_dir = prefix.root / BIN_SUBDIR
    bin_dir.mkdir(exist_ok=True)
    for name in names:
        if not (prefix.root / BINSTUB_SUBDIR / name).is_file():
            continue
        path = bin_dir / name
        path.write_text(wrapper(prefix, name))
        os.chmod(path, 0o755)  # noqa: S103 - an executable for everyone, like /usr/bin


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    root = str(ctx.prefix.root)
    (ctx.prefix.scratch / "gemrc").write_text("--- {}\n")
    env = clean_env(
        ctx.prefix,
        ctx.program,
        ctx.env,
        {
            "GEM_HOME": root,
            "GEM_PATH": root,
            "GEM_SPEC_CACHE": str(ctx.prefix.scratch / "cache" / "gem-specs"),
        },
        ctx.proxies,
    )
    await run(argv(ctx), prefix=ctx.prefix, env=env, what="gem install")
    write_wrappers(ctx.prefix, ctx.step.executables)
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)
