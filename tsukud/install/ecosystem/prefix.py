"""The tool's own directory for an ecosystem install, and running its package manager.

The package manager installs straight into ``tools/<name>-<version>`` (not a staging
directory renamed later): a venv's scripts and a gem's wrappers carry absolute paths to
where they were made, so the tree must be made where it will stay. The installer's
transaction claims that directory first (moving a same-version copy aside) and deletes
it on failure; a crash leaves a directory the ledger does not know, which start-up's
``layout.reconcile`` deletes. Removal is the installer's, as for any tool: the
directory is discarded and the ``bin/`` links into it unlinked.

The package manager runs with a clean environment: the toolchain's directory and the
system's on PATH, ``HOME``, caches and config files in a throw-away scratch directory,
and nothing else of the daemon's environment, so no API key or token reaches a
package's install script, and no user config (an rc file's registry, ``PIP_*``)
changes where packages come from; with a :class:`Confinement` each command runs as
``confine.py`` says (as nobody, seeing only the tool's directory of ``$TSUKU_HOME``).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import trio

from tsukud.errors import TsukuError
from tsukud.install.assemble import files, resolve_inside
from tsukud.install.checks import TRUST_VARIABLES, sha256_file
from tsukud.recipe import EcosystemStep, PipExecStep
from tsukud.secrets import redact

if TYPE_CHECKING:
    from tsukud.net.http import Http

RUN_TIMEOUT_S = 600.0
OUTPUT_TAIL = 3000
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


class EcosystemInstallFailed(TsukuError):
    code = "ecosystem_install_failed"


class Confinement(Protocol):
    """How a command runs confined (``confine.Confined``)."""

    async def command(self, prefix: Prefix, argv: Sequence[str]) -> list[str]: ...


@dataclass(frozen=True)
class Prefix:
    """Where one ecosystem install happens.

    ``root`` is the tool's directory (it stays); ``scratch`` is the package manager's
    HOME, cache and config, in the system's temporary directory (never under
    ``$TSUKU_HOME``), deleted after the install."""

    tool: str
    root: Path
    scratch: Path
    # Confinement (``confine.py``): each command's argv wrapped to run as nobody in a
    # mount namespace that shows only this tool's directory of $TSUKU_HOME.
    confined: Confinement | None = None

    @property
    def home(self) -> Path:
        return self.scratch / "home"

    def prepare(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        for d in (self.home, self.scratch / "tmp", self.scratch / "cache"):
            d.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class RunContext:
    """Everything a runner gets: the step, the exact version (the registry's spelling),
    the prefix, the toolchain's program, the registry's base URL and the daemon's
    environment (read for PATH, LANG and the trusted certificates only: see
    ``prefix.clean_env``)."""

    step: EcosystemStep | PipExecStep
    version: str
    prefix: Prefix
    program: Path
    registry_url: str
    env: Mapping[str, str]
    # A second URL some registries need (a package index beside the registry's API).
    index_url: str = ""
    # The proxy settings in force for the request (``proxy_env``): every package manager
    # reads the same variables, so each reaches its registry the way tsukud does.
    proxies: Mapping[str, str] = field(default_factory=dict)
    # The daemon's HTTP (its URL policy and cache), for a runner that reads the
    # registry itself before its package manager runs (a pip_exec lock's hashes).
    http: Http | None = None


#: The ``net.*`` settings and the variables package managers read them from.
PROXY_VARIABLES = {
    "net.https_proxy": ("https_proxy", "HTTPS_PROXY"),
    "net.http_proxy": ("http_proxy", "HTTP_PROXY"),
    "net.all_proxy": ("all_proxy", "ALL_PROXY"),
    "net.no_proxy": ("no_proxy", "NO_PROXY"),
}


def proxy_env(setting: Callable[[str], str]) -> dict[str, str]:
    """The proxy variables for a package manager, from the ``net.*`` settings read
    through ``setting`` (the request's configuration: flag > caller > daemon > file)."""
    env: dict[str, str] = {}
    for key, names in PROXY_VARIABLES.items():
        value = setting(key)
        if value:
            env.update(dict.fromkeys(names, value))
    return env


def clean_env(
    prefix: Prefix,
    program: Path,
    base: Mapping[str, str],
    extra: Mapping[str, str] = {},
    proxies: Mapping[str, str] = {},
) -> dict[str, str]:
    """The package manager's whole environment: its own directory first on PATH (it
    may need the interpreter beside it), then the daemon's PATH; HOME and TMPDIR in the
    scratch directory; the certificates the daemon trusts (``TRUST_VARIABLES``); the
    request's proxy variables; ``extra`` (the runner's settings) last."""
    path = os.pathsep.join(
        dict.fromkeys([str(program.parent), *(base.get("PATH") or SYSTEM_PATH).split(":")])
    )
    env = {
        "PATH": path,
        "HOME": str(prefix.home),
        "TMPDIR": str(prefix.scratch / "tmp"),
        "LANG": base.get("LANG") or "C.UTF-8",
        "NO_COLOR": "1",
    }
    env.update({name: base[name] for name in TRUST_VARIABLES if base.get(name)})
    env.update(proxies)
    env.update(extra)
    return env


async def run(
    argv: Sequence[str],
    *,
    prefix: Prefix,
    env: Mapping[str, str],
    what: str,
    timeout_s: float = RUN_TIMEOUT_S,
    cwd: Path | None = None,
) -> str:
    """Run one package-manager command in the tool's directory (or ``cwd``); its
    combined output, or :class:`EcosystemInstallFailed` with the output's tail
    (redacted)."""
    command = list(argv)
    if prefix.confined is not None:
        command = await prefix.confined.command(prefix, argv)
    with trio.move_on_after(timeout_s) as scope:
        try:
            proc = await trio.run_process(
                command,
                cwd=str(cwd or prefix.root),
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                stderr=subprocess.STDOUT,
                check=False,
            )
        except OSError as exc:
            raise EcosystemInstallFailed(
                f"{prefix.tool}: cannot run {argv[0]}: {exc.strerror or exc}",
                tool=prefix.tool,
            ) from None
    if scope.cancelled_caught:
        raise EcosystemInstallFailed(
            f"{prefix.tool}: {what} did not finish within {timeout_s:.0f} s", tool=prefix.tool
        )
    out = proc.stdout.decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        tail = out[-OUTPUT_TAIL:]
        raise EcosystemInstallFailed(
            f"{prefix.tool}: {what} failed (exit {proc.returncode}):\n{redact(tail)}",
            tool=prefix.tool,
            exit_code=proc.returncode,
        )
    return out


def record_executables(
    prefix: Prefix, names: Sequence[str], bin_subdir: str
) -> dict[str, dict[str, str]]:
    """``{name: {path, sha256}}`` for each named executable in ``root/bin_subdir``, what
    the installer links into ``bin/`` and ``verify`` re-checks. One that is missing,
    not executable or leads outside the tool's directory fails the install, listing
    what the package did install there."""
    out: dict[str, dict[str, str]] = {}
    missing: list[str] = []
    for name in names:
        rel = f"{bin_subdir}/{name}"
        real = resolve_inside(prefix.root, rel)
        if real is None or not os.access(real, os.X_OK):
            missing.append(name)
            continue
        out[name] = {"path": rel, "sha256": sha256_file(real)}
    if missing:
        where = prefix.root / bin_subdir
        present = sorted(p.name for p in where.iterdir()) if where.is_dir() else []
        _all, executable = files(prefix.root) if not present else ([], [])
        found = ", ".join(present or executable[:20]) or "nothing"
        raise EcosystemInstallFailed(
            f"{prefix.tool}: the package installed no executable {', '.join(missing)} in "
            f"{bin_subdir}/ (found: {found})",
            hint="The recipe's executables must name the commands the package installs; "
            "nothing was installed.",
            tool=prefix.tool,
            missing=missing,
        )
    return out
