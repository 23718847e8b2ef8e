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

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

import trio

from tsukud.install.ecosystem import toolchain
from tsukud.install.ecosystem.prefix import RunContext, clean_env, record_executables, run

BIN_SUBDIR = "bin"
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
            debian_package=toolchain.CARGO.debian_package,
        )


async def install(ctx: RunContext) -> dict[str, dict[str, str]]:
    env = env_for(ctx)
    if is_sparse(ctx.index_url):
        await check_sparse(ctx.program, env, ctx.index_url)
    for d in ("cargo-home", "target"):
        os.makedirs(ctx.prefix.scratch / d, exist_ok=True)
    await run(argv(ctx), prefix=ctx.prefix, env=env, what="cargo install")
    return record_executables(ctx.prefix, ctx.step.executables, BIN_SUBDIR)
