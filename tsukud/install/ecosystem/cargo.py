"""``cargo_install``: ``cargo install --root <tool dir> --version =<exact> --locked <crate>``.

Cargo builds the crate from source and puts its binaries in ``<root>/bin``. Its home
(index cache, downloads) and target directory live in the scratch directory, so
nothing of the user's ``~/.cargo`` (config, credentials, caches) is read or left
behind. The registry is crates.io itself unless ``discover.crates_index_url`` names
another index (a mirror, a test's fake), which is then passed as ``--index`` in
cargo's own syntax: ``sparse+<url>/`` for a sparse index, a plain URL for a git one.

Sparse indexes are stable since cargo 1.68. An older cargo (Debian bookworm's
``cargo`` package is cargo 1.65) still installs from crates.io (its default source)
and from a git index, which it fetches with the git CLI
(``CARGO_NET_GIT_FETCH_WITH_CLI``: libgit2 speaks only git's smart HTTP protocol,
the CLI also the dumb one that a static mirror serves); it is refused for a sparse
mirror up front with a typed error rather than failing deep in cargo's output.

A rustup install keeps its toolchains in ``RUSTUP_HOME`` (default ``~/.rustup``); with
HOME moved to the scratch directory the ``cargo`` proxy would find none, so that one
directory is passed on.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import tarfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from tsukud.install.ecosystem import toolchain
from tsukud.install.ecosystem.drafting import (
    Drafted,
    NotDrafted,
    listed,
    no_executables,
    package_bytes,
)
from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run
from tsukud.install.ecosystem.staging import Build, Stage
from tsukud.recipe.model import EcosystemStep
from tsukud.registries import crates
from tsukud.registries._common import as_dict
from tsukud.registries.ecosystems import BY_ACTION

if TYPE_CHECKING:
    from tsukud.net.http import Http

BIN_SUBDIR = "bin"
RECORD = BY_ACTION["cargo_install"]
TOOLCHAIN = RECORD.toolchain
CRATES_IO_INDEX = "sparse+https://index.crates.io/"
SPARSE_SINCE = (1, 68)
_VERSION = re.compile(r"cargo (\d+)\.(\d+)")


def index_arg(index_url: str) -> list[str]:
    """``--index <url>`` for a registry other than crates.io, else nothing (cargo's
    own crates.io source); a sparse URL gets the trailing ``/`` cargo requires."""
    url = index_url.strip()
    if url.startswith("sparse+"):
        url = url.rstrip("/") + "/"
    if not url or url in (CRATES_IO_INDEX, CRATES_IO_INDEX.removeprefix("sparse+")):
        return []
    return ["--index", url]


def is_sparse(index_url: str) -> bool:
    """Whether cargo is pointed at a sparse index other than crates.io's."""
    return bool(index_arg(index_url)) and index_url.strip().startswith("sparse+")


def rustup_env(base: Mapping[str, str]) -> dict[str, str]:
    """What a rustup ``cargo`` proxy needs from the daemon's environment."""
    out = {k: base[k] for k in ("RUSTUP_HOME", "RUSTUP_TOOLCHAIN") if base.get(k)}
    if "RUSTUP_HOME" not in out and base.get("HOME"):
        default = Path(base["HOME"]) / ".rustup"
        if default.is_dir():
            out["RUSTUP_HOME"] = str(default)
    return out


def env_for(ctx: RunContext) -> dict[str, str]:
    scratch = ctx.prefix.scratch
    return clean_env(
        ctx.prefix,
        ctx.program,
        ctx.env,
        {
            **rustup_env(ctx.env),
            "CARGO_HOME": str(scratch / "cargo-home"),
            "CARGO_TARGET_DIR": str(scratch / "target"),
            "CARGO_TERM_COLOR": "never",
            "CARGO_TERM_PROGRESS_WHEN": "never",
            "CARGO_NET_GIT_FETCH_WITH_CLI": "true",
        },
        ctx.proxies,
    )


def argv(ctx: RunContext) -> list[str]:
    return [
        str(ctx.program),
        "install",
        "--root",
        str(ctx.prefix.root),
        "--version",
        f"={ctx.version}",
        "--locked",
        *index_arg(ctx.index_url),
        ctx.step.package_name,
    ]


def parse_version(output: str) -> tuple[int, int] | None:
    m = _VERSION.search(output)
    return (int(m.group(1)), int(m.group(2))) if m else None


