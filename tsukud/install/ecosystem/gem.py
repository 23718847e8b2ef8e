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

import gzip
import io
import os
import shlex
import tarfile
from pathlib import Path
from typing import TYPE_CHECKING

from tsukud.install.ecosystem.drafting import (
    Drafted,
    NotDrafted,
    document,
    listed,
    no_executables,
    package_bytes,
)
from tsukud.install.ecosystem.prefix import (
    Prefix,
    RunContext,
    clean_env,
    record_executables,
    run,
)
from tsukud.install.ecosystem.staging import Build, Stage
from tsukud.recipe.model import EcosystemStep
from tsukud.registries import rubygems
from tsukud.registries._common import as_dict
from tsukud.registries.ecosystems import BY_ACTION

if TYPE_CHECKING:
    from tsukud.net.http import Http

BINSTUB_SUBDIR = "gem-bin"
BIN_SUBDIR = "bin"
RECORD = BY_ACTION["gem_install"]


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


# ---- drafting a recipe: a gem's ``executables`` are in the ``.gem``'s spec (no API
# lists them)


async def draft(http: Http, base: str, gem: str, requested: str | None) -> Drafted:
    label = f"rubygems package {gem}"
    _doc, resolved = await listed(http, base, label, RECORD, gem, requested)
    info = as_dict(await document(http, rubygems.gem_info_url(base, gem), label, base))
    data = await package_bytes(http, rubygems.gem_url(base, gem, resolved.tag))
    executables = rubygems.gemspec_executables(gem_metadata(data))
    if not executables:
        raise no_executables(f"{label} {resolved.tag}", "executable")
    step = EcosystemStep(action=RECORD.action, package_name=gem, executables=tuple(executables))
    homepage = info.get("homepage_uri") or info.get("source_code_uri")
    return Drafted(step, resolved, info.get("info"), homepage)


def gem_metadata(data: bytes) -> str:
    """The YAML spec in a ``.gem`` (a plain tar holding ``metadata.gz``)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            f = tar.extractfile("metadata.gz")
            packed = f.read(16 * 1024 * 1024) if f is not None else b""
        return gzip.decompress(packed).decode("utf-8", "replace")
    except (tarfile.TarError, KeyError, OSError, EOFError):
        raise NotDrafted("the .gem has no readable metadata.gz") from None


# ---- fetching for validation: the ``.gem`` itself over HTTP (RubyGems' own ``gem
# fetch`` needs the legacy specs index that mirrors and the compact-index-only servers
# lack); ``gem install --local`` in the container builds its extensions


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    gems = stage.work / "gems"
    gems.mkdir()
    name = ctx.step.package_name
    url = rubygems.gem_url(ctx.registry_url, name, ctx.version)
    file_name = f"{name}-{ctx.version}.gem"
    (gems / file_name).write_bytes(await package_bytes(http, url))
    (stage.work / "gemrc").write_text("--- {}\n")
    tool, work = stage.seen_tool, stage.seen_work
    script = (
        f"cd {work}/gems && gem install --local ./{shlex.quote(file_name)} "
        f"--install-dir {tool} --bindir {tool}/{BINSTUB_SUBDIR} --no-document "
        f"--no-user-install --config-file {work}/gemrc"
    )
    build_env = {"GEM_HOME": tool, "GEM_PATH": tool, "GEM_SPEC_CACHE": f"{work}/cache/gem-specs"}
    seen_as = Prefix(ctx.prefix.tool, Path(tool), Path(work))

    def finish() -> None:
        _container_wrappers(stage, seen_as, ctx.step.executables)

    return Build(script, BIN_SUBDIR, build_env, needs="gem", finish=finish)


def _container_wrappers(stage: Stage, seen_as: Prefix, names: tuple[str, ...]) -> None:
    """The ``bin/`` wrappers the installer writes, naming the container's paths."""
    bin_dir = stage.tool / BIN_SUBDIR
    bin_dir.mkdir(exist_ok=True)
    os.chmod(bin_dir, 0o755)  # noqa: S103 - read by the container's uid 65534
    for name in names:
        if (stage.tool / BINSTUB_SUBDIR / name).is_file():
            path = bin_dir / name
            path.write_text(wrapper(seen_as, name))
            os.chmod(path, 0o755)  # noqa: S103
