"""Checking an installed tool: its verify commands, run on the host, and the integrity
of its binaries (links and recorded sha256). Used when an install finishes and by
``tsukuctl verify``.

A verify command comes from a recipe (possibly a model's), so on the host it is never
handed to a shell: it is split into an argv (``shlex``) and its program is looked up
with the tool's own binary directories first on PATH, so ``age --version`` runs the age
just installed, not one elsewhere, and no ``;``, ``|``, ``$(...)`` or redirection means
anything."""

from __future__ import annotations

import hashlib
import os
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from tsukud.install import layout
from tsukud.install.assemble import resolve_inside
from tsukud.recipe import VerifyCheck, VerifyFailed, check_verify_output

VERIFY_TIMEOUT_S = 60.0
MAX_OUTPUT = 4000

#: Which certificates to trust. A machine behind a TLS-inspecting proxy (a company's)
#: names its CA bundle in these; a package manager that does not see them refuses every
#: registry ("self-signed certificate in certificate chain") while tsukud's own requests,
#: which do, succeed. They name files, never credentials.
TRUST_VARIABLES = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "REQUESTS_CA_BUNDLE",
    "PIP_CERT",
    "CURL_CA_BUNDLE",
    "CARGO_HTTP_CAINFO",
    "GIT_SSL_CAINFO",
)

# What a verify command (and a package manager, ``ecosystem/prefix.clean_env``) sees of
# the daemon's environment: enough to run, and nothing else. API keys and tokens in the
# daemon's environment never reach a downloaded binary.
_VERIFY_ENV_KEYS = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TERM",
    "TZ",
    *TRUST_VARIABLES,
)


def verify_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: env[k] for k in _VERIFY_ENV_KEYS if k in env}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1024 * 1024):
            h.update(chunk)
    return h.hexdigest()


async def run_check(
    check: VerifyCheck, cwd: Path, path_dirs: list[Path], env: dict[str, str]
) -> tuple[int, str]:
    """Run a verify command as an argv (no shell) with ``path_dirs`` first on PATH;
    returns the exit status and the combined output (trimmed, capped). A program that
    is not found exits 127, as a shell would report it."""
    run_env = dict(env)
    run_env["PATH"] = os.pathsep.join(
        [*(str(p) for p in path_dirs), env.get("PATH", "/usr/bin:/bin")]
    )
    argv = verify_argv(check.command)
    program = shutil.which(argv[0], path=run_env["PATH"]) if "/" not in argv[0] else argv[0]
    if program is None:
        return 127, f"{argv[0]}: command not found"
    with trio.move_on_after(VERIFY_TIMEOUT_S) as scope:
        try:
            proc = await trio.run_process(
                [program, *argv[1:]],
                cwd=str(cwd),
                env=run_env,
                stdin=subprocess.DEVNULL,
                capture_stdout=True,
                stderr=subprocess.STDOUT,
                check=False,
            )
        except OSError as exc:  # not executable, wrong format: what a shell says, 126
            return 126, f"{argv[0]}: {exc.strerror or exc}"
    if scope.cancelled_caught:
        raise VerifyFailed(
            f"verify command `{check.command}` did not finish within {VERIFY_TIMEOUT_S:.0f} s",
            command=check.command,
        )
    out = proc.stdout.decode("utf-8", "replace").strip()
    if len(out) > MAX_OUTPUT:
        out = out[:MAX_OUTPUT] + "…"
    return proc.returncode, out


def verify_argv(command: str) -> list[str]:
    """``command`` split the way a shell would quote it, but never run by one."""
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise VerifyFailed(
            f"verify command `{command}` cannot be split into arguments: {exc}",
            command=command,
        ) from None
    if not argv:
        raise VerifyFailed("the verify command is empty", command=command)
    return argv


def path_dirs(install_dir: Path, binaries: Mapping[str, Any]) -> list[Path]:
    """The directories of a tool's binaries, then its ``bin/``: what PATH starts with."""
    dirs: list[Path] = []
    for info in binaries.values():
        d = (install_dir / info["path"]).parent
        if d not in dirs:
            dirs.append(d)
    if (install_dir / "bin") not in dirs:
        dirs.append(install_dir / "bin")
    return dirs


async def run_checks(
    checks: list[VerifyCheck], install_dir: Path, binaries: Mapping[str, Any], env: dict[str, str]
) -> str:
    """Run every check in ``install_dir`` (:class:`VerifyFailed` at the first that
    fails); the first one's output."""
    first_output = ""
    dirs = path_dirs(install_dir, binaries)
    for i, check in enumerate(checks):
        code, out = await run_check(check, install_dir, dirs, env)
        check_verify_output(check, code, out)
        if i == 0:
            first_output = out
    return first_output


def integrity_problems(
    home: Path, install_dir: Path, binaries: Mapping[str, Any], *, linked: bool = True
) -> list[str]:
    """Links (unless the tool is not ``linked``: a hidden toolchain) and recorded sha256
    of an installed tool's binaries, and of the command a wrapper runs (``wraps``),
    re-checked."""
    problems: list[str] = []
    if not install_dir.is_dir():
        return [f"{install_dir} is missing"]
    for bin_name, info in sorted(binaries.items()):
        path = install_dir / info["path"]
        link = layout.bin_dir(home) / bin_name
        if linked and (not link.is_symlink() or Path(os.readlink(link)) != path):
            problems.append(f"{link} does not point to {path}")
        wraps = info.get("wraps")
        for rel, recorded in [(info["path"], info.get("sha256"))] + (
            [(wraps["path"], wraps.get("sha256"))] if isinstance(wraps, dict) else []
        ):
            problems += _changed(install_dir, str(rel), recorded)
    return problems


def _changed(install_dir: Path, rel: str, recorded: Any) -> list[str]:
    """What is wrong with the file at ``rel`` against its ``recorded`` sha256."""
    path = install_dir / rel
    real = resolve_inside(install_dir, rel)
    if real is None:
        return [f"{path} is missing"]
    actual = sha256_file(real)
    if actual != recorded:
        return [f"{path} changed since install: sha256 {actual}, recorded {recorded}"]
    return []