async def check_sparse(program: Path, env: Mapping[str, str], index_url: str) -> None:
    """A cargo too old for sparse indexes is refused before anything is built."""
    proc = await trio.run_process(
        [str(program), "--version"],
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    version = parse_version(proc.stdout.decode("utf-8", "replace"))
    if proc.returncode != 0 or version is None or version < SPARSE_SINCE:
        found = ".".join(map(str, version)) if version else "an unknown version"
        raise toolchain.ToolchainMissing(
            f"{program} is cargo {found}: installing from the sparse index "
            f"{index_url} needs cargo 1.68 or newer",
            hint="Install a current Rust with rustup (https://rustup.rs); Debian "
            "bookworm's cargo package is too old for sparse registries.",
            program="cargo",
            debian_package=TOOLCHAIN.debian_package,
        )


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    env = env_for(ctx)
    if is_sparse(ctx.index_url):
        await check_sparse(ctx.program, env, ctx.index_url)
    for d in ("cargo-home", "target"):
        os.makedirs(ctx.prefix.scratch / d, exist_ok=True)
    await run(argv(ctx), prefix=ctx.prefix, env=env, what="cargo install")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)


# ---- drafting a recipe: the version's ``bin_names`` from the registry, or the
# published Cargo.toml's ``[[bin]]`` targets and cargo's auto-discovered ones


async def draft(http: Http, base: str, crate: str, requested: str | None) -> Drafted:
    label = f"crates_io package {crate}"
    doc, resolved = await listed(http, base, label, RECORD, crate, requested)
    bins = crates.bin_names(doc, resolved.tag)
    if bins is None:  # the registry has not analysed it: read the published Cargo.toml
        data = await package_bytes(http, crates.download_url(base, crate, resolved.tag))
        bins = crate_bins(data, f"{crate}-{resolved.tag}/")
    if not bins:
        raise no_executables(f"{label} {resolved.tag}", "binary (no [[bin]] target)")
    info = as_dict(doc.get("crate"))
    step = EcosystemStep(action=RECORD.action, package_name=crate, executables=tuple(bins))
    return Drafted(
        step, resolved, info.get("description"), info.get("homepage") or info.get("repository")
    )


def crate_bins(data: bytes, top: str) -> list[str]:
    """The binaries of a ``.crate`` (a gzipped tar, everything under ``top``)."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            members = {m.name.removeprefix(top): m for m in tar.getmembers() if m.isfile()}
            manifest = members.get("Cargo.toml")
            f = tar.extractfile(manifest) if manifest is not None else None
            text = f.read(1024 * 1024).decode("utf-8", "replace") if f is not None else ""
    except (tarfile.TarError, OSError, EOFError):
        raise NotDrafted("the .crate is not a readable gzipped tar file") from None
    return crates.manifest_bins(text, list(members))


# ---- fetching for validation: ``cargo vendor`` here (sources, no build), ``cargo
# install --offline`` from them in the container


def _toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


async def fetch(ctx: RunContext, stage: Stage, http: Http) -> Build:
    crate = ctx.step.package_name
    env = env_for(ctx)
    if is_sparse(ctx.index_url):
        await check_sparse(ctx.program, env, ctx.index_url)
    home = Path(env["CARGO_HOME"])
    os.makedirs(home, exist_ok=True)
    index = index_arg(ctx.index_url)
    if index:  # the configured registry replaces the default one for the fetch
        (home / "config.toml").write_text(
            '[source.crates-io]\nreplace-with = "tsuku-registry"\n\n'
            f"[source.tsuku-registry]\nregistry = {_toml_str(index[1])}\n"
        )
    vendoring = stage.scratch / "fetch"
    (vendoring / "src").mkdir(parents=True, exist_ok=True)
    (vendoring / "src" / "lib.rs").write_text("")
    (vendoring / "Cargo.toml").write_text(
        '[package]\nname = "tsuku-vendor"\nversion = "0.0.0"\nedition = "2018"\n\n'
        f"[dependencies]\n{_toml_str(crate)} = {_toml_str('=' + ctx.version)}\n"
    )
    await run(
        [
            str(ctx.program),
            "vendor",
            "--versioned-dirs",
            "--respect-source-config",  # the configured registry, not the default one
            "--manifest-path",
            str(vendoring / "Cargo.toml"),
            str(stage.work / "vendor"),
        ],
        prefix=ctx.prefix,
        env=env,
        what="cargo vendor",
    )
    work = stage.seen_work
    (stage.work / "cargo-home").mkdir()
    (stage.work / "cargo-home" / "config.toml").write_text(
        '[source.crates-io]\nreplace-with = "vendored"\n\n'
        f'[source.vendored]\ndirectory = "{work}/vendor"\n\n[net]\noffline = true\n'
    )
    script = (
        f"cargo install --offline --root {stage.seen_tool} "
        f"--path {work}/vendor/{crate}-{ctx.version}"
    )
    build_env = {
        "CARGO_HOME": f"{work}/cargo-home",
        "CARGO_TARGET_DIR": f"{work}/target",
        "CARGO_TERM_COLOR": "never",
        "CARGO_TERM_PROGRESS_WHEN": "never",
    }
    return Build(script, BIN_SUBDIR, build_env, needs="cargo")
